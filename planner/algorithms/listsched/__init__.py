"""The one list-scheduling core behind m-ETF, m-SCT, HEFT, CPOP, m-TOPO and the baselines.

Small parts, composed by each algorithm (one module each):

- `instance`: `Instance`, a problem as dense Python lists (compute times, per-op input and
  output edges, link latencies, pins, colocation groups, runnable devices), built once.
- `ranks`: static priorities (`upward_rank`, `downward_rank`, `priority_positions`).
- `placer`: `Placer`, the constraints of a partial placement: which devices an op may
  still go to (runnable, pins, its colocation group's device) and whether it fits in
  memory there (`planner.cost.StaticMemoryTracker`, plus reservations for colocation
  groups); `Stuck`, a driver's dead end.
- `room`: `HeldRoom`, the room a retry holds on a device for the ops that must go there
  (pinned, or fitting on no other device: `memory_forced`) and the copies they receive
  (`Placer(reserve_pins=True)`).
- Two drivers that choose (op, device) pairs and start times: `etf` (`etf_schedule`:
  event-driven earliest start time as a ready set, a per-device candidate choice and a
  commit loop; used by m-ETF, m-SCT and to order fixed placements, `fixed`) and
  `insertion` (`insertion_schedule`: ops in priority order, each on the device of
  earliest finish with insertion into idle gaps; used by HEFT and CPOP).
- Policies the drivers plug in: `sct` (m-SCT's favourite-child reservation), `floating`
  (floating colocation members) and `retry` (memory budgets: `memory_passes` runs a
  driver again with tighter budgets when it dead-ends, and falls back to m-TOPO's fill,
  `topo.topo_fill`, so a plan is found whenever m-TOPO finds one).
- `solution`: the `Solution` of a schedule, re-timed (`retime`, `solution`).

Shared rules, documented once:

- **Communication estimates** use contention `none`: an input from another device arrives
  `latency + bytes / bandwidth` after its producer ends (`cost.Costs`). The simulator judges
  every plan under the plan's real contention model.
- **Memory** is checked with static accounting (`cost.StaticMemoryTracker`) under both
  memory models: the static total bounds the liveness peak from above, so a plan that fits
  statically fits under `liveness` too.
- **Colocation**: a group is placed as one unit. When its first op goes to device `d`,
  the static memory of the whole group (params and outputs of the members not yet placed,
  and their largest temp) must fit on `d` and is reserved there; the other members are then
  forced to `d`. A pin on any member pins the group.
- **Floating members** (`floating`): the device of a group is chosen by its first member
  that receives data from outside the group, not by its constants; on Baechi's GNMT graph
  this brings every list scheduler from about 400 ms to about 220 ms.
- **Memory budgets** (`Placer.budget`, `retry`): a retry after a dead end limits the ops
  whose device is still a choice to a budget below the devices' memory, keeping the rest
  for ops forced onto a device; an op over its budget everywhere may use the whole memory.
- **Ties** never depend on hash order: ops by a static priority (an integer position,
  see `priority_positions`), then devices by earliest finish, then smallest device index.
"""

from __future__ import annotations

from .etf import etf_schedule
from .fixed import LastPass, fill_and_order, schedule_fixed
from .insertion import insertion_schedule
from .instance import FOLLOW_SOURCES, Instance, floating_members
from .placer import Placer, Stuck
from .ranks import downward_rank, priority_positions, upward_rank
from .retry import budget_ladder, explain_stuck, liveness_pass, memory_passes
from .run import EtfRun, Reservation
from .sct import reservation
from .solution import retime, solution
from .topo import topo_budgets, topo_fill

__all__ = [
    "FOLLOW_SOURCES", "EtfRun", "Instance", "LastPass", "Placer", "Reservation", "Stuck",
    "budget_ladder", "downward_rank", "etf_schedule", "explain_stuck", "fill_and_order",
    "floating_members", "insertion_schedule", "liveness_pass", "memory_passes",
    "priority_positions", "reservation", "retime", "schedule_fixed", "solution",
    "topo_budgets", "topo_fill", "upward_rank",
]
