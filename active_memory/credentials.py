"""Credentials screening: a lesson never stores a secret (docs/quality.md).

`find_secrets(text)` returns every credential-shaped span of a text; `mask(text)` replaces
each with `[REDACTED:<kind>]`; `screen(fields)` screens named fields and returns
`Finding`s whose excerpts are already masked, so a finding can be printed or logged.

Three kinds of rule (docs/security.md, bench/secrets_bench.py):

- Provider formats (private keys, Anthropic, OpenAI, GitHub, GitLab, AWS, Azure, Slack,
  Google, Stripe, JWT, SendGrid, PyPI, npm, Discord, Telegram, Twilio, …), our own rules
  written from each provider's public format in `credential_formats.py` and held by the
  bench to a corpus of real formats and look-alikes. They match anywhere; each is
  compiled at its first use.
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
from collections import Counter, namedtuple
from collections.abc import Iterable, Iterator, Mapping

from active_memory.credential_formats import PROVIDER_FORMATS
from active_memory.credential_rules import GATES

# `typing` (3 ms) is not imported at run time: a hook process that meets a key loads
# this module, and every import counts against its start-up budget.
TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import NamedTuple, TypeAlias

    Regex: TypeAlias = "re.Pattern[str] | LazyPattern"

ENTROPY_MIN_BITS = 3.0
"""Bits per character an assigned value needs to count as a secret: random keys of 12+
characters score 3.3-4.5; words, repeated characters and small numbers score below 3."""

ASSIGNED_MIN_CHARS = 12
"""Shorter assigned values are too short to judge by entropy (and a leaked password that
short is also found by the provider rules only if it has a provider's shape)."""

EXCERPT_CONTEXT = 24
"""Characters of context kept either side of a masked span in a finding's excerpt."""


class LazyPattern:
    """A regex compiled at its first use. A hook process that masks a key path runs the
    rules whose prefix the path holds: compiling all forty at import would cost it more
    than a bare interpreter's start-up (bench/README.md, "Credentials at rest")."""

    __slots__ = ("_compiled", "flags", "pattern")

    def __init__(self, pattern: str, flags: int = 0) -> None:
        self.pattern = pattern
        # As given, inline flags not read in: a provider rule states its flags, never
        # inline (a test holds it), so that its gate knows whether it folds case.
        self.flags = flags
        self._compiled: re.Pattern[str] | None = None

    def compiled(self) -> re.Pattern[str]:
        """The compiled regex (compiled once; two threads compiling it alike is harmless)."""
        if self._compiled is None:
            self._compiled = re.compile(self.pattern, self.flags)
        return self._compiled

    def search(self, text: str, pos: int = 0) -> re.Match[str] | None:
        """`re.Pattern.search`."""
        return self.compiled().search(text, pos)

    def match(self, text: str) -> re.Match[str] | None:
        """`re.Pattern.match`."""
        return self.compiled().match(text)

    def fullmatch(self, text: str) -> re.Match[str] | None:
        """`re.Pattern.fullmatch`."""
        return self.compiled().fullmatch(text)

    def finditer(self, text: str) -> Iterator[re.Match[str]]:
        """`re.Pattern.finditer`."""
        return self.compiled().finditer(text)


def all_rules() -> tuple[tuple[str, LazyPattern, int], ...]:
    """Every provider-format rule of the screen, most specific first, as (kind, pattern,
    secret group); none compiled yet."""
    return tuple(
        (kind, LazyPattern(source, flags), group) for kind, source, flags, group in PROVIDER_FORMATS
    )


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


def literal_prefix(pattern: Regex) -> str:
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


def literal_prefixes(pattern: Regex) -> tuple[str, ...]:
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


def _prefixed(pattern: LazyPattern) -> tuple[tuple[str, ...], LazyPattern | None]:
    """A rule's gate: its prefixes as substrings, or for a case-insensitive rule a regex
    of them with the rule's flags, so that exactly the letters the rule folds match
    (the long s, U+017F, is an `s` to the regex engine, not to `str.lower`)."""
    prefixes = literal_prefixes(pattern)
    if not prefixes or not pattern.flags & re.IGNORECASE:
        return prefixes, None
    alternatives = "|".join(re.escape(prefix) for prefix in prefixes)
    return (), LazyPattern(alternatives, pattern.flags & ~re.VERBOSE)


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
_ASSIGNMENT = LazyPattern(
    rf"(?i)\b[A-Za-z0-9_.\-]*{_KEY}[A-Za-z0-9_]*[\"']?\s*(?::=|=|:)\s*[\"']?"
    r"([^\s\"'`,;)\]}]+)"
)
# Every match of `_KEY` holds one of these (api_key, access-key, … hold `key`).
_ASSIGNMENT_KEY = LazyPattern(r"(?i)token|secret|passw|passphrase|pwd|key|credential|auth")
_PASSWORD_KEY = LazyPattern(r"(?i)passw(?:or)?d|passphrase|pwd")
_PROSE_PASSWORD = LazyPattern(
    r"(?i)\b(?:password|passphrase|passwd)\s+(?:is|was|of|=|:)\s+[\"'`]?([^\s\"'`,;]+)"
)
_NESTED = LazyPattern(r"[A-Za-z_][A-Za-z0-9_.\-]*(?::=|=|:)")
# Values that name something rather than hold it: an environment variable, a path.
# A template slot cut by the value pattern (`<your password>` → `<your`) is one too.
_A_NAME = LazyPattern(r"[A-Z][A-Z0-9_]*|~?\.{0,2}/.*|(?:<|\{\{|\$\{|%\().*")
_PASSWORD_SHAPED = LazyPattern(r"(?=.*[A-Za-z])(?=.*[^A-Za-z]).+")

# Values that stand for a secret without being one: ${VAR}, $VAR, <token>, ***, xxxx,
# and our own mask (`[REDACTED:kind]`, cut before its `]` by the assignment's value
# pattern), so that masking a masked text changes nothing.
_PLACEHOLDER = LazyPattern(
    r"\$\{?[A-Za-z_][A-Za-z0-9_]*\}?|<[^>]*>|\*+|[xX]+|\.\.\.|…|\[REDACTED:[a-z0-9\-]+(?:\][.!?]*)?"
)


# Named tuples, neither dataclasses nor `typing.NamedTuple`: a hook process that meets a
# key loads this module, and `dataclasses` (with `inspect`) or `typing` cost it more
# than they are worth. The type checker reads the `NamedTuple` forms.
if TYPE_CHECKING:

    class _MatchFields(NamedTuple):
        start: int
        end: int
        kind: str

    class _FindingFields(NamedTuple):
        field: str
        kind: str
        excerpt: str

else:
    _MatchFields = namedtuple("Match", "start end kind")
    _FindingFields = namedtuple("Finding", "field kind excerpt")


class Match(_MatchFields):
    """One credential-shaped span of a text: `text[start:end]` is the secret."""

    __slots__ = ()


class Finding(_FindingFields):
    """A secret found in a named field; `excerpt` is masked and safe to print."""

    __slots__ = ()

    def to_json(self) -> dict[str, str]:
        """`{"field", "kind", "excerpt"}`."""
        return {"field": self.field, "kind": self.kind, "excerpt": self.excerpt}


def shannon_entropy(text: str) -> float:
    """Bits per character of `text`'s own character distribution (0 for empty text)."""
    if not text:
        return 0.0
    total = len(text)
    return -sum(n / total * math.log2(n / total) for n in Counter(text).values())


def context_rules() -> tuple[tuple[LazyPattern, tuple[str, ...], tuple[str, ...]], ...]:
    """The rules read in context (assignments, passwords in prose), each with the folded
    key words every match holds and the characters it also needs (`credential_gate`)."""
    keys = ("token", "secret", "passw", "passphrase", "pwd", "key", "credential", "auth")
    return (
        (_ASSIGNMENT, keys, ("=", ":")),
        (_PROSE_PASSWORD, ("password", "passphrase", "passwd"), ()),
    )


def min_width(pattern: Regex) -> int:
    """The fewest characters any match of `pattern` spans (0 when it cannot be told)."""
    parser = getattr(re, "_parser", None)  # the stdlib's own regex parser (3.11+)
    try:
        width: tuple[int, int] = parser.parse(pattern.pattern, pattern.flags).getwidth()  # type: ignore[union-attr]
    except Exception:  # another implementation: no shortcut, every text is scanned
        return 0
    return width[0]


SHORTEST_SECRET_CHARS = min(width for width, _folded, _anchors, _also in GATES)
"""A text shorter than every rule's shortest match holds no secret (`''`, `api`, `src`):
it is not scanned at all. The widths are those of the generated table (`min_width` of
every rule, read in context or not), not parsed again at each start."""

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


_MASK = LazyPattern(r"\[REDACTED:[a-z0-9\-]+\]")


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
