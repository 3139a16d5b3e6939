"""The citation checker against real temporary git repositories."""

from __future__ import annotations

import os
import subprocess
from pathlib import Path

import pytest

from active_memory.checkout import (
    Checkout,
    MatchKind,
    NotACheckout,
    PathStatus,
    folder_contains,
    scan_identifiers,
)
from active_memory.checkout import git as git_module
from active_memory.checkout import identifiers as identifiers_module
from active_memory.errors import UsageError


def _git(root: Path, *args: str) -> None:
    subprocess.run(
        ["git", "-c", "user.email=t@example.com", "-c", "user.name=t", *args],
        cwd=root,
        check=True,
        capture_output=True,
    )


@pytest.fixture
def repo(tmp_path: Path) -> Path:
    """A checkout with tracked, untracked, ignored and deleted files and some symlinks."""
    root = tmp_path / "repo"
    root.mkdir()
    _git(root, "init", "-q")
    (root / ".gitignore").write_text("build/\n*.log\n")
    (root / "src" / "api").mkdir(parents=True)
    (root / "src" / "apis").mkdir(parents=True)
    (root / "src" / "api" / "client.py").write_text(
        "def regenerate_client():\n    return make_client_wrapper()\n"
    )
    (root / "src" / "apis" / "other.py").write_text("x = 1\n")
    (root / "gone.py").write_text("old\n")
    _git(root, "add", "-A")
    _git(root, "commit", "-qm", "init")
    (root / "gone.py").unlink()
    (root / "notes.md").write_text("untracked but not ignored\n")
    (root / "build").mkdir()
    (root / "build" / "out.js").write_text("generated\n")
    (root / "debug.log").write_text("ignored\n")
    os.symlink("src/api/client.py", root / "link_tracked.py")
    os.symlink("build/out.js", root / "link_ignored.js")
    outside = tmp_path / "outside.py"
    outside.write_text("secret\n")
    os.symlink(str(outside), root / "link_out.py")
    os.symlink("src", root / "lib")
    return root


def test_tracked_file_is_current(repo: Path) -> None:
    verdict = Checkout(repo).check_path("src/api/client.py")
    assert verdict.status is PathStatus.TRACKED
    assert verdict.current
    assert verdict.file == "src/api/client.py"


def test_untracked_file_that_is_not_ignored_is_current(repo: Path) -> None:
    verdict = Checkout(repo).check_path("notes.md")
    assert verdict.status is PathStatus.UNTRACKED
    assert verdict.current


def test_ignored_files_are_not_current(repo: Path) -> None:
    verdicts = Checkout(repo).check_paths(["build/out.js", "debug.log"])
    assert {v.status for v in verdicts.values()} == {PathStatus.IGNORED}
    assert not any(v.current for v in verdicts.values())


def test_deleted_tracked_file_is_not_current(repo: Path) -> None:
    verdict = Checkout(repo).check_path("gone.py")
    assert verdict.status is PathStatus.DELETED
    assert not verdict.current
    assert "deleted" in verdict.reason


def test_missing_file_is_not_current(repo: Path) -> None:
    verdict = Checkout(repo).check_path("src/api/nothing.py")
    assert verdict.status is PathStatus.MISSING


def test_folder_is_not_a_file(repo: Path) -> None:
    assert Checkout(repo).check_path("src/api").status is PathStatus.NOT_A_FILE


def test_symlink_to_tracked_file_is_current_through_its_target(repo: Path) -> None:
    verdict = Checkout(repo).check_path("link_tracked.py")
    assert verdict.status is PathStatus.TRACKED
    assert verdict.target == "src/api/client.py"
    assert verdict.file == "src/api/client.py"


def test_symlink_to_ignored_file_is_not_current(repo: Path) -> None:
    verdict = Checkout(repo).check_path("link_ignored.js")
    assert verdict.status is PathStatus.SYMLINK_NOT_CURRENT
    assert "build/out.js" in verdict.reason
    assert not verdict.current


def test_symlink_escaping_the_root_is_rejected(repo: Path) -> None:
    verdict = Checkout(repo).check_path("link_out.py")
    assert verdict.status is PathStatus.SYMLINK_ESCAPES_ROOT
    assert "outside" in verdict.reason


