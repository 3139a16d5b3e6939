"""The limits of a lesson (SPEC §5): sizes of its texts and how many associations it has.

Counted in UTF-8 bytes, because that is what a card costs in an agent's context, not in
characters. The specialists' prompts, the skills and the checks of an answer read these
constants; the fields that enforce them are in fields.py and associations.py.
"""

from __future__ import annotations

TITLE_MAX_BYTES = 96
RECOMMENDATION_MAX_BYTES = 640
REASON_MAX_BYTES = 640
PATH_MAX_BYTES = 512
IDENTIFIER_MAX_BYTES = 128
COMMAND_MAX_BYTES = 256
ASSOCIATIONS_MAX_PER_KIND = 32
KEYWORD_GROUP_MIN_TERMS = 2
KEYWORD_GROUP_MAX_TERMS = 4


def utf8_size(text: str) -> int:
    """Size of `text` in UTF-8 bytes."""
    return len(text.encode("utf-8"))
