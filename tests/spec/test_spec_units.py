"""planner.units: every unit's factor, bit rates, number spellings, formatting round trips."""

from __future__ import annotations

import math

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from planner.spec.load import load_text
from planner.spec.parse import parse
from planner.units import (
    EXAMPLES,
    UNIT_TABLE,
    UNITS,
    format_bytes,
    format_quantity,
    format_seconds,
    parse_number,
    to_base,
)

K, M, G, T, P = 1e3, 1e6, 1e9, 1e12, 1e15
KI, MI, GI, TI = 2.0**10, 2.0**20, 2.0**30, 2.0**40

EXPECTED = {
    # time, in seconds
    "ns": ("time", 1e-9), "us": ("time", 1e-6), "ms": ("time", 1e-3), "s": ("time", 1),
    # size, in bytes: decimal and binary prefixes
    "B": ("size", 1), "KB": ("size", K), "MB": ("size", M), "GB": ("size", G),
    "TB": ("size", T), "KiB": ("size", KI), "MiB": ("size", MI), "GiB": ("size", GI),
    "TiB": ("size", TI),
    # bandwidth, in bytes per second; bit rates are divided by 8
    "B/s": ("bandwidth", 1), "KB/s": ("bandwidth", K), "MB/s": ("bandwidth", M),
    "GB/s": ("bandwidth", G), "TB/s": ("bandwidth", T), "KiB/s": ("bandwidth", KI),
    "MiB/s": ("bandwidth", MI), "GiB/s": ("bandwidth", GI), "TiB/s": ("bandwidth", TI),
    "bps": ("bandwidth", 1 / 8), "Kbps": ("bandwidth", K / 8), "Mbps": ("bandwidth", M / 8),
    "Gbps": ("bandwidth", G / 8), "Tbps": ("bandwidth", T / 8),
    # work, in FLOP; rate, in FLOP per second
    "FLOP": ("work", 1), "KFLOP": ("work", K), "MFLOP": ("work", M), "GFLOP": ("work", G),
    "TFLOP": ("work", T), "PFLOP": ("work", P),
    "FLOPS": ("rate", 1), "KFLOPS": ("rate", K), "MFLOPS": ("rate", M),
    "GFLOPS": ("rate", G), "TFLOPS": ("rate", T), "PFLOPS": ("rate", P),
}


def test_every_unit_has_its_factor() -> None:
    """The unit table is exactly the documented one."""
    assert set(UNIT_TABLE) == set(EXPECTED)
    for unit, (dim, factor) in EXPECTED.items():
        got_dim, got = UNIT_TABLE[unit]
        assert got_dim == dim, unit
        assert got == pytest.approx(factor, rel=1e-15), unit
    assert {u for table in UNITS.values() for u in table} == set(EXPECTED)


def test_bit_rates() -> None:
    """1 Gbps is 125,000,000 B/s; 96 Gbps is 12 GB/s (the example's cpu0 link)."""
    assert to_base(1, "Gbps") == ("bandwidth", 125e6)
    assert to_base(96, "Gbps")[1] == pytest.approx(12e9)
    assert to_base(8, "bps") == ("bandwidth", 1.0)


def test_to_base_and_unknown_units() -> None:
    """Conversion multiplies by the factor; an unknown unit is a KeyError."""
    assert to_base(1.5, "ms") == ("time", pytest.approx(1.5e-3))
    assert to_base(16, "GiB") == ("size", 16 * 2**30)
    with pytest.raises(KeyError):
        to_base(1, "GiBs")


@pytest.mark.parametrize("text, value", [
    ("0", 0.0), ("7", 7.0), ("1_000", 1000.0), ("1_000_000.5", 1000000.5), ("1.5", 1.5),
    ("2e-3", 2e-3), ("2E3", 2000.0), ("1.25e+2", 125.0), ("0.05", 0.05),
])
def test_parse_number(text: str, value: float) -> None:
    """The number spellings the language allows."""
    assert parse_number(text) == value


