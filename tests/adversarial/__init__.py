"""Adversarial tests and tools: leak test, fuzz harness, seed corpora (a package, so its conftest does not shadow tests/conftest.py)."""
