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

import _thread
import math
import re
from collections import Counter
from collections.abc import Iterable, Mapping
from typing import NamedTuple

from active_memory.credential_rules import DETECT_SECRETS

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


def detect_secrets_rules() -> tuple[tuple[str, str, int, int], ...]:
    """The denylists of `_DETECT_SECRETS_PLUGINS` as (kind, pattern, flags, group), read
    from the installed library: what `credential_rules.DETECT_SECRETS` is generated from
    (the screen itself never imports the library: 130 ms at start-up)."""
    import importlib

    rules: list[tuple[str, str, int, int]] = []
    for module, name, kind in _DETECT_SECRETS_PLUGINS:
        plugin = getattr(importlib.import_module(f"detect_secrets.plugins.{module}"), name)
        for pattern in plugin.denylist:
            # A pattern whose group is the secret masks the group; the rest the match.
            flags = pattern.flags & ~re.UNICODE
            rules.append((kind, pattern.pattern, flags, 1 if pattern.groups else 0))
    return tuple(rules)


def all_rules(
    detect: tuple[tuple[str, str, int, int], ...] = DETECT_SECRETS,
) -> tuple[tuple[str, re.Pattern[str], int], ...]:
    """Every provider-format rule of the screen, most specific first: ours, then
    detect-secrets' (from the precompiled table unless given)."""
    maintained = tuple(
        (kind, re.compile(source, flags), group) for kind, source, flags, group in detect
    )
    return _RULES + _EXTRA_RULES + maintained


_ALL_RULES = all_rules()

_RANK = {kind: rank for rank, (kind, _, _) in reversed(list(enumerate(_ALL_RULES)))}

_META = frozenset(".^$*+?{}[]()|\\")


def _alternates_at_top(source: str) -> bool:
    """Whether a regex source has a `|` outside every group and class."""
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
            return True
    return False


def literal_prefix(pattern: re.Pattern[str]) -> str:
    """The literal text every match of `pattern` starts with ("" when there is none).

    Most formats start with a fixed prefix (`glpat-`, `eyJ`, `AccountKey=`): a text
    without it cannot match, and a substring test is far cheaper than a regex scan.
    Leading `\\b` / `^` are skipped; a top-level `|` or a quantified last literal
    means no prefix.
    """
    source = pattern.pattern
    if _alternates_at_top(source):
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


_LEADING_ALTERNATIVES = re.compile(r"(?:\\b|\^)*\((?:\?:)?([^()]*)\)(?![?*{])")


def literal_prefixes(pattern: re.Pattern[str]) -> tuple[str, ...]:
    """Texts of which every match of `pattern` starts with one (`()` when there are none).

    `literal_prefix`, or the alternatives of a leading group of plain literals
    (`(?:AKIA|ASIA)…` → `AKIA`, `ASIA`): a text that holds none of them cannot match.
    """
    prefix = literal_prefix(pattern)
    if prefix:
        return (prefix,)
    group = _LEADING_ALTERNATIVES.match(pattern.pattern)
    if group is None or _alternates_at_top(pattern.pattern):
        return ()
    alternatives = tuple(group.group(1).split("|"))
    if not all(a and not (_META & set(a)) for a in alternatives):
        return ()
    return alternatives


def _prefixed(pattern: re.Pattern[str]) -> tuple[tuple[str, ...], re.Pattern[str] | None]:
    """A rule's gate: its prefixes as substrings, or for a case-insensitive rule a regex
    of them with the rule's flags, so that exactly the letters the rule folds match
    (the long s, U+017F, is an `s` to the regex engine, not to `str.lower`)."""
    prefixes = literal_prefixes(pattern)
    if not prefixes or not pattern.flags & re.IGNORECASE:
        return prefixes, None
    alternatives = "|".join(re.escape(prefix) for prefix in prefixes)
    return (), re.compile(alternatives, pattern.flags & ~re.VERBOSE)


