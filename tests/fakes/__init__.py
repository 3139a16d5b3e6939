"""Test doubles that speak the real wire formats: fake HTTP servers for the Anthropic and
OpenAI APIs, fake `claude` and `codex` executables, and a guard against stray requests."""
