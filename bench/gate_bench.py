"""The answer gate's precision and recall on the answer corpus, per half (issue 27).

    .venv/bin/python bench/gate_bench.py

A *positive* is a refusal: precision = bad answers refused / all answers refused, recall
= bad answers refused / all bad answers. A bad answer counts as caught only when the
rule its case names is among the refusal's rules. Prints one line per half.
"""

from __future__ import annotations

import sys
import tempfile
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "tests"))

from gate_corpus import HALVES, cases, judge, make_checkout


def main() -> None:
    """Judge every case and print the figures of each half."""
    with tempfile.TemporaryDirectory() as tmp:
        checkout = make_checkout(Path(tmp))
        for half in HALVES:
            caught = refused_good = bad = good = 0
            for case in cases(half):
                verdict = judge(case, checkout)
                if case["expect"] == "refused":
                    bad += 1
                    caught += (not verdict.published) and case["rule"] in verdict.rules
                else:
                    good += 1
                    refused_good += not verdict.published
            refused = caught + refused_good
            precision = caught / refused if refused else 1.0
            recall = caught / bad if bad else 1.0
            print(
                f"{half:9} bad {bad:3}  good {good:3}  precision {precision:.3f}  "
                f"recall {recall:.3f}  bad published {bad - caught}  good refused {refused_good}"
            )


if __name__ == "__main__":
    main()
