"""Credentials screening: a lesson never stores a secret (docs/quality.md).

`find_secrets(text)` returns every credential-shaped span of a text; `mask(text)` replaces
each with `[REDACTED:<kind>]`; `screen(fields)` screens named fields and returns
`Finding`s whose excerpts are already masked, so a finding can be printed or logged.

Three kinds of rule (docs/security.md, bench/secrets_bench.py):

- Provider formats from `detect-secrets`' maintained regex plugins (GitLab, JWT, SendGrid,
  AWS, Slack, Stripe, Twilio, PyPI, Discord, Square, Mailchimp, Azure, private keys, …),
  chosen by the bench on a corpus of real formats and look-alikes; plus the formats they
  lack (Anthropic, current OpenAI keys, npm, Hugging Face, Google OAuth, …). They match
  anywhere.
- Credential-named assignments (`TOKEN=...`, `password: ...`, nested `secret: AUTH="…"`)
  whose value looks random (entropy at least `ENTROPY_MIN_BITS`), or, for password
  keys, is a password-shaped word of `PASSWORD_MIN_CHARS` or more. Matches may overlap:
  every assignment is read, so an outer one never hides the inner value.
- Passwords in prose (`the password is Tr0ub4dor&3`).

That keeps prose, commit hashes in paths, UUIDs and short words out of the findings.
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

# Formats `detect-secrets` does not know, or knows only in one file's syntax.
_EXTRA_RULES: tuple[tuple[str, re.Pattern[str], int], ...] = (
    ("npm-token", re.compile(r"\bnpm_[A-Za-z0-9]{36}\b"), 0),
    ("huggingface-token", re.compile(r"\bhf_[A-Za-z0-9]{34,}\b"), 0),
    ("google-oauth-token", re.compile(r"\bya29\.[0-9A-Za-z_\-]{20,}"), 0),
    ("gitlab-token", re.compile(r"\bglpat-[A-Za-z0-9_\-]{20,}"), 0),
    ("digitalocean-token", re.compile(r"\bdo[opr]_v1_[a-f0-9]{64}\b"), 0),
    ("shopify-token", re.compile(r"\bshp(?:at|ca|pa|ss)_[a-fA-F0-9]{32}\b"), 0),
    ("linear-key", re.compile(r"\blin_api_[A-Za-z0-9]{40}\b"), 0),
    ("databricks-token", re.compile(r"\bdapi[a-f0-9]{32}\b"), 0),
    ("postman-key", re.compile(r"\bPMAK-[a-f0-9]{24}-[a-f0-9]{34}\b"), 0),
    ("doppler-token", re.compile(r"\bdp\.(?:pt|st|ct|sa)\.[A-Za-z0-9]{40,}"), 0),
    ("age-secret-key", re.compile(r"\bAGE-SECRET-KEY-1[0-9A-Z]{58}\b"), 0),
)

# `detect-secrets` regex plugins used as they are (their `denylist`), by secret type.
# Left out on the bench's look-alike corpus: the public-IP rule (an address is not a
# credential) and Artifactory (its `AP…` pattern matches ordinary identifiers).
_DETECT_SECRETS_PLUGINS = (
    ("aws", "AWSKeyDetector", "aws-key"),
    ("azure_storage_key", "AzureStorageKeyDetector", "azure-storage-key"),
    ("basic_auth", "BasicAuthDetector", "url-password"),
    ("discord", "DiscordBotTokenDetector", "discord-token"),
    ("github_token", "GitHubTokenDetector", "github-token"),
    ("gitlab_token", "GitLabTokenDetector", "gitlab-token"),
    ("jwt", "JwtTokenDetector", "jwt"),
    ("mailchimp", "MailchimpDetector", "mailchimp-key"),
    ("npm", "NpmDetector", "npm-token"),
    ("openai", "OpenAIDetector", "openai-key"),
    ("private_key", "PrivateKeyDetector", "private-key"),
    ("pypi_token", "PypiTokenDetector", "pypi-token"),
    ("sendgrid", "SendGridDetector", "sendgrid-key"),
    ("slack", "SlackDetector", "slack-token"),
    ("square_oauth", "SquareOAuthDetector", "square-secret"),
    ("stripe", "StripeDetector", "stripe-key"),
    ("telegram_token", "TelegramBotTokenDetector", "telegram-token"),
    ("twilio", "TwilioKeyDetector", "twilio-key"),
)


def _maintained_rules() -> tuple[tuple[str, re.Pattern[str], int], ...]:
    import importlib

    rules: list[tuple[str, re.Pattern[str], int]] = []
    for module, name, kind in _DETECT_SECRETS_PLUGINS:
        plugin = getattr(importlib.import_module(f"detect_secrets.plugins.{module}"), name)
        for pattern in plugin.denylist:
            # A pattern whose group is the secret masks the group; the rest the match.
            rules.append((kind, pattern, 1 if pattern.groups else 0))
    return tuple(rules)


_ALL_RULES = _RULES + _EXTRA_RULES + _maintained_rules()

_RANK = {kind: rank for rank, (kind, _, _) in reversed(list(enumerate(_ALL_RULES)))}

_META = frozenset(".^$*+?{}[]()|\\")


def literal_prefix(pattern: re.Pattern[str]) -> str:
    """The literal text every match of `pattern` starts with ("" when there is none).

    Most formats start with a fixed prefix (`glpat-`, `eyJ`, `AccountKey=`): a text
    without it cannot match, and a substring test is far cheaper than a regex scan.
    Leading `\\b` / `^` are skipped; a top-level `|` or a quantified last literal
    means no prefix.
    """
    source = pattern.pattern
    depth = 0
    escaped = False
    for char in source:
        if escaped:
            escaped = False
        elif char == "\\":
            escaped = True
        elif char in "([":
            depth += 1
        elif char in ")]":
            depth -= 1
        elif char == "|" and depth == 0:
            return ""
    i = 0
    while source.startswith(("\\b", "^"), i):
        i += 2 if source.startswith("\\b", i) else 1
    prefix: list[str] = []
    while i < len(source):
        char, step = source[i], 1
        if char == "\\":
            if i + 1 >= len(source) or source[i + 1].isalnum():
                break  # a class like \\d or \\w, not a literal
            char, step = source[i + 1], 2
        elif char in _META:
            break
        if source[i + step : i + step + 1] in ("?", "*", "{"):
            break  # this literal may be absent or repeated
        prefix.append(char)
        i += step
    return "".join(prefix)


_PREFIXED = tuple(
    (kind, pattern, group, literal_prefix(pattern), bool(pattern.flags & re.IGNORECASE))
    for kind, pattern, group in _ALL_RULES
)

PASSWORD_MIN_CHARS = 4
"""A value assigned to a password key counts from this length when it mixes letters with
digits or symbols (`p4ss`, `hunter2!`): passwords are short and low-entropy, so the
entropy bar alone would let them through, and the key already says what it is."""

PROSE_PASSWORD_MIN_CHARS = 6
"""The same for a password named in prose (`the password is …`), where the context is
weaker."""

_KEY = (
    r"(?:token|secret|passw(?:or)?d|passphrase|pwd|api[_\-]?key|access[_\-]?key"
    r"|private[_\-]?key|credentials?|auth)"
)
_ASSIGNMENT = re.compile(
    rf"(?i)\b[A-Za-z0-9_.\-]*{_KEY}[A-Za-z0-9_]*[\"']?\s*(?::=|=|:)\s*[\"']?"
    r"([^\s\"'`,;)\]}]+)"
)
_PASSWORD_KEY = re.compile(r"(?i)passw(?:or)?d|passphrase|pwd")
_PROSE_PASSWORD = re.compile(
    r"(?i)\b(?:password|passphrase|passwd)\s+(?:is|was|of|=|:)\s+[\"'`]?([^\s\"'`,;]+)"
)
_NESTED = re.compile(r"[A-Za-z_][A-Za-z0-9_.\-]*(?::=|=|:)")
# Values that name something rather than hold it: an environment variable, a path.
# A template slot cut by the value pattern (`<your password>` → `<your`) is one too.
_A_NAME = re.compile(r"[A-Z][A-Z0-9_]*|~?\.{0,2}/.*|(?:<|\{\{|\$\{|%\().*")
_PASSWORD_SHAPED = re.compile(r"(?=.*[A-Za-z])(?=.*[^A-Za-z]).+")

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
    lowered = text.lower()
    for kind, pattern, group, prefix, folded in _PREFIXED:
        if prefix and (prefix.lower() not in lowered if folded else prefix not in text):
            continue
        for hit in pattern.finditer(text):
            if hit.start(group) < 0 or _PLACEHOLDER.fullmatch(hit.group(group)):
                continue
            found.append(Match(hit.start(group), hit.end(group), kind))
    position = 0
    while (assigned := _ASSIGNMENT.search(text, position)) is not None:
        # Resume inside the value, not after it: `token: DB_PASSWORD="p4ss…"` holds a
        # second assignment that a non-overlapping scan would never see.
        position = assigned.start(1)
        value = assigned.group(1)
        if _NESTED.match(value) or _PLACEHOLDER.fullmatch(value) or _A_NAME.fullmatch(value):
            continue
        password = (
            _PASSWORD_KEY.search(assigned.group(0)[: assigned.start(1) - assigned.start()])
            is not None
        )
        if _looks_secret(value, password_min=PASSWORD_MIN_CHARS if password else None):
            found.append(Match(assigned.start(1), assigned.end(1), "assigned-secret"))
    for hit in _PROSE_PASSWORD.finditer(text):
        value = hit.group(1)
        if not _PLACEHOLDER.fullmatch(value) and _looks_secret(
            value, password_min=PROSE_PASSWORD_MIN_CHARS
        ):
            found.append(Match(hit.start(1), hit.end(1), "password"))
    return _merged(found)


def _looks_secret(value: str, *, password_min: int | None) -> bool:
    if len(value) >= ASSIGNED_MIN_CHARS and shannon_entropy(value) >= ENTROPY_MIN_BITS:
        return True
    word = value.rstrip(".")
    return (
        password_min is not None
        and len(word) >= password_min
        and _PASSWORD_SHAPED.fullmatch(word) is not None
    )


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
