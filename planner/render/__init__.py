"""Rendering for people and machines: the terminal (rich), the HTML reports, Perfetto traces,
the JSON report of a simulated plan (`report`), the compare tables (`tables`) and the CI
formats. Only this layer and the CLI import rich; none of it imports typer or exits."""
