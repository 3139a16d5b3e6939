"""Credentials screening: a lesson never stores a secret (docs/quality.md).

`find_secrets(text)` returns every credential-shaped span of a text; `mask(text)` replaces
each with `[REDACTED:<kind>]`; `screen(fields)` screens named fields and returns
`Finding`s whose excerpts are already masked, so a finding can be printed or logged.

Two kinds of rule: provider key formats (fixed prefixes and lengths, from the providers'
public documentation) match anywhere; anything else only counts as a secret when it is
the value of a credential-named assignment (`TOKEN=...`, `password: ...`) and looks
random (Shannon entropy per character at least `ENTROPY_MIN_BITS`). That keeps prose,
commit hashes in paths, UUIDs and short words out of the findings.
"""

from __future__ import annotations

import math
import re
from collections import Counter
from collections.abc import Iterable, Mapping
from dataclasses import dataclass

ENTROPY_MIN_BITS = 3.0
"""Bits per character an assigned value needs to count as a secret: random keys of 12+
characters score 3.3-4.5; words, repeated characters and small numbers score below 3."""

ASSIGNED_MIN_CHARS = 12
"""Shorter assigned values are too short to judge by entropy (and a leaked password that
short is also found by the provider rules only if it has a provider's shape)."""

EXCERPT_CONTEXT = 24
"""Characters of context kept either side of a masked span in a finding's excerpt."""

_KEYCHARS = r"[A-Za-z0-9_\-]"
_HAS_DIGIT_AND_LETTER = r"(?=[A-Za-z0-9_\-]*[0-9])(?=[A-Za-z0-9_\-]*[A-Za-z])"

# (kind, pattern, group): the group is the span that is secret (0 = the whole match).
_RULES: tuple[tuple[str, re.Pattern[str], int], ...] = (
    (
        "private-key",
        re.compile(
            r"-----BEGIN (?:[A-Z0-9]+ )*PRIVATE KEY-----"
            r"(?:.*?-----END (?:[A-Z0-9]+ )*PRIVATE KEY-----|.*\Z)",
            re.DOTALL,
        ),
        0,
    ),
    ("anthropic-key", re.compile(rf"\bsk-ant-{_KEYCHARS}{{20,}}"), 0),
    (
        "openai-key",
        re.compile(rf"\bsk-(?:proj-|svcacct-|admin-)?{_HAS_DIGIT_AND_LETTER}{_KEYCHARS}{{20,}}"),
        0,
    ),
    ("github-token", re.compile(r"\b(?:ghp|gho|ghu|ghs|ghr)_[A-Za-z0-9]{36,}\b"), 0),
    ("github-token", re.compile(r"\bgithub_pat_[A-Za-z0-9_]{22,}"), 0),
    ("aws-access-key", re.compile(r"\b(?:AKIA|ASIA)[A-Z0-9]{16}\b"), 0),
    ("slack-token", re.compile(r"\bxox[abposr]-[A-Za-z0-9\-]{10,}"), 0),
    ("google-api-key", re.compile(r"\bAIza[0-9A-Za-z_\-]{35}"), 0),
    ("stripe-key", re.compile(r"\b(?:sk|rk)_(?:live|test)_[A-Za-z0-9]{16,}"), 0),
    (
        "bearer-token",
        re.compile(r"\b[Bb]earer\s+((?=[A-Za-z0-9._~+/\-]*[0-9])[A-Za-z0-9._~+/\-]{20,}=*)"),
        1,
    ),
    # scheme://user:password@host; the password only.
    ("url-password", re.compile(r"\b[A-Za-z][A-Za-z0-9+.\-]*://[^\s:/@]+:([^\s/@]+)@"), 1),
)

_RANK = {kind: rank for rank, (kind, _, _) in reversed(list(enumerate(_RULES)))}

_ASSIGNMENT = re.compile(
    r"(?i)\b[A-Za-z0-9_.\-]*(?:token|secret|passw(?:or)?d|pwd|api[_\-]?key|access[_\-]?key"
    r"|private[_\-]?key|credentials?|auth)[A-Za-z0-9_]*[\"']?\s*(?::=|=|:)\s*[\"']?"
    r"([^\s\"'`,;)\]}]+)"
)

# Values that stand for a secret without being one: ${VAR}, $VAR, <token>, ***, xxxx.
_PLACEHOLDER = re.compile(r"\$\{?[A-Za-z_][A-Za-z0-9_]*\}?|<[^>]*>|\*+|[xX]+|\.\.\.|…")


