"""One module per tab; each exposes `build(explorer)` inside an open gr.Blocks."""
