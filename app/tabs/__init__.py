"""One module per tab; each exposes `build(explorer, ...)`, called inside an open gr.Blocks,
which returns the tab as app.ui composes it (app.tabs.base.Tab)."""
