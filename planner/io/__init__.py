"""Importers and exporters: ONNX, PyTorch, PipeDream, Baechi and the JSON interchange in;
the interchange and placed PyTorch models out. Importers build `planner.workload`'s
intermediate form; the commands over them are `planner.cli.io_commands` and
`planner.cli.export_commands`."""
