"""The credential screen's lean form (issue 27 item 5): the generated table is current,
and the gate never says no for a text the screen finds a secret in."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from active_memory import credential_gate
from active_memory.credentials import find_secrets
from active_memory.hooks.hook_log import log_line

CORPUS = json.loads(
    (Path(__file__).parent / "fixtures" / "secrets" / "corpus.json").read_text(encoding="utf-8")
)
AWS = "AKIAIOSFODNN7EXAMPLE"


def test_the_precompiled_table_is_current() -> None:
    assert credential_gate.main([]) == 0, "run python -m active_memory.credential_gate --write"


@pytest.mark.parametrize("text", [e["text"] for e in CORPUS["secrets"]])
def test_the_gate_lets_every_real_format_through(text: str) -> None:
    assert find_secrets(text)
    assert credential_gate.may_hold_secret(text)
    assert credential_gate.mask(text) != text


def test_the_gate_is_sound_on_the_look_alikes_it_passes_over() -> None:
    for text in CORPUS["lookalikes"]:
        if not credential_gate.may_hold_secret(text):
            assert not find_secrets(text)


def test_mask_value_masks_keys_and_values_and_keeps_clean_data() -> None:
    clean = {"a": ["src/app.py", 1]}
    assert credential_gate.mask_value(clean) is clean
    masked = credential_gate.mask_value({AWS: [f"keys/{AWS}.txt"]})
    assert AWS not in json.dumps(masked)


def test_the_hook_log_keeps_no_credential(tmp_path: Path) -> None:
    env = {"ZEROSHOT_STATE_DIR": str(tmp_path)}
    log_line("claude", f"PayloadError: bad path keys/{AWS}.txt", env)
    text = (tmp_path / "active-memory" / "recall" / "hook.log").read_text(encoding="utf-8")
    assert AWS not in text and "[REDACTED:" in text


def test_a_rule_states_its_flags_so_that_its_gate_knows_whether_it_folds_case() -> None:
    # Rules compile at their first use; until then their gate reads the flags as given.
    # An inline `(?i)` would make a folding rule look case-sensitive to it.
    import re

    from active_memory.credentials import _PREFIXED

    for kind, pattern, _group, _prefixes, _gate in _PREFIXED:
        compiled = re.compile(pattern.pattern, pattern.flags)
        assert compiled.flags & ~re.UNICODE == pattern.flags, kind


def test_a_hook_that_masks_a_key_path_compiles_few_of_the_rules() -> None:
    # The rules its prefixes name, and the few that have no literal prefix (Discord,
    # Telegram, Mailchimp, a bearer token, a URL's password).
    import subprocess
    import sys

    script = (
        "from active_memory.credential_gate import mask\n"
        "from active_memory.credentials import _PREFIXED\n"
        "print(mask('src/mod7/AKIAIOSFODNN7EXAMPLE.py'))\n"
        "print(sum(p._compiled is not None for _, p, _, _, _ in _PREFIXED), len(_PREFIXED))\n"
    )
    done = subprocess.run(
        [sys.executable, "-c", script], capture_output=True, text=True, check=True
    )
    masked, counts = done.stdout.splitlines()
    assert masked == "src/mod7/[REDACTED:aws-access-key].py"
    compiled, rules = map(int, counts.split())
    assert 1 <= compiled <= 8 and rules > 30
