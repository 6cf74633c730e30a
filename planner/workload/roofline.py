"""Reference device profiles and the roofline time model shared by importers and generators.

An op's time on a profile is

    time = max(FLOPs / peak FLOP rate, bytes moved / memory bandwidth)

with the peak rate of the chosen dtype. No launch overhead is added: the numbers are a
documented lower-bound estimate, not a measurement. Profiles (peak figures from the vendors'
data sheets):

======  ===============  ===============  ==========  =====================================
name    fp32 peak        fp16 peak        memory bw   notes
======  ===============  ===============  ==========  =====================================
v100    15.7 TFLOPS      31.4 TFLOPS      900 GB/s    V100 SXM2; fp16 without tensor cores
a100    19.5 TFLOPS      78 TFLOPS        1555 GB/s   A100 40 GB; fp16 without tensor cores
cpu     1.2 TFLOPS       1.2 TFLOPS       128 GB/s    2-socket Xeon, AVX-512; no fp16 units
======  ===============  ===============  ==========  =====================================

The fp16 figures are the half-precision FMA peaks without tensor cores (tensor-core peaks,
125 and 312 TFLOPS, are reached only by large, well-shaped matrix products).
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Final

#: bytes per element of the floating-point dtypes activations and weights may use
DTYPE_BYTES: Final[dict[str, int]] = {"fp32": 4, "fp16": 2}


@dataclass(frozen=True, slots=True)
class DeviceProfile:
    """A reference device: peak FLOP rate per dtype and memory bandwidth."""

    name: str
    description: str
    peak_flop_rate: dict[str, float]
    memory_Bps: float

    def time_s(self, flops: float, bytes_moved: float, dtype: str = "fp32") -> float:
        """Roofline seconds of an op doing `flops` and moving `bytes_moved` on this device."""
        return max(flops / self.peak_flop_rate[dtype], bytes_moved / self.memory_Bps)

    def summary(self, dtype: str) -> str:
        """One line for spec headers: the figures the times were computed from."""
        peak = self.peak_flop_rate[dtype] / 1e12
        return (f"{self.name} ({self.description}): {peak:g} TFLOPS {dtype}, "
                f"{self.memory_Bps / 1e9:g} GB/s")


PROFILES: Final[dict[str, DeviceProfile]] = {
    "v100": DeviceProfile("v100", "NVIDIA V100 SXM2", {"fp32": 15.7e12, "fp16": 31.4e12}, 900e9),
    "a100": DeviceProfile("a100", "NVIDIA A100 40 GB", {"fp32": 19.5e12, "fp16": 78e12}, 1555e9),
    "cpu": DeviceProfile("cpu", "2-socket Xeon, AVX-512", {"fp32": 1.2e12, "fp16": 1.2e12},
                         128e9),
}


def round_sig(x: float, digits: int = 4) -> float:
    """`x` rounded to `digits` significant digits (estimates do not deserve 17)."""
    if x == 0 or not math.isfinite(x):
        return x
    return round(x, digits - 1 - math.floor(math.log10(abs(x))))
