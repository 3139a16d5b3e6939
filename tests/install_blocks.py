"""The install and set-up blocks of the README and docs/loop.md, run verbatim in a clean
folder with an empty HOME (issue 29 item 5; docs/testing.md, "The install blocks").

A block is marked by an HTML comment (invisible on GitHub) on the line before its fence:

    <!-- ci: run this block -->            the whole block
    <!-- ci: run line 1 of this block -->  its first line only

The README's first block holds the example's line (run) and the test line, which is
`.ci/run`'s own test step (running the suite twice would double CI's time).

Each block runs on its own: a copy of the checkout (the files `git ls-files` lists, as
they are in the working tree, so uncommitted edits are tried too) in a new temporary
folder, an empty HOME beside it, `bash -e -x` on the block's text with the copy as the
current folder, a PATH without any harness binary or `active-memory`, and pip's
machine configuration (`PIP_*`, proxies) plus a download cache
(`--pip-cache`, default `$ACTIVE_MEMORY_TEST_PIP_CACHE`, else `.ci/.pip-cache`).

    python tests/install_blocks.py [--pip-cache DIR] [--keep] [--list]

Exit 0 when every block succeeded; 1 when one failed (its file and line are named);
2 when the marks themselves are wrong (a mark before no ```bash fence, a file without
any mark).
"""

from __future__ import annotations

import argparse
import os
import re
import shutil
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
FILES = ("README.md", "docs/loop.md")
"""The files whose marked blocks CI runs; each must mark at least one."""
MARK = re.compile(r"^<!-- ci: run (?:line (?P<line>\d+) of )?this block -->\s*$")
HARNESS_BINARIES = ("claude", "codex", "opencode", "pi", "gemini", "copilot", "hermes")
PASSED_ON = ("LANG", "TMPDIR", "http_proxy", "https_proxy", "no_proxy",
             "HTTP_PROXY", "HTTPS_PROXY", "NO_PROXY")  # fmt: skip
"""What the clean run keeps of this environment besides `PIP_*`: the machine's pip
configuration and proxies are the machine's, not the user's."""
TIMEOUT = 900


class MarkError(ValueError):
    """A mark that names no block, or a file without marks."""


@dataclass(frozen=True, slots=True)
class Block:
    """A marked block: where it is and the commands to run."""

    source: str
    line: int
    """The line of the fence that opens it (1-based)."""
    script: str

    @property
    def where(self) -> str:
        """`file:line`."""
        return f"{self.source}:{self.line}"


def marked_blocks(text: str, source: str) -> list[Block]:
    """The marked blocks of one Markdown text, in order. Raises `MarkError` for a mark
    not followed (on its next line) by a ```bash fence, an unclosed fence, or a line
    number the block does not have."""
    lines = text.splitlines()
    blocks: list[Block] = []
    for number, line in enumerate(lines, start=1):
        found = MARK.match(line)
        if not found:
            continue
        if number >= len(lines) or lines[number].strip() not in ("```bash", "```sh"):
            raise MarkError(f"{source}:{number}: the mark must be followed by a ```bash fence")
        end = next((i for i in range(number + 1, len(lines)) if lines[i].strip() == "```"),
                   None)  # fmt: skip
        if end is None:
            raise MarkError(f"{source}:{number + 1}: the fence is never closed")
        body = lines[number + 1 : end]
        if found.group("line"):
            index = int(found.group("line"))
            if not 1 <= index <= len(body):
                raise MarkError(f"{source}:{number}: the block has no line {index}")
            body = [body[index - 1]]
        blocks.append(Block(source, number + 1, "\n".join(body) + "\n"))
    return blocks


def all_blocks(root: Path = ROOT) -> list[Block]:
    """Every marked block of `FILES`; `MarkError` when a file marks none."""
    blocks: list[Block] = []
    for name in FILES:
        found = marked_blocks((root / name).read_text(encoding="utf-8"), name)
        if not found:
            raise MarkError(f"{name}: no block is marked `<!-- ci: run this block -->`")
        blocks.extend(found)
    return blocks


def copy_checkout(root: Path, into: Path) -> None:
    """The checkout's files (tracked, and new ones git does not ignore) copied into `into`."""
    listed = subprocess.run(
        ["git", "-C", str(root), "ls-files", "-z", "--cached", "--others", "--exclude-standard"],
        capture_output=True, check=True,
    ).stdout.decode("utf-8").split("\0")  # fmt: skip
    for name in filter(None, listed):
        source = root / name
        if not os.path.lexists(source):  # deleted in the working tree
            continue
        target = into / name
        target.parent.mkdir(parents=True, exist_ok=True)
        if source.is_symlink():
            target.symlink_to(os.readlink(source))
        else:
            shutil.copy2(source, target)


