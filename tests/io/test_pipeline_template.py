"""The pipeline script's template (`planner/io/pipeline_step.py-tpl`): one text, four scripts.

A region holds a plan without replicas' lines and a hybrid plan's (`#<name>`, `#<hybrid>`,
`#</name>`), or a plan without recomputing stages' lines and a plan with some's (`#<name>`,
`#<recompute>`, `#</name>`); each script keeps one side of each, and a region written wrong
is refused rather than leaving a marker (or the other side's lines) in a script a user runs.
"""

from __future__ import annotations

import re

import pytest

from planner.io import torch_pipeline_script as script
from planner.io.codegen import GeneratedCodeError

MARKER = re.compile(r"^#</?\w+/?>$", re.MULTILINE)


@pytest.mark.parametrize("hybrid", [False, True])
@pytest.mark.parametrize("recompute", [False, True])
def test_each_script_compiles_and_keeps_no_marker(hybrid: bool, recompute: bool) -> None:
    text = script._script(hybrid, recompute)
    compile(text, "pipeline_step.py", "exec")
    assert not MARKER.search(text)
    assert text.startswith("#!/usr/bin/env python3\n")
    # each side's own lines, and none of the other's
    assert ("init_device_mesh" in text) is hybrid
    assert ("class StageDDP(DistributedDataParallel)" in text) is hybrid
    assert text.count("from torch.distributed.pipelining import __SCHEDULE__") == 1
    assert ("RECOMPUTE = __RECOMPUTE__" in text) is recompute
    assert ("checkpoint(forward, *args, use_reentrant=False, **kwargs)" in text) is recompute
    # the lines of a plan that recomputes are the other's and more, in the same order
    if recompute:
        plain = script._script(hybrid, False).splitlines()
        lines = iter(text.splitlines())
        assert all(line in lines for line in plain)


def test_every_region_has_both_sides() -> None:
    template = script._template()
    regions = script._REGION.findall(template)
    assert len(regions) == template.count("#<hybrid>\n") + template.count("#<recompute>\n")
    assert template.count("#<hybrid>\n") > 10 and template.count("#<recompute>\n") >= 4
    assert len({name for name, _, _, _ in regions}) == len(regions)
    # a side left empty is a point where the hybrid script adds lines; never both empty
    assert all(own or other for _, own, _, other in regions)


@pytest.mark.parametrize("broken", [
    "#<a>\nx = 1\n#</a>\n",  # no `#<hybrid>`: the marker lines would stay
    "#<a>\nx = 1\n#<hybrid>\nx = 2\n#</b>\n",  # closed under another name
    "#<a>\nx = 1\n#<hybrid>\nx = 2\n#</a>\n#<a>\n#<hybrid>\ny = 2\n#</a>\n",  # named twice
])
def test_a_region_written_wrong_is_refused(monkeypatch: pytest.MonkeyPatch,
                                           broken: str) -> None:
    monkeypatch.setattr(script, "_template", lambda: "#!/usr/bin/env python3\n" + broken)
    for hybrid in (False, True):
        with pytest.raises(GeneratedCodeError, match="template has a region"):
            script._script(hybrid, recompute=hybrid)
