"""The credential screen against a corpus of real formats and look-alikes.

    python bench/secrets_bench.py [--corpus FILE]

Three screens on `tests/fixtures/secrets/corpus.json` (synthetic secrets in each
provider's public format; look-alikes are prose, paths, hashes and placeholders):

- `hand-written`: the rules before issue 17 (`bench/secrets_baseline.py`, kept as the
  baseline);
- `detect-secrets`: the library alone, every default plugin and filter, scanning a file
  through its public interface (a development dependency: the screen never imports it);
- `screen`: `active_memory.credentials` (our own rules, `credential_formats.py`).

A secret counts as detected when the screen flags its text and, for the screens that
mask, when no 8-character run of the secret value survives the masked text. Prints the
counts and the misses / false positives of each screen.
"""

from __future__ import annotations

import argparse
import json
import re
import sys
from collections.abc import Callable
from pathlib import Path

sys.path.insert(0, str(Path(__file__).parent))

import secrets_baseline

from active_memory import credentials as secrets

CORPUS = Path(__file__).parents[1] / "tests" / "fixtures" / "secrets" / "corpus.json"


def _detect_secrets() -> Callable[[str], bool]:
    """detect-secrets as its users run it: every default plugin and filter over a file."""
    import tempfile

    from detect_secrets.core.secrets_collection import SecretsCollection
    from detect_secrets.settings import default_settings

    folder = Path(tempfile.mkdtemp(prefix="secrets-bench-"))

    def flags(text: str) -> bool:
        path = folder / "lesson.txt"
        path.write_text(text + "\n", encoding="utf-8")
        found = SecretsCollection()
        with default_settings():
            found.scan_file(str(path))
        return bool(list(found))

    return flags


def _leaks(masked: str, text: str) -> bool:
    # Secret-shaped runs of the text (10+ characters mixing letters and digits; names
    # like ANTHROPIC_API_KEY have no digit): any still in the masked text is a leak.
    runs = re.findall(r"[A-Za-z0-9+/_\-.!&]{10,}", text)
    shaped = [r for r in runs if re.search(r"[0-9]", r) and re.search(r"[A-Za-z]", r)]
    return any(run in masked for run in shaped if "://" not in run)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--corpus", type=Path, default=CORPUS)
    corpus = json.loads(parser.parse_args().corpus.read_text(encoding="utf-8"))
    real = [entry["text"] for entry in corpus["secrets"]]
    lookalikes: list[str] = corpus["lookalikes"]
    screens: dict[str, tuple[Callable[[str], bool], Callable[[str], str] | None]] = {
        "hand-written": (lambda t: bool(secrets_baseline.find_secrets(t)), secrets_baseline.mask),
        "detect-secrets": (_detect_secrets(), None),
        "screen": (lambda t: bool(secrets.find_secrets(t)), secrets.mask),
    }
    print(f"corpus: {len(real)} real formats, {len(lookalikes)} look-alikes\n")
    print(f"{'screen':<16}{'detected':>10}{'masked':>9}{'false pos.':>12}")
    details: list[str] = []
    for name, (flags, mask) in screens.items():
        detected = [t for t in real if flags(t)]
        masked = [t for t in detected if not _leaks(mask(t), t)] if mask is not None else detected
        false = [t for t in lookalikes if flags(t)]
        shown = f"{len(masked)}/{len(real)}" if mask is not None else "-"
        print(
            f"{name:<16}{len(detected):>7}/{len(real):<3}{shown:>8}{len(false):>9}/{len(lookalikes)}"
        )
        details += [f"  {name} misses: {t[:70]!r}" for t in real if t not in detected]
        details += [f"  {name} false positive: {t[:70]!r}" for t in false]
    print("\n" + "\n".join(details))


if __name__ == "__main__":
    main()
