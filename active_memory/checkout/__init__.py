"""Questions about the current files of a git checkout (SPEC §5 citations).

`Checkout(path)` finds the working tree; `check_paths` says whether cited paths are
current files (typed `CitationVerdict`s with a reason); `match_association` says whether
a lesson's file, folder or identifier association matches a cited file.
"""

from __future__ import annotations

from active_memory.checkout.citations import AssociationMatch as AssociationMatch
from active_memory.checkout.citations import Checkout as Checkout
from active_memory.checkout.citations import CitationVerdict as CitationVerdict
from active_memory.checkout.citations import MatchKind as MatchKind
from active_memory.checkout.citations import PathStatus as PathStatus
from active_memory.checkout.git import GitFailed as GitFailed
from active_memory.checkout.git import NotACheckout as NotACheckout
from active_memory.checkout.identifiers import IdentifierScan as IdentifierScan
from active_memory.checkout.identifiers import scan_identifiers as scan_identifiers
from active_memory.checkout.paths import folder_contains as folder_contains
