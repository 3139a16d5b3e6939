"""The install blocks CI runs verbatim (tests/install_blocks.py, docs/testing.md "The
install blocks"): which ones are marked, how a wrong mark is caught, the clean PATH; and
no document or error message installs the package from an index it is not on."""

from __future__ import annotations

import re
from pathlib import Path

import pytest
from install_blocks import (
    ROOT,
    MarkError,
    all_blocks,
    clean_path,
    copy_checkout,
    marked_blocks,
)

FROM_AN_INDEX = re.compile(r"pip install\s+['\"]?active[-_]memory\b")
"""`pip install active-memory…` by name: the package is on no index."""


def test_the_readme_starts_with_its_two_commands_and_ci_runs_the_first() -> None:
    lines = (ROOT / "README.md").read_text(encoding="utf-8").splitlines()
    assert lines[:3] == ["# Active Memory", "", "<!-- ci: run line 1 of this block -->"]
    assert lines[3] == "```bash" and lines[6] == "```"
    assert lines[4].endswith(".venv/bin/python examples/run_example.py")
    assert lines[5].endswith(".venv/bin/pytest")
    first = all_blocks()[0]
    assert (first.where, first.script) == ("README.md:4", lines[4] + "\n")


def test_the_marked_blocks_install_from_the_clone_and_run_setup() -> None:
    blocks = all_blocks()
    assert [block.source for block in blocks] == [
        "README.md", "README.md", "docs/loop.md", "docs/loop.md"
    ]  # fmt: skip
    for block in blocks[1:]:
        assert "~/.active-memory/bin/active-memory setup" in block.script, block.where
        assert "~/.active-memory/bin/pip install " in block.script, block.where
    assert "pip wheel --no-deps --wheel-dir dist ." in blocks[3].script
    # The README's install block and the loop's are the same commands.
    assert blocks[1].script.split() == [
        word for word in blocks[2].script.split() if not re.fullmatch(r"#|\d", word)
    ]


def test_no_document_or_message_installs_the_package_by_name() -> None:
    texts = [ROOT / "README.md", *sorted((ROOT / "docs").glob("*.md")),
             *sorted((ROOT / "active_memory").rglob("*.py")), ROOT / "plugins" / "bootstrap.py",
             *sorted((ROOT / "examples").glob("*.py"))]  # fmt: skip
    found = [
        f"{path.relative_to(ROOT)}:{number}: {line.strip()}"
        for path in texts
        for number, line in enumerate(path.read_text(encoding="utf-8").splitlines(), 1)
        if FROM_AN_INDEX.search(line)
    ]
    assert found == []


def test_a_mark_must_name_a_bash_block_it_can_run() -> None:
    good = "text\n<!-- ci: run this block -->\n```bash\necho one\necho two\n```\n"
    (block,) = marked_blocks(good, "a.md")
    assert (block.where, block.script) == ("a.md:3", "echo one\necho two\n")
    (line,) = marked_blocks(good.replace("run this", "run line 2 of this"), "a.md")
    assert line.script == "echo two\n"
    with pytest.raises(MarkError, match=r"a.md:2: the mark must be followed by a ```bash"):
        marked_blocks("x\n<!-- ci: run this block -->\n\n```bash\necho\n```\n", "a.md")
    with pytest.raises(MarkError, match=r"a.md:2: the fence is never closed"):
        marked_blocks("<!-- ci: run this block -->\n```bash\necho\n", "a.md")
    with pytest.raises(MarkError, match=r"a.md:1: the block has no line 3"):
        marked_blocks("<!-- ci: run line 3 of this block -->\n```bash\necho\n```\n", "a.md")
    assert marked_blocks("```bash\necho unmarked\n```\n", "a.md") == []


def test_a_file_without_a_marked_block_is_an_error(tmp_path: Path) -> None:
    (tmp_path / "docs").mkdir()
    (tmp_path / "README.md").write_text("<!-- ci: run this block -->\n```bash\nls\n```\n")
    (tmp_path / "docs" / "loop.md").write_text("```bash\nls\n```\n")
    with pytest.raises(MarkError, match=r"docs/loop.md: no block is marked"):
        all_blocks(tmp_path)


def test_the_clean_path_has_no_harness_and_no_active_memory(tmp_path: Path) -> None:
    harness, ours, plain = tmp_path / "h", tmp_path / "o", tmp_path / "p"
    for folder, name in ((harness, "codex"), (ours, "active-memory"), (plain, "tool")):
        folder.mkdir()
        (folder / name).write_text("#!/bin/sh\n")
    kept = clean_path(f"{harness}:{ours}:{plain}:/usr/bin:/bin:{ROOT / '.venv' / 'bin'}")
    assert str(harness) not in kept and str(ours) not in kept
    assert kept.split(":")[0] == str(plain)
    assert str(ROOT) not in kept


def test_the_copy_holds_the_checkout_files_and_nothing_git_ignores(tmp_path: Path) -> None:
    copy_checkout(ROOT, tmp_path)
    assert (tmp_path / "pyproject.toml").read_bytes() == (ROOT / "pyproject.toml").read_bytes()
    assert (tmp_path / "tests" / "install_blocks.py").is_file()
    assert not (tmp_path / ".venv").exists() and not (tmp_path / ".git").exists()
