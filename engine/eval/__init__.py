"""Evaluating paradigms over QA datasets."""
