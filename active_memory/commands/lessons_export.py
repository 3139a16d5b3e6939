"""`active-memory lessons export`: JSON Lines, or the rules files agents read
(docs/export.md)."""

from __future__ import annotations

import argparse
import sys
from typing import TYPE_CHECKING, Any

from active_memory.commands.common import add_json_option, add_store_option, print_json
from active_memory.commands.lessons_store import run_or_empty

if TYPE_CHECKING:
    from active_memory.lessons import Lesson, Tombstone
    from active_memory.store import LessonStore

RULES_FORMATS = ("agents-md", "claude-md", "cursor-rules", "skill")


def add_export_parser(actions: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    """Add `lessons export`."""
    export = actions.add_parser(
        "export",
        help="every lesson as JSON Lines (tombstones too), or a scope's active lessons as "
        "AGENTS.md / CLAUDE.md sections, Cursor rules or an Agent Skill, within a byte budget",
        description="JSON Lines (the default) is the store's own format: `lessons import` "
        "reads it back, which is how a team shares lessons through git. The other formats "
        "write the active repository lessons of one namespace as the rules files agents "
        "already read (docs/export.md), filled by the most effective, non-stale lessons "
        "first up to a byte budget, with a line saying how many were left out; a "
        "re-export replaces only what is ours.",
    )
    export.add_argument("-o", "--output", metavar="FILE", help="jsonl: write here, not stdout")
    export.add_argument(
        "--format",
        choices=["jsonl", *RULES_FORMATS],
        default="jsonl",
        help="jsonl (default); agents-md, claude-md: our section of AGENTS.md / CLAUDE.md; "
        "cursor-rules: .cursor/rules/active-memory-<folder>.mdc; skill: an Agent Skill "
        "folder where --client loads skills",
    )
    export.add_argument(
        "--scope",
        metavar="NAMESPACE",
        help="the repository namespace (repo:…) to export (default with a rules format: "
        "the checkout holding --dir); jsonl: only this namespace's lessons",
    )
    export.add_argument(
        "--dir",
        metavar="DIR",
        help="rules formats: where to write (default: the root of the current checkout; "
        "skill: the client's skills folder there)",
    )
    export.add_argument(
        "--max-bytes",
        type=_budget,
        metavar="N",
        help="rules formats: the byte budget (default 32768 for agents-md, claude-md and "
        "cursor-rules, 262144 for skill; suffixes K and KiB allowed). AGENTS.md and "
        "CLAUDE.md count the whole file, your own text included",
    )
    export.add_argument(
        "--stale",
        choices=["mark", "omit"],
        default="mark",
        help="rules formats: lessons whose cited code changed are marked and placed after "
        "every other lesson (mark, the default), or left out (omit)",
    )
    export.add_argument(
        "--client",
        choices=["claude", "codex"],
        default="claude",
        help="skill: whose skills folder to write to (claude: .claude/skills, codex: "
        ".agents/skills; default claude)",
    )
    add_json_option(export)
    add_store_option(export)
    export.set_defaults(handler=export_lessons)


def _budget(text: str) -> int:
    from active_memory.exports import MIN_BUDGET

    raw = text.strip()
    factor = 1
    for suffix in ("KiB", "kib", "K", "k"):
        if raw.endswith(suffix):
            raw, factor = raw[: -len(suffix)], 1024
            break
    try:
        value = int(raw) * factor
    except ValueError:
        value = 0
    if value < MIN_BUDGET:
        raise argparse.ArgumentTypeError(
            f"expected a number of bytes of at least {MIN_BUDGET} (e.g. 32768 or 32K), got {text!r}"
        )
    return value


def export_lessons(args: argparse.Namespace) -> int:
    """`lessons export`: JSON Lines to a file or stdout, or a rules format."""
    from active_memory.errors import UsageError
    from active_memory.store import LessonQuery

    if args.format != "jsonl":
        return _export_rules(args)
    for option, given in (("--dir", args.dir), ("--max-bytes", args.max_bytes)):
        if given is not None:
            raise UsageError(f"{option}: only with a rules --format; jsonl writes every lesson")

    async def job(store: LessonStore) -> list[Lesson | Tombstone]:
        found = await store.select(LessonQuery(include_retired=True))
        return [item for item in found if args.scope is None or _of(item, args.scope)]

    found: list[Lesson | Tombstone] = run_or_empty(args, job)
    import json

    from active_memory.credential_gate import mask_value

    # The one screen where lessons leave the store (a lesson stored before the screen
    # existed may hold a credential); a clean lesson is written exactly as before.
    lines = "".join(
        json.dumps(
            mask_value(item.model_dump(mode="json")), ensure_ascii=False, separators=(",", ":")
        )
        + "\n"
        for item in found
    )
    if args.output:
        from active_memory.atomic_files import write_output_file

        write_output_file(args.output, lines)
        print(f"exported {len(found)} lessons to {args.output}", file=sys.stderr)
    else:
        sys.stdout.write(lines)
    return 0


def _of(item: Lesson | Tombstone, namespace: str) -> bool:
    return item.scope.repository == namespace


def _export_rules(args: argparse.Namespace) -> int:
    import os
    from pathlib import Path

    from active_memory.errors import UsageError
    from active_memory.exports import export
    from active_memory.lessons import Lesson
    from active_memory.recall.environment import find_checkout_root, repository_namespace
    from active_memory.store import LessonQuery
    from active_memory.store.effectiveness import Effectiveness

    if args.output:
        raise UsageError(f"-o: not with --format {args.format}; use --dir DIR")
    folder = os.path.abspath(args.dir or os.getcwd())
    if os.path.exists(folder) and not os.path.isdir(folder):
        raise UsageError(f"--dir {args.dir}: is a file, not a folder")
    existing = folder  # a --dir to be made: its checkout is the one of its nearest parent
    while not os.path.isdir(existing):
        existing = os.path.dirname(existing)
    root = find_checkout_root(existing)
    here = repository_namespace(root) if root else None
    namespace = args.scope or here
    if not namespace:
        raise UsageError(
            "no repository here to export for: run inside a checkout or pass --scope repo:…"
        )
    target = Path(folder if args.dir else (root or folder))
    if args.format == "skill" and not args.dir:
        from active_memory.skills import skills_root

        target = skills_root(args.client, "project", target)

    async def job(store: LessonStore) -> tuple[list[Lesson], dict[str, Effectiveness]]:
        found = await store.select(LessonQuery(repository=namespace, kind="repository"))
        living = [item for item in found if isinstance(item, Lesson) and item.status == "active"]
        return living, await store.effectiveness([lesson.id for lesson in living])

    lessons, counters = run_or_empty(args, job) or ([], {})
    try:
        target.mkdir(parents=True, exist_ok=True)  # --dir is made, as -o's folder is not
    except OSError as exc:
        raise UsageError(f"--dir {args.dir}: cannot create it ({exc.strerror})") from None
    # Staleness is judged against the exported repository's own checkout: this one when
    # it is that repository's, else the one this machine knows (known_checkouts).
    from active_memory.known_checkouts import KnownCheckouts

    judged_in = KnownCheckouts([root] if root is not None else []).root(namespace)
    stale = _stale(str(judged_in), lessons) if judged_in is not None else None
    result = export(
        args.format,
        lessons,
        namespace,
        target,
        effectiveness=counters,
        stale=stale,
        stale_mode=args.stale,
        budget=args.max_bytes,
    )
    if args.format == "skill" and root is not None:
        from active_memory.exports.skill import remove_legacy

        result.files += remove_legacy(Path(root), target)
    if args.json:
        print_json(
            {
                "format": args.format,
                "scope": namespace,
                "lessons": [c.lesson.id for c in result.exported],
                "left_out": [lesson.id for lesson in result.left_out],
                "stale": {
                    "checked": stale is not None,
                    "marked": result.stale_marked,
                    "omitted": [lesson.id for lesson in result.stale_omitted],
                },
                "budget": result.budget,
                "bytes": result.size,
                "files": [{"path": str(w.path), "action": w.action} for w in result.files],
            }
        )
        return 0
    _say(args, namespace, result, stale is not None)
    return 0


def _stale(root: str, lessons: list[Lesson]) -> dict[str, str]:
    """Lesson ID → what changed (`src/a.py:3-9 lines changed`), for the stale ones."""
    from active_memory.checkout import Checkout, NotACheckout
    from active_memory.checkout.staleness import stale_lessons

    try:
        checkout = Checkout(root)
    except NotACheckout:
        return {}
    found = stale_lessons(checkout, lessons)
    return {
        lesson_id: "; ".join(
            f"{c.citation.path}{_lines(c.citation.lines)} {c.why}" for c in changed
        )
        for lesson_id, changed in found.items()
    }


def _lines(lines: tuple[int, int] | None) -> str:
    if lines is None:
        return ""
    return f":{lines[0]}" if lines[0] == lines[1] else f":{lines[0]}-{lines[1]}"


def _say(args: argparse.Namespace, namespace: str, result: Any, checked: bool) -> None:
    """The export in a few lines for people."""
    from active_memory.exports.entries import kib

    changed = [w for w in result.files if w.action != "unchanged"]
    print(
        f"exported {len(result.exported)} lessons of {namespace} as {args.format} "
        f"({kib(result.size)} of a {kib(result.budget)} budget): {len(changed)} files "
        f"changed, {len(result.files) - len(changed)} unchanged"
    )
    for item in changed:
        print(f"  {item.action} {item.path}")
    if result.left_out:
        print(
            f"{len(result.left_out)} lessons left out ({len(result.stale_omitted)} stale); "
            f"see them with `active-memory lessons list --repository {namespace}`, or "
            "raise --max-bytes"
        )
    if result.stale_marked:
        print(f"{len(result.stale_marked)} exported lessons are marked as possibly outdated")
    if not checked:
        print(
            f"staleness not checked: no checkout of {namespace} known here; run it inside "
            "one, or pass --dir DIR inside it",
            file=sys.stderr,
        )
    if result.size > result.budget:
        print(
            f"warning: the file is {kib(result.size)}, over its {kib(result.budget)} budget, "
            "by its own text alone; readers may not load all of it",
            file=sys.stderr,
        )