def test_untracked_symlinked_folder_makes_the_path_not_current(repo: Path) -> None:
    # `lib -> src` is itself untracked and not ignored, and `src/api/client.py` is tracked.
    verdict = Checkout(repo).check_path("lib/api/client.py")
    assert verdict.status is PathStatus.TRACKED
    assert verdict.target == "src/api/client.py"
    (repo / ".gitignore").write_text("build/\n*.log\nlib\n")
    ignored_link = Checkout(repo).check_path("lib/api/client.py")
    assert ignored_link.status is PathStatus.SYMLINK_NOT_CURRENT
    assert "symlink lib" in ignored_link.reason


def test_dot_dot_escape_is_rejected_with_a_reason(repo: Path) -> None:
    verdict = Checkout(repo).check_path("../outside.py")
    assert verdict.status is PathStatus.ESCAPES_ROOT
    assert ".." in verdict.reason
    assert Checkout(repo).check_path("src/../../outside.py").status is PathStatus.ESCAPES_ROOT


def test_dot_dot_inside_the_root_is_normalised(repo: Path) -> None:
    verdict = Checkout(repo).check_path("src/apis/../api/client.py")
    assert verdict.path == "src/api/client.py"
    assert verdict.status is PathStatus.TRACKED


def test_absolute_paths_inside_count_and_elsewhere_are_rejected(repo: Path) -> None:
    checkout = Checkout(repo)
    inside = checkout.check_path(str(repo / "src" / "api" / "client.py"))
    assert inside.path == "src/api/client.py"
    assert inside.status is PathStatus.TRACKED
    elsewhere = checkout.check_path(str(repo.parent / "outside.py"))
    assert elsewhere.status is PathStatus.OUTSIDE_ROOT


def test_paths_inside_dot_git_are_invalid(repo: Path) -> None:
    assert Checkout(repo).check_path(".git/config").status is PathStatus.INVALID


def test_pathspec_magic_is_taken_literally(repo: Path) -> None:
    (repo / "*.py").write_text("a file really named star\n")
    checkout = Checkout(repo)
    assert checkout.check_path("*.py").status is PathStatus.UNTRACKED
    assert checkout.check_path(":(glob)**/*.py").status is PathStatus.MISSING


def test_non_git_folder_gives_a_clear_usage_error(tmp_path: Path) -> None:
    plain = tmp_path / "plain"
    plain.mkdir()
    with pytest.raises(NotACheckout) as caught:
        Checkout(plain)
    assert isinstance(caught.value, UsageError)
    assert "not a git checkout" in str(caught.value)


