"""Name clashes between what `planner import` reads and its `--cluster` files: E926, where
the spec would say E201 ("defined twice") at the input file's start, with no way out. A
cluster that two `--cluster` files import from a third is one cluster, not a clash
(`shared_import`)."""

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
    given: dict[str, list[Path]] = {}  # a cluster two files import from a third: one
    for path, spec in clusters:
        for cname in spec.clusters:
            given.setdefault(cname, []).append(path)
    for path, spec in clusters:
        for cname, cluster in spec.clusters.items():
            if given[cname][0] != path:
                continue
            pname = f"{result.workload.name}_{cname}"
            options = " and ".join(f"--cluster {p}" for p in given[cname])
            leave = (f"or leave out {options}: the file's cluster is the same, and its "
                     "plan runs on it" if render_cluster(cluster, exact=True) in result.clusters
                     else f"or leave out {options}")
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


def shared_import(first: tuple[Path, Span | None, list[str]],
                  second: tuple[Path, Span | None, list[str]]) -> bool:
    """Whether two `--cluster` files give one cluster because both import the file that
    defines it (its one definition: the spec made imports both, and the language takes a
    file imported twice once), not two clusters of one name; one file given twice is
    not."""
    (one, at, _), (two, there, _) = first, second
    if at is None or there is None or (at.line, at.column) != (there.line, there.column):
        return False
    try:
        return not os.path.samefile(one, two) and os.path.samefile(at.file, there.file)
    except OSError:
        return False


def two_clusters(cname: str, first: tuple[Path, Span | None, list[str]],
                  second: tuple[Path, Span | None, list[str]]) -> UsageError:
    """E926 for two `--cluster` files that give cluster `cname`, at the second's."""
    how = ("leave out one of them: they give the same cluster" if first[2] == second[2]
           else "rename the cluster in one of them")
    return UsageError(Diagnostic(
        "E926", f"cluster `{cname}` is given by both --cluster {first[0]} and --cluster "
        f"{second[0]}; the spec takes one cluster of each name", second[1], (how,),
        notes=((f"first definition of `{cname}`", first[1]),) if first[1] else ()))
