"""Funnel stages: each takes the query and the previous stage's candidates."""
