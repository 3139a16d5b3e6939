"""Active Memory: lessons coding agents learn from their own costly runs."""

from __future__ import annotations

__version__ = "0.1.0"
