"""Corpora and QA datasets: loading files of every supported format, the named corpora."""