def test_many_paths_cost_a_bounded_number_of_git_calls(
    repo: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    checkout = Checkout(repo)
    calls: list[str] = []
    real = git_module.run_git

    def counting(cwd: Path, args: list[str], **kwargs: object) -> git_module.GitResult:
        calls.append(args[0])
        return real(cwd, args, **kwargs)  # type: ignore[arg-type]

    monkeypatch.setattr(git_module, "run_git", counting)
    cited = [f"src/api/missing_{n}.py" for n in range(300)] + ["notes.md", "debug.log"]
    verdicts = checkout.check_paths(cited)
    assert len(verdicts) == len(cited)
    assert verdicts["notes.md"].current
    assert verdicts["debug.log"].status is PathStatus.IGNORED
    assert len(calls) <= 3


def test_folder_association_is_component_aware(repo: Path) -> None:
    checkout = Checkout(repo)
    verdict = checkout.check_path("src/api/client.py")
    assert checkout.match_association(verdict, folders=["src/api"]).kind is MatchKind.FOLDER
    assert checkout.match_association(verdict, folders=["src/api/"]).matched
    assert not checkout.match_association(verdict, folders=["src/ap"]).matched
    other = checkout.check_path("src/apis/other.py")
    assert not checkout.match_association(other, folders=["src/api"]).matched
    assert folder_contains("src/api", "src/api/v1/x.py")
    assert not folder_contains("src/api", "src/apis/x.py")
    assert not folder_contains("src/api", "src/api")


def test_file_association_matches_the_file_or_its_symlink_target(repo: Path) -> None:
    checkout = Checkout(repo)
    direct = checkout.check_path("src/api/client.py")
    assert checkout.match_association(direct, files=["./src/api/client.py"]).kind is (
        MatchKind.FILE
    )
    linked = checkout.check_path("link_tracked.py")
    assert checkout.match_association(linked, files=["src/api/client.py"]).matched
    assert not checkout.match_association(direct, files=["src/api/client.pyc"]).matched


def test_identifier_association_needs_a_whole_word_occurrence(repo: Path) -> None:
    checkout = Checkout(repo)
    verdict = checkout.check_path("src/api/client.py")
    present = checkout.match_association(verdict, identifiers=["regenerate_client"])
    assert present.kind is MatchKind.IDENTIFIER
    absent = checkout.match_association(verdict, identifiers=["delete_everything"])
    assert not absent.matched
    # `make_client` occurs only inside `make_client_wrapper`: a substring, not a word.
    substring = checkout.match_association(verdict, identifiers=["make_client", "client_wrap"])
    assert not substring.matched


def test_a_citation_that_is_not_current_matches_nothing(repo: Path) -> None:
    checkout = Checkout(repo)
    verdict = checkout.check_path("build/out.js")
    match = checkout.match_association(verdict, files=["build/out.js"])
    assert not match.matched
    assert "ignored" in match.reason


def test_binary_file_identifiers_are_not_verified(repo: Path) -> None:
    (repo / "blob.bin").write_bytes(b"\x00\x01regenerate_client\x00")
    checkout = Checkout(repo)
    verdict = checkout.check_path("blob.bin")
    match = checkout.match_association(verdict, identifiers=["regenerate_client"])
    assert not match.matched
    assert "binary" in match.reason


def test_undecodable_bytes_separate_words_instead_of_failing(tmp_path: Path) -> None:
    path = tmp_path / "latin1.txt"
    path.write_bytes(b"caf\xe9 \xffsome_name\xff and more")
    scan = scan_identifiers(path, ["some_name", "more", "caf"])
    assert scan.found == {"some_name", "more", "caf"}
    assert scan.unreadable is None


def test_identifier_spanning_a_chunk_boundary_is_found_once_decided(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(identifiers_module, "_CHUNK_BYTES", 16)
    path = tmp_path / "chunks.txt"
    path.write_text("x" * 10 + " alpha_beta gamma_delta_longer\n")
    found = scan_identifiers(path, ["alpha_beta", "gamma_delta", "gamma_delta_longer"])
    assert found.found == {"alpha_beta", "gamma_delta_longer"}


def test_large_files_are_not_scanned(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(identifiers_module, "MAX_SCAN_BYTES", 10)
    path = tmp_path / "big.txt"
    path.write_text("name " * 10)
    scan = scan_identifiers(path, ["name"])
    assert not scan.found
    assert scan.unreadable is not None and "scan limit" in scan.unreadable


def test_git_that_hangs_becomes_a_clear_error(repo: Path) -> None:
    with pytest.raises(git_module.GitFailed) as caught:
        git_module.run_git(repo, ["hash-object", "--stdin"], timeout=0.000001)
    assert "no answer within" in str(caught.value)


def test_root_spelled_through_a_symlink_still_anchors_absolute_citations(
    repo: Path, tmp_path: Path
) -> None:
    alias = tmp_path / "alias"
    os.symlink(repo, alias)
    checkout = Checkout(alias)
    verdict = checkout.check_path(str(alias / "src" / "api" / "client.py"))
    assert verdict.path == "src/api/client.py"
    assert verdict.status is PathStatus.TRACKED


def test_a_subfolder_finds_the_root_and_paths_stay_root_relative(repo: Path) -> None:
    checkout = Checkout(repo / "src" / "api")
    assert checkout.root == repo.resolve()
    assert checkout.check_path("src/api/client.py").status is PathStatus.TRACKED


def test_a_hook_environment_cannot_redirect_the_git_queries(
    repo: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("GIT_DIR", str(repo.parent / "elsewhere.git"))
    monkeypatch.setenv("GIT_INDEX_FILE", str(repo.parent / "elsewhere.index"))
    assert Checkout(repo).check_path("src/api/client.py").status is PathStatus.TRACKED
