"""Rendering for people: terminal (rich) and HTML. Only this layer and the CLI import rich."""
