"""Reading and writing files: atomic writes, importers and exporters."""
