"""`hook doctor` runs each installed hook the way its harness would, and asks Gemini CLI's
trust rules whether it would run at all.

**The run.** A hook command is started as its harness starts it: the JSON-configured
harnesses (Claude Code, Codex, Gemini CLI, Copilot CLI) through `/bin/sh -c COMMAND` in
the project folder, with this environment's PATH; the Pi extension and the OpenCode
plugin spawn their command directly with its arguments. The probe sets
`ACTIVE_MEMORY_HOOK_PROBE` to a random token: the hook entry (hooks/command.py,
hooks/session_end.py) then answers `{"active_memory_probe": TOKEN, "entry": …}` at once,
having started its interpreter and imported its entry module, and does nothing else (no
receipt, no queue entry). Anything else (not found, another interpreter's error, no
answer within `PROBE_TIMEOUT`) is the problem the harness would meet, said with what to do.

**Gemini CLI's trust** (read from its 0.61 bundle, `checkPathTrust`): project hooks run
only in a trusted folder. `GEMINI_CLI_TRUST_WORKSPACE=true` trusts every folder and
`=false` (or `GEMINI_RESTRICTED_MODE=true`) none; else, with folder trust on (its
`security.folderTrust.enabled`, read from the user's settings: on unless it says `false`),
the longest rule of `trustedFolders.json` (`GEMINI_CLI_TRUSTED_FOLDERS_PATH`, else
`~/.gemini/trustedFolders.json`) that contains the folder decides (`TRUST_FOLDER`,
`TRUST_PARENT` of its parent, `DO_NOT_TRUST`), and a folder no rule names is not trusted.
Gemini CLI's own `--skip-trust` does not unblock hooks; the variable does.
"""

from __future__ import annotations

import json
import os
import secrets
import subprocess
from collections.abc import Mapping, Sequence
from pathlib import Path

PROBE_ENV = "ACTIVE_MEMORY_HOOK_PROBE"
PROBE_TIMEOUT = 15.0
TRUST_ENV = "GEMINI_CLI_TRUST_WORKSPACE"


def probe(command: str | Sequence[str], cwd: Path, env: Mapping[str, str]) -> tuple[bool, str]:
    """Run one hook command as its harness would; (ok, what happened)."""
    token = secrets.token_hex(8)
    environment = {**env, PROBE_ENV: token}
    argv = ["/bin/sh", "-c", command] if isinstance(command, str) else list(command)
    shown = command if isinstance(command, str) else " ".join(command)
    try:
        done = subprocess.run(
            argv, input=b"{}", capture_output=True, cwd=cwd if cwd.is_dir() else None,
            env=environment, timeout=PROBE_TIMEOUT, check=False,
        )  # fmt: skip
    except FileNotFoundError:
        return False, f"{shown}: not found"
    except (OSError, subprocess.SubprocessError) as exc:
        return False, f"{shown}: {exc}"
    said = done.stdout.decode("utf-8", "replace").strip()
    try:
        answer = json.loads(said) if said else None
    except ValueError:
        answer = None
    if isinstance(answer, dict) and answer.get("active_memory_probe") == token:
        return True, f"runs ({answer.get('entry', 'hook')})"
    error = " ".join(done.stderr.decode("utf-8", "replace").split())[-300:]
    detail = error or said[:200] or "no answer"
    return False, f"{shown}: exit {done.returncode}: {detail}"


def probe_answer(env: Mapping[str, str], entry: str) -> str | None:
    """The hook entry's answer to a probe (None: not a probe): printed instead of work."""
    token = env.get(PROBE_ENV)
    if not token:
        return None
    return json.dumps({"active_memory_probe": token, "entry": entry})


def gemini_trusted(folder: Path, env: Mapping[str, str]) -> tuple[bool, str]:
    """Would Gemini CLI run this folder's project hooks? (trusted, why)."""
    if env.get("GEMINI_RESTRICTED_MODE") == "true" or env.get(TRUST_ENV) == "false":
        return False, f"{TRUST_ENV}=false or GEMINI_RESTRICTED_MODE=true in this environment"
    if env.get(TRUST_ENV) == "true":
        return True, f"{TRUST_ENV}=true in this environment"
    home = Path(env.get("GEMINI_CLI_HOME") or env.get("HOME") or Path.home())
    if not _folder_trust_enabled(home / ".gemini" / "settings.json"):
        return True, "folder trust is off in ~/.gemini/settings.json"
    rules_path = Path(
        env.get("GEMINI_CLI_TRUSTED_FOLDERS_PATH") or home / ".gemini" / "trustedFolders.json"
    )
    try:
        rules = json.loads(rules_path.read_text(encoding="utf-8"))
    except (OSError, ValueError):
        rules = {}
    target = os.path.realpath(folder)
    best, level = -1, None
    for rule, trust in rules.items() if isinstance(rules, dict) else ():
        base = os.path.dirname(rule) if trust == "TRUST_PARENT" else rule
        base = os.path.realpath(base)
        inside = target == base or target.startswith(base.rstrip(os.sep) + os.sep)
        if inside and len(rule) > best:
            best, level = len(rule), trust
    if level in ("TRUST_FOLDER", "TRUST_PARENT"):
        return True, f"{rules_path} trusts it"
    if level == "DO_NOT_TRUST":
        return False, f"{rules_path} says DO_NOT_TRUST"
    return False, f"no rule of {rules_path} trusts {folder}"


def _folder_trust_enabled(settings: Path) -> bool:
    try:
        document = json.loads(settings.read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return True
    security = document.get("security") if isinstance(document, dict) else None
    trust = security.get("folderTrust") if isinstance(security, dict) else None
    return not (isinstance(trust, dict) and trust.get("enabled") is False)
