"""The citation checks every answer passes (SPEC §5, §6): current files, line ranges
inside them (rule `citation-lines`), and an association that matches a cited file."""

from __future__ import annotations

from collections.abc import Iterable, Sequence

from active_memory.checkout import Checkout, CitationVerdict
from active_memory.lessons import Associations, Citation


class Paths:
    """Citation verdicts of one checkout, asked from git in as few calls as possible."""

    def __init__(self, checkout: Checkout) -> None:
        self.checkout = checkout
        self._known: dict[str, CitationVerdict] = {}
        self._lines: dict[str | None, int | None] = {}

    def prefetch(self, paths: Iterable[str]) -> None:
        missing = [p for p in dict.fromkeys(paths) if p not in self._known]
        if missing:
            self._known.update(self.checkout.check_paths(missing))

    def verdict(self, path: str) -> CitationVerdict:
        self.prefetch([path])
        return self._known[path]

    def read(self, path: str) -> str | None:
        """The text of a current root-level or nested file of the checkout, or None."""
        verdict = self.verdict(path)
        if not verdict.current or verdict.file is None:
            return None
        try:
            return (self.checkout.root / verdict.file).read_text(encoding="utf-8")[:65536]
        except (OSError, UnicodeDecodeError):
            return None

    def line_count(self, verdict: CitationVerdict) -> int | None:
        if verdict.file not in self._lines:
            self._lines[verdict.file] = self.checkout.line_count(verdict)
        return self._lines[verdict.file]


def current_citations(
    citations: Sequence[Citation],
    associations: Associations,
    paths: Paths | None,
    path: str,
    reasons: list[str],
    *,
    need_match: bool,
) -> None:
    """The citation checks every answer passes (SPEC §5, §6), discovery's and the
    citations of a keep or an adapt alike: each cites a current file of the checkout,
    its line range lies inside that file as it is now, and (`need_match`: a repository
    lesson) an association of the lesson matches a cited file."""
    if not citations:
        if need_match:
            reasons.append(f"{path}.citations: a repository lesson must cite a current file")
        return
    if paths is None:
        reasons.append(f"{path}.citations: no checkout to verify them against")
        return
    matched: list[str] = []
    misses: list[str] = []
    current = 0
    for position, citation in enumerate(citations):
        verdict = paths.verdict(citation.path)
        where = f"{path}.citations[{position}]"
        if not verdict.current:
            reasons.append(f"{where}: not a current file: {verdict.reason}")
            continue
        if citation.lines is not None:
            count = paths.line_count(verdict)
            if count is None:
                reasons.append(f"{where}: {verdict.path} cannot be read to check its lines")
                continue
            if citation.lines[1] > count:
                first, last = citation.lines
                reasons.append(
                    f"{where}: citation-lines: lines {first}-{last} are not inside {verdict.path}, "
                    f"which has {count} lines now"
                )
                continue
        current += 1
        if need_match:
            match = paths.checkout.match_association(
                verdict,
                files=associations.files,
                folders=associations.folders,
                identifiers=associations.identifiers,
            )
            (matched if match.matched else misses).append(match.reason)
    if need_match and current and not matched:
        reasons.append(f"{path}.associations: none matches a cited file ({misses[0]})")
