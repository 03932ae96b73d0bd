"""Funnel Explorer's Gradio UI: thin callbacks over the engine."""

from __future__ import annotations

from app.ui import build_app, serve

__all__ = ["build_app", "serve"]
