"""The command line: `python -m engine ...`."""

CORPUS_HELP = "wiki | pooled | an added corpus's name | PATH (default %(default)s)"
