"""CLI sub-commands that live in their own modules (registered by `planner.cli`)."""
