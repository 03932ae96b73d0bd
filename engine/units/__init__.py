"""Retrieval units built from a corpus: chunking, the link graph, clustering and grouping."""
