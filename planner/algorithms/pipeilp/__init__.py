r"""pipeilp: the general pipeline split as an integer linear program (Pyomo), with each
device's activation recomputation as a decision.

pipedp (`planner.algorithms.pipedp`) cuts the pipeline units into contiguous stages on a
chain of devices. Here a device may hold units from anywhere in the pipeline order, and a
device may **recompute** its activations: it then keeps only the tensors it receives
and sends (its stages' inputs and outputs, which torch's stage holds until the
micro-batch's backward) for each micro-batch in flight, not its forward outputs, and runs
its forward ops once more during backward (activation checkpointing per stage, as
Megatron's full recomputation and `torch.utils.checkpoint` do). That is what lets a model
fit that otherwise would not.

**Replicated stages.** Under `data_parallel N` it plans one of N identical pipelines over
the first device of each block of N, capped by the least memory of its block, whose every
device holds a replica (`pipeblocks.identical_pipelines`: the replicas' all-reduce is the
simulator's alone, so the solver's proof makes the plan no better than `feasible`, its
period meeting the bound `optimal`; where nothing fits, its E708 and
the E707 before it speak of the plan, in the words and hints pipeblocks gives it,
`pipehints.PlanTerms`, each change checked with the bucket, `blockhints`); under
`data_parallel auto` it plans one pipeline (`hybrid` and `auto` choose replicas).

**What is minimised** is the pipeline's period T (`planner.pipeline.split`), for any
placement: its stages are the maximal runs of consecutive units on one device; every
boundary x between units x - 1 and x whose two units sit on devices a ≠ b carries its
forward tensors a -> b and its backward tensors b -> a (`units.forward_count/bytes`,
`backward_count/bytes`: a tensor that skips a stage is relayed by it), each
`count * latency + bytes / bandwidth` of its directed pair; T is the busiest resource per
micro-batch: each device's compute (plus its forward compute again when it recomputes)
and, by the plan's `contention`, each directed link (`link`), each device's one transfer
channel (`device`), or nothing (`none`).

**The memory model** is the pipeline's (`split.stage_bytes`): a device holds its units'
params, its largest transient, and per stage the activations of each micro-batch in
flight: the stage's forward outputs (kept) and the forward tensors crossing its first
boundary (received). A device that recomputes holds its kept activations once (rebuilt
for one backward pass at a time, its data inputs aside) and only the received ones, those
crossing its stages' last boundaries (sent), and the model's data inputs and outputs in
its stages per micro-batch in flight. In inference every device also holds, for the
other g = M − 1 micro-batches, what its stage receives and sends and the model's outputs
in it (`hybrid.cached_copies`), and the device of the last stage those outputs merged,
e = M copies more (both 0 in training). In training every device holds instead, for each
of the β = M micro-batches, a receive buffer of what its stages receive and of the
gradient of what they send (`hybrid.buffer_copies`; 0 in inference: `hybrid.step_bytes`).

The model (units k with allowed devices A(k); C_kd, F_kd the compute and forward compute
of unit k on d; P_k, K_k, tau_k its params, kept activations and largest transient, and
I_k, O_k the kept bytes of its data inputs and of the model's outputs (`units`);
boundary x's traffic f_x(a, b) (forward tensors sent a -> b) and r_x(a, b) (backward
tensors, sent b -> a, when a is left of x and b right of it), received bytes R_x and
backward (gradient) bytes G_x;
quantities in units of 10^i s and 2^j B):

    minimise  T
    x_kd ∈ {0,1}                 Σ_{d ∈ A(k)} x_kd = 1                         (assign)
    z_xab ≥ x_{x-1,a} + x_{x,b} − 1        a ≠ b: boundary x crosses a -> b    (cross)
    x_{x-1,a} + x_{x,b} ≤ 1                when that crossing has no link      (nolink)
    q_d ≥ Σ_k F_kd x_kd − F̄_d (1 − ρ_d),  ρ_d ∈ {0,1}                        (recompute)
    T ≥ Σ_k C_kd x_kd + q_d                                                    (compute)
    T ≥ Σ_x f_x(a,b) z_xab + r_x(b,a) z_xba          per link a -> b   (`link` transfer)
    T ≥ Σ_x Σ_{a≠d} (f_x(a,d) + r_x(a,d)) z_xad
         + Σ_x Σ_{b≠d} (f_x(d,b) + r_x(d,b)) z_xdb    per device d   (`device` transfer)
    h_d ≥ Σ_k K_k x_kd − K̄_d ρ_d,   h_d ≥ Σ_k I_k x_kd                       (kept)
    v_d ≥ Σ_k O_k x_kd − Ō_d (1 − ρ_d)      its outputs while recomputing   (recompute)
    w_xdb ≥ z_xdb + ρ_d − 1            d sends boundary x while recomputing (recompute)
    t_d ≥ tau_k x_kd                                                          (transient)
    r_d ≥ Σ_k O_k x_kd − Ō_d (1 − x_(n−1)d)   its outputs if it ends the model  (memory)
    Σ_k (P_k + K_k) x_kd + t_d + c Σ_x R_x (Σ_{a≠d} z_xad + Σ_{b≠d} w_xdb) + (c − 1) h_d
        + c v_d + e r_d + g (Σ_x R_x (Σ_{a≠d} z_xad + Σ_{b≠d} z_xdb) + Σ_k O_k x_kd)
        + β Σ_x (R_x Σ_{a≠d} z_xad + G_x Σ_{b≠d} z_xdb)
        ≤ cap_d + big_dc (1 − used_e)                                         (memory)
    used_e ≥ x_ke                                                             (inuse)
    o_ka ≤ o_(k−1)a + x_ka,   x_kb ≤ o_(k−1)a   for consecutive a, b of an order (order)
    x_0d + Σ_x Σ_{a≠d} z_xad ≤ 1           one stage per device (not interleaved) (runs)
    Σ_x Σ_{a≠b} z_xab ≤ M − 1              at most M stages (1F1B only)      (stages)

with F̄_d, K̄_d, Ō_d the sums over the units d may hold. The z need not be integer: every
row holds them from below (the w too). ρ, q, h and w exist only where a count above 1 makes
recomputation worth anything (training), v where d may hold an output, r where it may
also hold the last unit (inference).

**The in-flight count c.** GPipe holds M micro-batches on every stage, inference one: c
does not depend on the placement and the memory rows are `stage_bytes` exactly (only
interchangeable devices are ordered, within their class, which loses nothing). Outside
`interleaved` the model keeps each device to **one stage** (`runs`), as torch's GPipe and
1F1B schedules run one stage per rank. Under 1F1B, stage k of S holds min(S − k, M), so
that S is the number of devices in use and k a device's rank among them by first unit;
the rank is fixed by an order of the devices (`order`: device b holds a unit only after
device a holds an earlier one) and device d of rank r gets one memory row per distinct
count over D = r + 1 .. m devices in use, switched on by `used_e` of the device e of rank
D_min − 1 (the row for D = r + 1 always holds; counts never fall as D grows). Under
`interleaved` the count is Megatron's, by rank, applied to the sum of a device's stages'
activations (the rule takes the largest stage's), and a recomputing device rebuilds all
its stages' at once (the rule: one stage's at a time): the rows over-count, so every plan
they admit fits. So do they with **tied weights**: a copy per holder, where `stage_bytes`
keeps one per device. Either way the model covers only some placements (`info["scope"]`):
its optimum, its bound and its infeasibility hold only among them (`_Orders.proves` is
false). The order is the index order when all devices are alike, else the warm start's
(its devices by first unit, then the unused ones by index).

**Status.** The answer is re-checked exactly (`evaluate`: `split.period_s`, `stage_bytes`
with recomputation only where a device would not fit without it) and the better of it and
the warm start is returned; under a schedule with a fallback (`interleaved`: 1F1B), the
contiguous split planned for it (`warm.recomputing_fallback`, as it runs) where it is
faster still (`info["kept"]`: the model over-counts, and its answer may not fit as it
runs), without the solver's proof, which covers its own answer. `optimal` when the gap to
a valid bound is within `OPTIMAL_GAP` (1e-6): the solver's bound when its model covers
every placement by the exact memory rule, else `pipeline.bound.pipeline_bound`; a solver
that proved such a model optimal within `--gap`, the plan's exact period no more than its
objective, proves objective x (1 - `--gap`) (the solvers measure their gap against the
incumbent). Otherwise `feasible`, with
`info["period_bound_s"]` and `info["period_gap"]`; `fallback` (the warm start) when the
solver is missing, fails or finds nothing. T is the objective here, so the figures are
`period_s` / `period_bound_s` / `period_gap`, not the makespan's `bound_s` / `gap`. The
plan is a placement; `info["recompute"]` names the devices that recompute,
`info["held_bytes"]` what each device holds, and `info["memory_note"]` says it in words
for the report.

**Warm starts.** The best, by exact period, of: `pipedp`'s plan; the best **recomputing
contiguous split** per stage count (`contiguous_splits`: pipedp's chains and cuts, each
stage's device recomputing exactly when that makes it fit, by a bottleneck DP on the
period above); and `Options.warm_start` when given. Their DPs' work is sized to
`--time-limit` as `auto`'s is (`splitdp.cells_for`, `contiguous.cells_for`; at 0 and at
the default 60 s, all of it), and pipedp's E707, whose hints take more of the DP's runs
than its search, is drawn only where pipeilp finds nothing (`warm.WarmSearch`); E709 says
"no contiguous split fits, even recomputing" only where the recomputing DP searched
every split, else what it searched. Its placement is the MIP start, its
period the upper bound on T, and it is the plan returned when the solver does no better,
so that pipeilp never ends without a plan where a recomputing contiguous split fits.
Without one, where the order matters and the devices differ, the order is taken from a
first solve of a relaxation (every device holding one micro-batch, no order): infeasible,
it proves that nothing fits (E708, exit 3; not under `interleaved` or with tied weights,
E709); else its devices by first unit give the order.

**Nothing found.** A proof that nothing fits is E708 (exit 3); a search that ended at its
time limit or covered only some placements without finding one is E709 (exit 6: not a
proof; a longer `--time-limit` or another schedule may find one); a solver that failed is
E711 (exit 4).

**Budget.** HiGHS stops at a number of branch-and-bound nodes that is a function of
`--time-limit` and the model's rows alone (`node_budget`), so where it stops does not
depend on the machine's load, and the clock is a safety cap of 3x the limit plus 1 s (as
CP-SAT's, `exact/budget.py`). Models of more than `BUDGETED_ROWS` rows stop at the limit
itself, and `info["reason"]` says when the clock ended a search: another run may differ.
As `ilp`'s, the model's build and handing it to HiGHS end at the limit plus the
watchdog's grace (`backends.overrun_grace_s`): past it, no solver runs and the warm start
is the answer (`fallback`, `info["reason"]`: "no solver time left in --time-limit ...").

**Modules.** `data` (the units as dense tables, the in-flight count), `check` (`evaluate`,
the exact check), `contiguous` (the recomputing contiguous splits), `orders` (the devices'
orders and classes), `warm` (the warm starts), `model` (the Pyomo model: variables, rows,
seeding, reading), `verdict` (the status, the figures, the diagnostics when nothing is
found) and `solve` (`place`: the steps in order, the solver's budget).
"""

from __future__ import annotations

from .check import Evaluation, evaluate
from .contiguous import MAX_DP_CUTS, contiguous_splits
from .solve import (
    BUDGETED_ROWS,
    NODE_ROWS_PER_S,
    node_budget,
    place,
    recomputing,
    recomputing_candidate,
    recomputing_one_per_device,
    warm_up,
)
from .warm import recomputing_stages

__all__ = ["BUDGETED_ROWS", "MAX_DP_CUTS", "NODE_ROWS_PER_S", "Evaluation", "contiguous_splits",
           "evaluate", "node_budget", "place", "recomputing", "recomputing_candidate",
           "recomputing_one_per_device", "recomputing_stages", "warm_up"]
