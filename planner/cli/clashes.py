"""Name clashes between what `planner import` reads and its `--cluster` files: E926, where
the spec would say E201 ("defined twice") at the input file's start, with no way out."""

from __future__ import annotations

import os
from pathlib import Path

from ..errors import Diagnostic, Span, UsageError
from ..model import Spec
from ..workload import Imported, render_cluster


def check_clashes(result: Imported, clusters: list[tuple[Path, Spec]],
                   source: str | os.PathLike[str] | None) -> None:
    """E926, at the input file's field, where the file's own cluster or plan (`import json`)
    has the name of a `--cluster` file's cluster or of the plan made for it (was E201 at the
    file's start, "cluster `small4` is defined twice", with no way out)."""
    diags = []
    for path, spec in clusters:
        for cname, cluster in spec.clusters.items():
            pname = f"{result.workload.name}_{cname}"
            leave = (f"or leave out --cluster {path}: the file's cluster is the same, and its "
                     "plan runs on it" if render_cluster(cluster, exact=True) in result.clusters
                     else f"or leave out --cluster {path}")
            for plan in result.plans:
                for word, what, clash in (("cluster", f"cluster `{cname}`", plan.cluster == cname),
                                          ("plan", f"plan `{pname}`", plan.name == pname)):
                    if not clash or plan.origin is None:
                        continue
                    diags.append(Diagnostic(
                        "E926", f"{what} of {source} has the name of the {word} that "
                        f"--cluster {path} adds to the spec", plan.origin(word),
                        (plan.renames.get(word) or f'rename the {word} in {source} '
                         f'("{word}": {{"name": ...}})', leave)))
    if diags:
        raise UsageError(diags)


def two_clusters(cname: str, first: tuple[Path, Span | None, list[str]],
                  second: tuple[Path, Span | None, list[str]]) -> UsageError:
    """E926 for two `--cluster` files that give cluster `cname`, at the second's."""
    how = ("leave out one of them: they give the same cluster" if first[2] == second[2]
           else "rename the cluster in one of them")
    return UsageError(Diagnostic(
        "E926", f"cluster `{cname}` is given by both --cluster {first[0]} and --cluster "
        f"{second[0]}; the spec takes one cluster of each name", second[1], (how,),
        notes=((f"first definition of `{cname}`", first[1]),) if first[1] else ()))
