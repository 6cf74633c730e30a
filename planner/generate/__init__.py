"""Analytic op-level graphs of architectures that have no model file at hand.

- `transformer.generate`: a GPT-style decoder stack or an encoder-decoder Transformer;
- `gnmt.generate`: GNMT, stacked LSTMs with attention, unrolled over the sequence.

FLOPs and bytes follow from the dimensions; times use the same roofline and device profiles
as the ONNX importer (`planner.workload.roofline`), and `training=True` adds the same backward
ops (`planner.workload.training`). Each returns a `planner.workload.Imported`.
"""