def clean_path(search: str) -> str:
    """`search` without the folders that hold a harness binary or an `active-memory`
    (a clean machine has neither), nor anything inside this checkout."""
    kept = []
    for entry in search.split(os.pathsep):
        folder = os.path.abspath(entry) if entry else ""
        if not folder or folder.startswith(str(ROOT) + os.sep):
            continue
        if any(os.path.exists(os.path.join(folder, name))
               for name in (*HARNESS_BINARIES, "active-memory")):  # fmt: skip
            continue
        if folder not in kept:
            kept.append(folder)
    result = os.pathsep.join(kept)
    for needed in ("python3", "git", "bash"):
        if shutil.which(needed, path=result) is None:
            raise SystemExit(f"install_blocks: no {needed} on the clean PATH {result!r} (the "
                             "folders holding a harness binary were left out)")  # fmt: skip
    return result


def environment(home: Path, pip_cache: Path) -> dict[str, str]:
    """The clean run's environment: an empty HOME, a clean PATH, pip's configuration."""
    env = {name: os.environ[name] for name in PASSED_ON if name in os.environ}
    env.update({k: v for k, v in os.environ.items() if k.startswith("PIP_")})
    env.update(HOME=str(home), PATH=clean_path(os.environ.get("PATH", os.defpath)),
               PIP_CACHE_DIR=str(pip_cache), LANG=env.get("LANG", "C.UTF-8"))  # fmt: skip
    return env


def run_block(block: Block, pip_cache: Path, *, keep: bool) -> bool:
    """Run one block in a fresh copy with an empty HOME; True when it succeeded."""
    folder = Path(tempfile.mkdtemp(prefix="am-install-block-"))
    try:
        checkout, home = folder / "active-memory", folder / "home"
        home.mkdir()
        copy_checkout(ROOT, checkout)
        script = folder / "block.sh"
        script.write_text(block.script, encoding="utf-8")
        print(f"== {block.where}, in {checkout} with HOME={home}:\n{block.script}", flush=True)
        started = time.monotonic()
        try:
            done = subprocess.run(["bash", "-e", "-x", str(script)], cwd=checkout,
                                  env=environment(home, pip_cache), timeout=TIMEOUT,
                                  check=False)  # fmt: skip
            code = done.returncode
        except subprocess.TimeoutExpired:
            code = -1
        seconds = time.monotonic() - started
        if code != 0:
            print(f"== {block.where} FAILED (exit {code}) after {seconds:.0f} s", flush=True)
            return False
        print(f"== {block.where} ok ({seconds:.0f} s)", flush=True)
        return True
    finally:
        if keep:
            print(f"   kept {folder}")
        else:
            shutil.rmtree(folder, ignore_errors=True)


def main(argv: list[str] | None = None) -> int:
    """Run every marked block (see the module); the exit code says how it went."""
    parser = argparse.ArgumentParser(prog="install_blocks", description=__doc__.split("\n")[0])
    parser.add_argument("--pip-cache", type=Path, default=None, help="pip's download cache")
    parser.add_argument("--keep", action="store_true", help="keep each block's folder")
    parser.add_argument("--list", action="store_true", help="print the blocks; run nothing")
    args = parser.parse_args(argv)
    try:
        blocks = all_blocks()
    except MarkError as exc:
        print(f"install_blocks: {exc}", file=sys.stderr)
        return 2
    if args.list:
        for block in blocks:
            print(f"== {block.where}\n{block.script}")
        return 0
    configured = os.environ.get("ACTIVE_MEMORY_TEST_PIP_CACHE")
    cache = args.pip_cache or (Path(configured) if configured else ROOT / ".ci" / ".pip-cache")
    cache.mkdir(parents=True, exist_ok=True)
    failed = [block.where for block in blocks if not run_block(block, cache, keep=args.keep)]
    if failed:
        print(f"install_blocks: failed: {', '.join(failed)}", file=sys.stderr)
        return 1
    print(f"install_blocks: {len(blocks)} block(s) ran verbatim and succeeded")
    return 0


if __name__ == "__main__":
    sys.exit(main())
