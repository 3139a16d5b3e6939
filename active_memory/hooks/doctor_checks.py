"""What `hook doctor` reports: one check, and one installed configuration's checks."""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import Any


@dataclass(slots=True)
class Check:
    """One check: its name, whether it passed, what was found, and the fix."""

    name: str
    ok: bool
    detail: str
    fix: str | None = None

    def to_json(self) -> dict[str, Any]:
        """`{"name", "ok", "detail", "fix"?}`."""
        out: dict[str, Any] = {"name": self.name, "ok": self.ok, "detail": self.detail}
        if self.fix:
            out["fix"] = self.fix
        return out


@dataclass(slots=True)
class Installed:
    """One installed hook configuration and its checks."""

    harness: str
    where: str
    path: Path
    checks: list[Check] = field(default_factory=list)
    kind: str = "hooks"  # or "mcp": a registration of the MCP server (hooks/mcp_doctor.py)

    @property
    def ok(self) -> bool:
        """Every check passed."""
        return all(check.ok for check in self.checks)

    def to_json(self) -> dict[str, Any]:
        """`{"harness", "kind", "where", "path", "ok", "checks"}`."""
        return {
            "harness": self.harness,
            "kind": self.kind,
            "where": self.where,
            "path": str(self.path),
            "ok": self.ok,
            "checks": [check.to_json() for check in self.checks],
        }
