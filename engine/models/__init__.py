"""Model loading: packaged offline resources, aliases, GGUF conversion, trained artifacts."""
