"""Searchable indexes over units: BM25 and dense, cached on disk, shared per process."""
