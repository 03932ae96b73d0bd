"""Readers and generators: prompts, answer extraction, FiD attention reading, LLM backends."""