_PREFIXED = tuple(
    (kind, pattern, group, *_prefixed(pattern)) for kind, pattern, group in _ALL_RULES
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
# Every match of `_KEY` holds one of these (api_key, access-key, … hold `key`).
_ASSIGNMENT_KEY = re.compile(r"(?i)token|secret|passw|passphrase|pwd|key|credential|auth")
_PASSWORD_KEY = re.compile(r"(?i)passw(?:or)?d|passphrase|pwd")
_PROSE_PASSWORD = re.compile(
    r"(?i)\b(?:password|passphrase|passwd)\s+(?:is|was|of|=|:)\s+[\"'`]?([^\s\"'`,;]+)"
)
_NESTED = re.compile(r"[A-Za-z_][A-Za-z0-9_.\-]*(?::=|=|:)")
# Values that name something rather than hold it: an environment variable, a path.
# A template slot cut by the value pattern (`<your password>` → `<your`) is one too.
_A_NAME = re.compile(r"[A-Z][A-Z0-9_]*|~?\.{0,2}/.*|(?:<|\{\{|\$\{|%\().*")
_PASSWORD_SHAPED = re.compile(r"(?=.*[A-Za-z])(?=.*[^A-Za-z]).+")

# Values that stand for a secret without being one: ${VAR}, $VAR, <token>, ***, xxxx,
# and our own mask (`[REDACTED:kind]`, cut before its `]` by the assignment's value
# pattern), so that masking a masked text changes nothing.
_PLACEHOLDER = re.compile(
    r"\$\{?[A-Za-z_][A-Za-z0-9_]*\}?|<[^>]*>|\*+|[xX]+|\.\.\.|…|\[REDACTED:[a-z0-9\-]+(?:\][.!?]*)?"
)


# NamedTuples, not dataclasses: a hook process that meets a key loads this module, and
# `dataclasses` (with `inspect`) costs it more than a bare interpreter's start-up.
class Match(NamedTuple):
    """One credential-shaped span of a text: `text[start:end]` is the secret."""

    start: int
    end: int
    kind: str


class Finding(NamedTuple):
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


def context_rules() -> tuple[tuple[re.Pattern[str], tuple[str, ...], tuple[str, ...]], ...]:
    """The rules read in context (assignments, passwords in prose), each with the folded
    key words every match holds and the characters it also needs (`credential_gate`)."""
    keys = ("token", "secret", "passw", "passphrase", "pwd", "key", "credential", "auth")
    return (
        (_ASSIGNMENT, keys, ("=", ":")),
        (_PROSE_PASSWORD, ("password", "passphrase", "passwd"), ()),
    )


def min_width(pattern: re.Pattern[str]) -> int:
    """The fewest characters any match of `pattern` spans (0 when it cannot be told)."""
    return _min_width(pattern)


def _min_width(pattern: re.Pattern[str]) -> int:
    """The fewest characters any match of `pattern` spans (0 when it cannot be told)."""
    parser = getattr(re, "_parser", None)  # the stdlib's own regex parser (3.11+)
    try:
        width: tuple[int, int] = parser.parse(pattern.pattern, pattern.flags).getwidth()  # type: ignore[union-attr]
    except Exception:  # another implementation: no shortcut, every text is scanned
        return 0
    return width[0]


SHORTEST_SECRET_CHARS = min(
    _min_width(p) for p in (*(r[1] for r in _ALL_RULES), _ASSIGNMENT, _PROSE_PASSWORD)
)
"""A text shorter than every rule's shortest match holds no secret (`''`, `api`, `src`):
it is not scanned at all."""

CACHED_TEXT_CHARS = 1024
"""Texts up to this long found clean are remembered (`_CLEAN`, the latest 8,192): an
answer repeats the same short strings (a reason, a folder) thousands of times. A text
with a finding is never kept: no secret outlives the screen in a cache."""

_CLEAN_MAX = 8192
_CLEAN: dict[str, None] = {}
_CLEAN_LOCK = _thread.allocate_lock()  # `threading` would cost a hook process its import


def find_secrets(text: str) -> list[Match]:
    """Every credential-shaped span of `text`, in order, overlapping spans merged."""
    if len(text) < SHORTEST_SECRET_CHARS or text in _CLEAN:
        return []
    found = _scan(text)
    if not found and len(text) <= CACHED_TEXT_CHARS:
        with _CLEAN_LOCK:  # screens run in worker threads
            _CLEAN[text] = None
            if len(_CLEAN) > _CLEAN_MAX:
                del _CLEAN[next(iter(_CLEAN))]  # the oldest
    return found


def _scan(text: str) -> list[Match]:
    found: list[Match] = []
    for kind, pattern, group, prefixes, gate in _PREFIXED:
        if gate is not None:
            if gate.search(text) is None:
                continue  # no prefix, no match: the rule is not run
        elif prefixes:
            for prefix in prefixes:
                if prefix in text:
                    break
            else:
                continue
        for hit in pattern.finditer(text):
            if hit.start(group) < 0 or _PLACEHOLDER.fullmatch(hit.group(group)):
                continue
            found.append(Match(hit.start(group), hit.end(group), kind))
    # An assignment needs `=` or `:` and one of the key words (the same regex flags, so
    # the same letters match): without them the costly scan below cannot match.
    assignable = ("=" in text or ":" in text) and _ASSIGNMENT_KEY.search(text) is not None
    position = 0 if assignable else len(text) + 1
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
    if found and "[REDACTED:" in text:
        found = _outside_masks(text, found)
    return _merged(found)


_MASK = re.compile(r"\[REDACTED:[a-z0-9\-]+\]")


def _outside_masks(text: str, found: list[Match]) -> list[Match]:
    """`found` without the matches lying inside our own `[REDACTED:kind]` marks: a text
    masked once (a reason, an excerpt) is screened again when a report is written, and
    its marks have shapes rules know (`https://[REDACTED:github-token]@host` looks like
    a URL's user and password)."""
    marks = [(mark.start(), mark.end()) for mark in _MASK.finditer(text)]
    return [
        match
        for match in found
        if not any(start <= match.start and match.end <= end for start, end in marks)
    ]


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


def _texts(data: object) -> list[str]:
    """Every string inside JSON-like `data`, without paths (in no particular order)."""
    found: list[str] = []
    stack = [data]
    while stack:
        value = stack.pop()
        if isinstance(value, str):
            found.append(value)
        elif isinstance(value, Mapping):
            stack.extend(value.values())
        elif isinstance(value, list | tuple):
            stack.extend(value)
    return found


def secret_reasons(data: object, path: str) -> list[str]:
    """One masked rejection reason per secret inside `data` (a draft's JSON dump)."""
    # Almost every answer holds no secret: find that out without building a JSON path
    # per string; only data with a finding is screened again with its paths.
    if not any(find_secrets(text) for text in _texts(data)):
        return []
    return [
        f"{finding.field}: contains a credential ({finding.kind}); secrets are never stored: "
        f"{finding.excerpt}"
        for finding in screen(strings_of(data, path))
    ]
