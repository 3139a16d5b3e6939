"""Precision and recall of the duplicate check on `bench/duplicates_corpus.json`.

    python bench/duplicates_bench.py [--corpus FILE]

Prints the figures at the default `DuplicateLimits`, then a sweep of the threshold for
lessons that share an association, so a change of the defaults can be judged.
"""

from __future__ import annotations

import argparse
import json
import time
from pathlib import Path
from typing import Any

from active_memory.lessons import Associations, Card
from active_memory.quality.duplicates import (
    DuplicateLimits,
    is_duplicate,
    shared_associations,
    text_similarity,
)

CORPUS = Path(__file__).with_name("duplicates_corpus.json")


def _card(data: dict[str, Any]) -> Card:
    return Card(
        title=data["title"],
        recommendation=data["recommendation"],
        associations=Associations(files=data["files"]),
    )


def load(path: Path) -> list[tuple[float, tuple[str, ...], bool]]:
    """Per pair: text similarity, shared associations, and whether it is a duplicate."""
    pairs = json.loads(path.read_text(encoding="utf-8"))["pairs"]
    scored = []
    for pair in pairs:
        a, b = _card(pair["a"]), _card(pair["b"])
        scored.append(
            (text_similarity(a, b), shared_associations(a.associations, b.associations),
             bool(pair["duplicate"]))
        )  # fmt: skip
    return scored


def figures(
    scored: list[tuple[float, tuple[str, ...], bool]], limits: DuplicateLimits
) -> tuple[float, float, int, int, int]:
    """Precision, recall, true positives, false positives, false negatives."""
    tp = fp = fn = 0
    for score, shared, truth in scored:
        said = is_duplicate(score, shared, limits)
        tp += said and truth
        fp += said and not truth
        fn += truth and not said
    precision = tp / (tp + fp) if tp + fp else 1.0
    recall = tp / (tp + fn) if tp + fn else 1.0
    return precision, recall, tp, fp, fn


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--corpus", type=Path, default=CORPUS)
    args = parser.parse_args()
    started = time.perf_counter()
    scored = load(args.corpus)
    elapsed = time.perf_counter() - started
    positives = sum(truth for _, _, truth in scored)
    print(f"corpus: {len(scored)} pairs ({positives} duplicates), scored in {elapsed * 1e3:.1f} ms")
    limits = DuplicateLimits()
    precision, recall, tp, fp, fn = figures(scored, limits)
    print(
        f"defaults (shared association >= {limits.with_shared_association:g}, "
        f"text alone >= {limits.text_alone:g}): precision {precision:.2f}, recall {recall:.2f} "
        f"(tp {tp}, fp {fp}, fn {fn})"
    )
    print("sweep of with_shared_association:")
    for threshold in (50, 55, 60, 64, 68, 72, 76, 80):
        swept = DuplicateLimits(with_shared_association=threshold, text_alone=limits.text_alone)
        precision, recall, tp, fp, fn = figures(scored, swept)
        print(
            f"  {threshold:>3}: precision {precision:.2f}, recall {recall:.2f} (fp {fp}, fn {fn})"
        )


if __name__ == "__main__":
    main()
