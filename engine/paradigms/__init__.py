"""Retrieval paradigms: each a module over stages, declared once in the registry."""
