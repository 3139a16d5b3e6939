"""Identifiers and terms: the words of a tool call that recall matches identifier and
keyword associations on (SPEC §8).

`identifiers_in` finds whole names in a search pattern, glob or query (regex escapes
read first); `split_terms` splits a name or path (snake_case, camelCase, PascalCase,
kebab-case) into the lowercase terms keyword groups are made of. Pure text: nothing is
read; standard library only (the hook's per-call path).
"""

from __future__ import annotations

_WORD_EXTRA = "_$"


def _is_word_char(ch: str) -> bool:
    return ch.isalnum() or ch in _WORD_EXTRA


def identifiers_in(text: str) -> list[str]:
    """Whole identifiers in a pattern: `\\bhandle_checkout\\(` → `handle_checkout`.

    Regex escapes are read first (`\\s`, `\\b`, `\\w` separate; `\\.` is a dot), so a
    class escape never glues onto a name. Dotted and `::` names are kept whole as well as
    in parts (`os.path.join` → `os.path.join`, `os`, `path`, `join`). One-character names
    are not identifiers.
    """
    cleaned: list[str] = []
    i, n = 0, len(text)
    while i < n:
        ch = text[i]
        if ch == "\\" and i + 1 < n:
            following = text[i + 1]
            cleaned.append(" " if following.isalnum() else following)
            i += 2
            continue
        cleaned.append(ch)
        i += 1
    plain = "".join(cleaned)
    found: dict[str, None] = {}
    i, n = 0, len(plain)
    while i < n:
        if not _is_word_char(plain[i]):
            i += 1
            continue
        start, parts, j = i, [], i
        while True:
            k = j
            while k < n and _is_word_char(plain[k]):
                k += 1
            parts.append(plain[j:k])
            if plain.startswith("::", k) and k + 2 < n and _is_word_char(plain[k + 2]):
                j = k + 2
            elif plain.startswith(".", k) and k + 1 < n and _is_word_char(plain[k + 1]):
                j = k + 1
            else:
                break
        for part in parts:
            if len(part) > 1 and not part[0].isdigit():
                found[part] = None
        if len(parts) > 1 and not plain[start].isdigit():
            found[plain[start:k]] = None
        i = k
    return list(found)


def split_terms(text: str) -> list[str]:
    """Lowercase terms of a name or path: `parseHTTPResponse_v2` → parse, http, response, v2.

    Whole tokens are kept too (`api-client` → `api-client`, `api`, `client`), since a
    keyword term may contain `_ . + -`.
    """
    terms: list[str] = []
    token: list[str] = []
    for ch in text + " ":
        if ch.isalnum() or ch in "_.+-":
            token.append(ch)
            continue
        if token:
            _token_terms("".join(token), terms)
            token = []
    return terms


def _token_terms(token: str, terms: list[str]) -> None:
    whole = token.strip("._+-").lower()
    if whole and whole[0].isalnum():
        terms.append(whole)
    piece: list[str] = []
    previous = ""
    for position, ch in enumerate(token):
        if not ch.isalnum():
            if piece:
                terms.append("".join(piece).lower())
            piece = []
            previous = ""
            continue
        following = token[position + 1] if position + 1 < len(token) else ""
        boundary = bool(piece) and (
            (ch.isupper() and (previous.islower() or previous.isdigit()))
            or (ch.isupper() and previous.isupper() and following.islower())
        )
        if boundary:
            terms.append("".join(piece).lower())
            piece = []
        piece.append(ch)
        previous = ch
    if piece:
        terms.append("".join(piece).lower())
