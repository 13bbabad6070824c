"""The OpenAI-compatible server: HTTP routes, the engine loop, metrics and the load test (docs/serving.md)."""
