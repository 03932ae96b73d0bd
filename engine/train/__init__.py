"""Training the models the engine needs (query-time code never imports this package)."""
