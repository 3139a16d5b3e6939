"""The credential screen's lean form: one set of rules, cheap enough for every tool call.

`credentials.py` is the screen (docs/security.md); its rules compile some sixty regexes
and, before issue 27, imported `detect-secrets` (about 130 ms) at start-up, too much for
a hook process that must start within 3 times a bare interpreter. This module is what the
per-tool-call hook and every other writer call:

- `mask(text)`: `credentials.mask(text)`, but only loaded when `may_hold_secret(text)`;
- `may_hold_secret(text)`: a gate without `re`, from the precompiled table in
  `credential_rules.py`. Each rule of the screen has a width (the fewest characters
  any of its matches spans) and anchors (substrings every match holds: its literal
  prefixes, folded for a case-insensitive rule, or a hand-given anchor for a rule that
  has none). A text shorter than a rule's width or holding none of its anchors cannot
  match it. The gate may say yes for a clean text (the screen then decides), never no
  for a secret: `tests/test_credential_gate.py` holds it to that on the corpus and on
  generated texts;
- `mask_value(data)`: every string (keys too) of a JSON-like value, masked.

`credential_rules.py` is generated from the screen's rules and `detect-secrets`' plugins
by `python -m active_memory.credential_gate --write`; a test fails when it is stale.
Imports nothing at module level: the hook's warm path must not import `re`.
"""

from __future__ import annotations

from active_memory.credential_rules import GATES

TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import Any

# Rules whose literal prefixes are missing or too short to be a useful gate (one or two
# letters), by kind: a substring every match of such a rule holds.
HAND_ANCHORS: dict[str, tuple[str, ...]] = {
    "bearer-token": ("earer",),
    "url-password": ("://",),
    "aws-key": ("A3T", "ABIA", "ACCA", "AKIA", "ASIA"),
    "discord-token": (".",),
    "mailchimp-key": ("-us",),
    "telegram-token": (":",),
    "stripe-key": ("k_live_", "k_test_"),
    "digitalocean-token": ("_v1_",),
    "twilio-key": ("AC", "SK"),
    "npm-token": ("_authToken=",),
}


def may_hold_secret(text: str) -> bool:
    """False when no rule of the screen can match `text` (then it holds no secret)."""
    size = len(text)
    lowered: str | None = None
    ascii_only = text.isascii()
    for width, folded, anchors, also in GATES:
        if size < width:
            continue
        if folded:
            if not ascii_only:
                return True  # the regex engine folds more than `str.lower` (long s)
            if lowered is None:
                lowered = text.lower()
            haystack = lowered
        else:
            haystack = text
        for anchor in anchors:
            if anchor in haystack:
                break
        else:
            continue
        if not also:
            return True
        for anchor in also:
            if anchor in text:
                return True
    return False


def mask(text: str) -> str:
    """`text` with every secret replaced by `[REDACTED:<kind>]` (credentials.py)."""
    if not may_hold_secret(text):
        return text
    from active_memory.credentials import mask as full_mask

    return full_mask(text)


def mask_value(data: Any) -> Any:
    """JSON-like `data` with every string (object keys too) masked; the same object
    when nothing in it may hold a secret."""
    if isinstance(data, str):
        return mask(data)
    if isinstance(data, list | tuple):
        items = [mask_value(item) for item in data]
        if all(new is old for new, old in zip(items, data, strict=True)):
            return data
        return items
    if isinstance(data, dict):
        pairs = [(mask_value(k), mask_value(v)) for k, v in data.items()]
        if all(k is old_k and v is old_v for (k, v), (old_k, old_v) in
               zip(pairs, data.items(), strict=True)):  # fmt: skip
            return data
        return dict(pairs)
    return data


# --- generation ------------------------------------------------------------------------


def render() -> str:
    """The text of `credential_rules.py` for the screen's current rules."""
    import re

    from active_memory import credentials
    from active_memory.credential_formats import detect_secrets_rules

    detect = detect_secrets_rules()
    gates: list[tuple[int, bool, tuple[str, ...], tuple[str, ...]]] = []
    for kind, pattern, _group in credentials.all_rules(detect):
        folded = bool(pattern.flags & re.IGNORECASE)
        anchors = credentials.literal_prefixes(pattern)
        if not anchors or min(map(len, anchors)) < 3:
            if kind not in HAND_ANCHORS:
                raise ValueError(f"rule {kind} ({pattern.pattern[:40]}) needs HAND_ANCHORS")
            anchors = HAND_ANCHORS[kind]
        if folded:
            anchors = tuple(anchor.lower() for anchor in anchors)
        gates.append((credentials.min_width(pattern), folded, anchors, ()))
    for pattern, anchors, also in credentials.context_rules():
        gates.append((credentials.min_width(pattern), True, anchors, also))
    unique = list(dict.fromkeys(gates))
    lines = [
        '"""GENERATED by `python -m active_memory.credential_gate --write`: do not edit.',
        "",
        "`DETECT_SECRETS`: the regex plugins of detect-secrets the screen uses, as",
        "(kind, pattern, flags, group); `GATES`: per rule of the screen, (width, folded,",
        'anchors, also) for `credential_gate.may_hold_secret`."""',
        "",
        "from __future__ import annotations",
        "",
        "DETECT_SECRETS: tuple[tuple[str, str, int, int], ...] = (",
        *(
            f"    ({kind!r}, {source!r}, {int(flags)}, {group}),"
            for kind, source, flags, group in detect
        ),
        ")",
        "",
        "GATES: tuple[tuple[int, bool, tuple[str, ...], tuple[str, ...]], ...] = (",
        *(f"    {gate!r}," for gate in unique),
        ")",
        "",
    ]
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> int:
    """`--write` regenerates `credential_rules.py`; without it, 1 when it is stale."""
    import sys
    from pathlib import Path

    target = Path(__file__).with_name("credential_rules.py")
    text = render()
    if "--write" in (sys.argv[1:] if argv is None else argv):
        target.write_text(text, encoding="utf-8")
        return 0
    return 0 if target.read_text(encoding="utf-8") == text else 1


if __name__ == "__main__":
    raise SystemExit(main())
