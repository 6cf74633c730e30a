#!/usr/bin/env bash
# Install the external MIP solvers the `ilp` back-ends can use: CBC and GLPK.
#
# Idempotent: does nothing when `cbc` and `glpsol` are already on PATH. Debian/Ubuntu
# (apt-get) only; elsewhere it says what to install and exits 0, because both solvers are
# optional (HiGHS, the default, comes from PyPI and needs nothing from here).
# Usage: solvers/install.sh            (as root, or with sudo available)
set -euo pipefail

need=()
command -v cbc >/dev/null 2>&1 || need+=(coinor-cbc)
command -v glpsol >/dev/null 2>&1 || need+=(glpk-utils)
if [ ${#need[@]} -eq 0 ]; then
    echo "solvers/install.sh: cbc and glpsol already installed" >&2
    exit 0
fi

if ! command -v apt-get >/dev/null 2>&1; then
    echo "solvers/install.sh: no apt-get here; install ${need[*]} with your package manager" >&2
    exit 0
fi

sudo=()
if [ "$(id -u)" -ne 0 ]; then
    if command -v sudo >/dev/null 2>&1; then sudo=(sudo); else
        echo "solvers/install.sh: need root (or sudo) to install ${need[*]}" >&2
        exit 1
    fi
fi

export DEBIAN_FRONTEND=noninteractive
"${sudo[@]}" apt-get update -qq
"${sudo[@]}" apt-get install -y -qq --no-install-recommends "${need[@]}" >/dev/null
command -v cbc >/dev/null && command -v glpsol >/dev/null
echo "solvers/install.sh: installed ${need[*]}" >&2
