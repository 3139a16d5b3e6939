"""The local web view (`active-memory ui`): lessons people can read and steer.

Starlette routes and Jinja2 templates (autoescaped) served by uvicorn on loopback only;
see docs/ui.md.
"""

from __future__ import annotations
