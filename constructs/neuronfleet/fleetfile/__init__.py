"""The fleet file: its schema and its safe YAML loader (the reference app's input; constructs never read it)."""
