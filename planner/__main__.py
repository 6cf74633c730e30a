"""`python -m planner` runs the CLI."""

from .cli import main

main()