@pytest.mark.parametrize("unit", sorted(UNIT_TABLE))
def test_the_grammar_accepts_every_unit(unit: str) -> None:
    """Each unit lexes as the unit of a quantity, glued to the number or after a space."""
    for sep in ("", " ", "\t"):
        module = parse(f"graph g {{ op a {{ time 2{sep}{unit} }} }}")
        value = module.items[0].items[0].attrs[0].value  # type: ignore[union-attr]
        assert (value.kind, value.number, value.unit) == ("quantity", "2", unit)


def test_examples_are_in_their_dimension() -> None:
    """The hint examples (`16 GiB`, ...) use a unit of their own dimension."""
    for dim, example in EXAMPLES.items():
        number, unit = example.split()
        assert UNIT_TABLE[unit][0] == dim
        assert parse_number(number) > 0


@pytest.mark.parametrize("value, dim, text", [
    (0, "time", "0 ns"), (1.5e-3, "time", "1.5 ms"), (2, "time", "2 s"),
    (16 * 2**30, "size", "16 GiB"), (1000, "size", "1 KB"), (999, "size", "999 B"),
    (36 * 1024, "size", "36 KiB"),
    (25e9, "bandwidth", "25 GB/s"), (2.4e9, "work", "2.4 GFLOP"),
    (15.7e12, "rate", "15.7 TFLOPS"),
])
def test_format_quantity_examples(value: float, dim: str, text: str) -> None:
    """Short, readable output in the largest unit that reads exactly."""
    assert format_quantity(value, dim) == text


DIMS = sorted(UNITS)
values = st.floats(min_value=1e-15, max_value=1e18, allow_nan=False, allow_infinity=False)


@settings(max_examples=150, deadline=None)
@given(st.sampled_from(DIMS), values)
def test_format_quantity_round_trip(dim: str, value: float) -> None:
    """format_quantity's text converts back to the value within a relative 1e-12."""
    if dim == "size":
        value = float(round(value))
    text = format_quantity(value, dim)
    number, unit = text.split(" ")
    got_dim, back = to_base(parse_number(number), unit)
    assert got_dim == dim
    assert math.isclose(back, value, rel_tol=1e-12, abs_tol=1e-300)


@settings(max_examples=60, deadline=None)
@given(st.floats(min_value=1e-9, max_value=1e6), st.integers(0, 2**44),
       st.floats(min_value=1e3, max_value=1e13))
def test_formatted_quantities_are_valid_spec_text(time_s: float, size: int, bw: float) -> None:
    """What format_quantity writes, the language reads back to the same base values."""
    text = (f"cluster c {{ device d[0..1] {{ memory {format_quantity(size, 'size')} }}\n"
            f"link d0 <-> d1 {{ bandwidth {format_quantity(bw, 'bandwidth')} }} }}\n"
            f"graph g {{ op a {{ time {format_quantity(time_s, 'time')} }} }}")
    spec = load_text(text, "q.plan").spec
    assert spec.graphs["g"].ops[0].time_s == pytest.approx(time_s, rel=1e-12)
    assert spec.clusters["c"].devices[0].memory_bytes == size
    assert spec.clusters["c"].links[0].bandwidth_Bps == pytest.approx(bw, rel=1e-12)


def test_report_formatting() -> None:
    """format_seconds / format_bytes pick a readable unit (reports, not round trips)."""
    assert format_seconds(2.5) == "2.500 s"
    assert format_seconds(1.5e-3) == "1.500 ms"
    assert format_seconds(2e-6) == "2.0 us"
    assert format_seconds(5e-9) == "5 ns"
    # the unit is chosen once rounded (before: `1000.0 us`, `1000 ns`), a time below a
    # nanosecond keeps its digits (before: `0 ns` for a 0.4 ns op), a negative one its unit
    assert format_seconds(999.9999e-6) == "1.000 ms"
    assert format_seconds(0.9999996) == "1.000 s"
    assert format_seconds(9.996e-7) == "1.0 us"
    assert format_seconds(4e-10) == "0.4 ns" and format_seconds(0.0) == "0 ns"
    assert format_seconds(-2e-3) == "-2.000 ms"
    assert format_bytes(3 * 2**30) == "3.00 GiB"
    assert format_bytes(1536) == "1.50 KiB"
    assert format_bytes(12) == "12 B"
