"""Pipelines of micro-batches (`objective pipeline`): units, splits, schedules.

- `units`: the units a pipeline splits (a layer's forward and backward ops together), in
  pipeline order, with the prefix tables that cost a stage in O(1);
- `split`: contiguous stages on devices, the split model of time (stage loads) and memory
  (activations held for the micro-batches in flight);
- `splitdp`: the best contiguous splits per stage count (pipedp's DP, which list
  scheduling's memory retry asks too);
- `schedule`: a plan run as M micro-batches under GPipe, 1F1B or interleaved 1F1B, by the
  simulator.
"""
