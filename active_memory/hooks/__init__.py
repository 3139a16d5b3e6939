"""Harness entry points: the command hook (`command.py`), and beside it the recall server
and installers. Nothing is imported here: a hook process loads only what it uses."""
