"""Lesson quality: what keeps a bad card out of the store (docs/quality.md)."""
