"""The command line: `python -m engine ...`."""
