"""Saved runs in DuckDB."""
