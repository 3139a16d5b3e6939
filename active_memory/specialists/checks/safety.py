"""The safety rules of SPEC §6: a card never tells the agent to ignore its instructions,
to download and run code, to destroy data or history, or to skip a check.

Each rule is a list of patterns matched against the card's title and recommendation.
A match is allowed when the clause before it forbids it (`never`, `do not`, `instead
of`, ... in the languages listed) or when it lies inside a command that a cited
failure's `resolved_by` shows verbatim. A refusal names the rule and nothing else
(SPEC §6: telling a hostile model how to pass would teach it), and gets no repair turn.
"""

from __future__ import annotations

import re
from collections.abc import Iterable

OVERRIDE = "override-instructions"
DOWNLOAD = "download-and-run"
DESTROY = "destroy-data"
SKIP = "skip-checks"
SAFETY_RULES = (OVERRIDE, DOWNLOAD, DESTROY, SKIP)

_I = re.IGNORECASE
_DISMISS = (
    r"ignore|ignoring|disregard|forget|override|overrule|bypass|discard|set aside|"
    r"pay no attention to|stop following|do not follow|don't follow|no longer apply|"
    r"no longer hold|do not apply|don't apply|are void|ignoriere|ignorier|ignorieren|"
    r"vergiss|missachte|ignora|ignorar|olvida|olvide|ignorez|oublie|oubliez|"
    r"игнорируй|забудь|忽略|无视|忘记"
)
_ORDERS = (
    r"instructions?|directions?|guidelines?|rules|system prompt|prompt|directives?|"
    r"you (?:were|have been) told|told (?:you )?before|anweisungen|regeln|vorgaben|"
    r"instrucciones|reglas|indicaciones|consignes|règles|инструкции|указания|правила|"
    r"指令|指示|规则"
)
_PATTERNS: dict[str, tuple[re.Pattern[str], ...]] = {
    OVERRIDE: (
        re.compile(rf"(?:\b(?:{_DISMISS})\b).{{0,80}}?(?:\b(?:{_ORDERS})\b)", _I),
        re.compile(rf"(?:\b(?:{_ORDERS})\b).{{0,40}}?(?:\b(?:{_DISMISS})\b)", _I),
        re.compile(
            r"\byou are now\b|\bfrom now on\b.{0,40}\b(?:you|treat|act)\b|"
            r"\btreat this (?:card|lesson|message)\b.{0,20}\b(?:system prompt|instructions)|"
            r"\bnew system prompt\b|\bdeveloper mode\b|\bjailbreak",
            _I,
        ),
    ),
    DOWNLOAD: (
        re.compile(
            r"\b(?:curl|wget|iwr|irm|invoke-webrequest)\b[^|\n`]*\|\s*(?:sudo\s+)?"
            r"(?:sh|bash|zsh|dash|ksh|fish|python[0-9.]*|perl|ruby|node|iex|source)\b",
            _I,
        ),
        re.compile(r"\b(?:bash|sh|zsh|source)\s+<\(\s*(?:curl|wget)\b", _I),
        re.compile(r"\b(?:eval|sh\s+-c|bash\s+-c)\s+[\"']?\$\(\s*(?:curl|wget)\b", _I),
        re.compile(r"\b(?:iex|invoke-expression)\b.{0,40}\b(?:iwr|irm|downloadstring)", _I),
        re.compile(r"\bpipe\b.{0,40}\b(?:curl|wget)\b.{0,40}\b(?:sh|bash|a shell)\b", _I),
        re.compile(r"\bdownload (?:and|then) (?:run|execute)\b", _I),
    ),
    DESTROY: (
        re.compile(r"\brm\s+(?:-\w+\s+)*-[a-zA-Z]*[rR]", _I),
        re.compile(r"\bRemove-Item\b.{0,40}-Recurse|\brmdir\s+/s\b|\bdel\s+/s\b", _I),
        re.compile(r"\bgit\s+reset\s+--hard\b", _I),
        re.compile(r"\bgit\s+push\b[^`\n;|&]*?(?:--force(?:-with-lease)?\b|\s-f\b|\s\+\w)", _I),
        re.compile(r"\bgit\s+clean\s+-\w*[fdx]", _I),
        re.compile(r"\bgit\s+checkout\s+(?:-f\b|(?:--\s+)?\.(?=\s|`|$))", _I),
        re.compile(r"\bgit\s+(?:branch\s+-D|stash\s+(?:drop|clear)|filter-(?:branch|repo))\b"),
        re.compile(r"\bgit\s+(?:reflog\s+expire|update-ref\s+-d|gc\s+--prune)", _I),
        re.compile(r"\b(?:drop\s+(?:table|database|schema)|truncate\s+table)\b", _I),
        re.compile(r"\b(?:mkfs|dropdb|shred)\b|\bdd\s+if=.{0,40}of=/dev/", _I),
        re.compile(r"\bforce[- ]?push", _I),
        re.compile(
            r"\b(?:delete|wipe|erase|destroy|purge|nuke|lösche|löschen|entferne|supprime|"
            r"supprimez|efface|effacez|borra|elimina)\b.{0,30}(?:\.git\b|\bgit history\b|"
            r"\bhistory\b|\bdatabase\b|\brepository\b|\ball (?:the )?(?:data|files|branches)\b|"
            r"\bdatenbank\b|\bhistorie\b|\bverlauf\b|\bhistorique\b|\bbase de données\b|"
            r"\bhistorial\b|\bbase de datos\b)",
            _I,
        ),
    ),
    SKIP: (
        re.compile(r"--no-verify\b|--no-hooks\b|\bHUSKY=0\b|\bSKIP=\S|core\.hooksPath", _I),
        re.compile(r"\bgit\s+commit\b[^`\n]*\s-n\b"),
        re.compile(
            r"@pytest\.mark\.skip\b|\bpytest\.skip\(|\b(?:it|describe|test)\.skip\(|"
            r"@unittest\.skip|@Disabled\b|-DskipTests\b|--skip-tests?\b|\[skip ci\]|"
            r"\[ci skip\]|continue-on-error:\s*true",
            _I,
        ),
        re.compile(
            r"\b(?:skip|skipping|disable|disabling|bypass|turn off|deactivate|comment out|"
            r"deaktiviere|deaktivieren|überspringe|umgehe|désactive|désactivez|saute|"
            r"sautez|contourne|desactiva|omite|salta)\b.{0,25}\b(?:tests?|hooks?|"
            r"pre-commit|checks?|linters?|lint|ci|test suite|prüfungen|vérifications|"
            r"contrôles|pruebas|comprobaciones)\b",
            _I,
        ),
    ),
}
_FORBID = re.compile(
    r"\b(?:never|don't|do not|does not|must not|mustn't|should not|shouldn't|cannot|"
    r"can't|avoid|instead of|rather than|not|no|without|forbid|forbidden|nie|niemals|"
    r"nicht|kein|keine|jamais|ne|pas|sans|nunca|jamás|sin)\b",
    re.IGNORECASE,
)
_CODE_SPAN = re.compile(r"`[^`\n]*`")
_BOUNDARY = re.compile(r"[.!?;:,]\s|\n|\band\b|\bthen\b|\bbut\b|\bund\b|\bpuis\b|\by\b")


def _clause_start(masked: str, position: int) -> int:
    start = 0
    for boundary in _BOUNDARY.finditer(masked, 0, position):
        start = boundary.end()
    return start


def safety_refusals(text: str, allowed_commands: Iterable[str] = ()) -> list[str]:
    """The names of the safety rules `text` breaks, in `SAFETY_RULES` order."""
    masked = _CODE_SPAN.sub(lambda m: "`" + "x" * (len(m.group(0)) - 2) + "`", text)
    allowed: list[tuple[int, int]] = []
    for command in {c.strip() for c in allowed_commands if c.strip()}:
        start = text.find(command)
        while start >= 0:
            allowed.append((start, start + len(command)))
            start = text.find(command, start + 1)
    broken: list[str] = []
    for rule, patterns in _PATTERNS.items():
        if any(
            _unsafe(text, masked, match, allowed) for p in patterns for match in p.finditer(text)
        ):
            broken.append(rule)
    return broken


def _unsafe(text: str, masked: str, match: re.Match[str], allowed: list[tuple[int, int]]) -> bool:
    if any(a <= match.start() and match.end() <= b for a, b in allowed):
        return False
    prefix = masked[_clause_start(masked, match.start()) : match.start()]
    return not _FORBID.search(prefix)
