"""Shared by the input hardening tests: the CLI run in-process in a folder (the one helper
of `runtime_support`, which the runtime tests share too)."""

from __future__ import annotations

from .runtime_support import invoke, runner

__all__ = ["invoke", "runner"]