@dataclass(frozen=True, slots=True, order=True)
class Match:
    """One credential-shaped span of a text: `text[start:end]` is the secret."""

    start: int
    end: int
    kind: str


@dataclass(frozen=True, slots=True)
class Finding:
    """A secret found in a named field; `excerpt` is masked and safe to print."""

    field: str
    kind: str
    excerpt: str

    def to_json(self) -> dict[str, str]:
        """`{"field", "kind", "excerpt"}`."""
        return {"field": self.field, "kind": self.kind, "excerpt": self.excerpt}


def shannon_entropy(text: str) -> float:
    """Bits per character of `text`'s own character distribution (0 for empty text)."""
    if not text:
        return 0.0
    total = len(text)
    return -sum(n / total * math.log2(n / total) for n in Counter(text).values())


def find_secrets(text: str) -> list[Match]:
    """Every credential-shaped span of `text`, in order, overlapping spans merged."""
    found: list[Match] = []
    for kind, pattern, group in _RULES:
        for hit in pattern.finditer(text):
            if group and _PLACEHOLDER.fullmatch(hit.group(group)):
                continue
            found.append(Match(hit.start(group), hit.end(group), kind))
    for hit in _ASSIGNMENT.finditer(text):
        value = hit.group(1)
        if (
            len(value) >= ASSIGNED_MIN_CHARS
            and not _PLACEHOLDER.fullmatch(value)
            and shannon_entropy(value) >= ENTROPY_MIN_BITS
        ):
            found.append(Match(hit.start(1), hit.end(1), "assigned-secret"))
    return _merged(found)


def _merged(matches: list[Match]) -> list[Match]:
    # Overlapping spans are one secret, named by the earliest (most specific) rule:
    # an Anthropic key also has OpenAI's `sk-` shape, a provider key may be assigned.
    merged: list[Match] = []
    for match in sorted(matches, key=lambda m: (m.start, _RANK.get(m.kind, len(_RANK)))):
        if merged and match.start < merged[-1].end:
            last = merged[-1]
            merged[-1] = Match(last.start, max(last.end, match.end), last.kind)
        else:
            merged.append(match)
    return merged


def _redacted(kind: str) -> str:
    return f"[REDACTED:{kind}]"


def mask(text: str) -> str:
    """`text` with every secret replaced by `[REDACTED:<kind>]`."""
    return _masked(text, find_secrets(text))


def _masked(text: str, matches: list[Match]) -> str:
    parts: list[str] = []
    position = 0
    for match in matches:
        parts.append(text[position : match.start])
        parts.append(_redacted(match.kind))
        position = match.end
    parts.append(text[position:])
    return "".join(parts)


def screen(fields: Mapping[str, str] | Iterable[tuple[str, str]]) -> list[Finding]:
    """A `Finding` per secret in each `(field name, text)`; excerpts are masked."""
    items = fields.items() if isinstance(fields, Mapping) else fields
    findings: list[Finding] = []
    for name, text in items:
        matches = find_secrets(text)
        for match in matches:
            start = max(0, match.start - EXCERPT_CONTEXT)
            end = min(len(text), match.end + EXCERPT_CONTEXT)
            window = [
                Match(max(m.start, start) - start, min(m.end, end) - start, m.kind)
                for m in matches
                if m.end > start and m.start < end
            ]
            excerpt = _masked(text[start:end], window)
            prefix = "…" if start > 0 else ""
            suffix = "…" if end < len(text) else ""
            findings.append(Finding(name, match.kind, f"{prefix}{excerpt}{suffix}"))
    return findings


def strings_of(data: object, path: str) -> list[tuple[str, str]]:
    """Every string inside JSON-like `data`, each with its JSON path under `path`."""
    found: list[tuple[str, str]] = []
    if isinstance(data, str):
        found.append((path, data))
    elif isinstance(data, Mapping):
        for key, value in data.items():
            found.extend(strings_of(value, f"{path}.{key}" if path else str(key)))
    elif isinstance(data, list | tuple):
        for position, value in enumerate(data):
            found.extend(strings_of(value, f"{path}[{position}]"))
    return found


def secret_reasons(data: object, path: str) -> list[str]:
    """One masked rejection reason per secret inside `data` (a draft's JSON dump)."""
    return [
        f"{finding.field}: contains a credential ({finding.kind}); secrets are never stored: "
        f"{finding.excerpt}"
        for finding in screen(strings_of(data, path))
    ]
