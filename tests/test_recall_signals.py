"""Signals from real tool-call shapes of Claude Code, Codex and OpenCode (SPEC §8)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from recall_support import claude_payload, codex_payload, opencode_payload

from active_memory.recall.harness import parse_payload
from active_memory.recall.signals import Signals, extract_signals, identifiers_in, split_terms
from active_memory.shell import simple_commands

ROOT = "/work/api"


def signals(harness: str, payload: dict[str, Any]) -> Signals:
    return extract_signals(parse_payload(harness, payload), ROOT)


def claude(tool: str, tool_input: dict[str, Any], cwd: str = ROOT) -> Signals:
    return signals("claude", claude_payload(tool, tool_input, session="s", cwd=cwd))


def codex(tool: str, tool_input: dict[str, Any], cwd: str = ROOT) -> Signals:
    return signals("codex", codex_payload(tool, tool_input, session="s", cwd=cwd))


def opencode(tool: str, args: dict[str, Any], cwd: str = ROOT) -> Signals:
    return signals("after-tool", opencode_payload(tool, args, session="s", cwd=cwd))


def test_claude_read_edit_write_use_file_path_relative_to_the_root() -> None:
    assert list(claude("Read", {"file_path": f"{ROOT}/src/api/x.py", "limit": 40}).paths) == [
        "src/api/x.py"
    ]
    edit = {"file_path": f"{ROOT}/api/schema.json", "old_string": "a", "new_string": "b"}
    assert list(claude("Edit", edit).paths) == ["api/schema.json"]
    write = {"file_path": "docs/new.md", "content": "src/other/thing.py"}
    assert list(claude("Write", write, cwd=f"{ROOT}/sub").paths) == ["sub/docs/new.md"]


def test_claude_notebook_edit_uses_notebook_path() -> None:
    tool_input = {"notebook_path": f"{ROOT}/nb/eda.ipynb", "new_source": "x", "cell_id": "c1"}
    assert list(claude("NotebookEdit", tool_input).paths) == ["nb/eda.ipynb"]


def test_paths_outside_the_workspace_root_are_dropped() -> None:
    found = claude("Read", {"file_path": "/etc/passwd"})
    assert not found.paths
    assert not claude("Read", {"file_path": f"{ROOT}/../other/x.py"}).paths
    assert not claude("Read", {"file_path": ROOT}).paths  # the root itself is no signal


def test_claude_grep_gives_identifiers_from_the_pattern_and_the_search_folder() -> None:
    found = claude("Grep", {"pattern": r"def\s+handle_checkout\(", "path": "src/billing",
                            "glob": "*.py", "output_mode": "content"})  # fmt: skip
    assert "handle_checkout" in found.identifiers
    assert "s" not in found.identifiers  # a regex escape is not a name
    assert list(found.paths) == ["src/billing"]
    assert {"handle", "checkout"} <= found.terms


def test_claude_glob_pattern_contributes_its_literal_folder() -> None:
    found = claude("Glob", {"pattern": "src/api/**/*.ts", "path": f"{ROOT}/web"})
    assert list(found.paths) == ["web", "web/src/api"]


def test_claude_bash_understands_cd_flags_urls_and_redirections() -> None:
    command = (
        "cd src/api && pytest -x --maxfail=1 tests/test_refund.py "
        "&& curl -s https://example.com/x > ../out/log.txt 2>&1"
    )
    found = claude("Bash", {"command": command, "description": "Run the refund tests"})
    assert list(found.paths) == ["src/api", "src/api/tests/test_refund.py", "src/out/log.txt"]
    assert not any(path.endswith(("-x", "1", "2")) for path in found.paths)


def test_cd_changes_the_base_only_for_later_commands() -> None:
    found = claude("Bash", {"command": "cat a.txt; cd lib && cat b.txt"})
    assert list(found.paths) == ["a.txt", "lib", "lib/b.txt"]


def test_rg_pattern_is_an_identifier_and_its_other_arguments_are_paths() -> None:
    found = claude("Bash", {"command": "rg -n -g '*.py' -e RefundPolicy src/billing docs"})
    assert "RefundPolicy" in found.identifiers
    assert list(found.paths) == ["src/billing", "docs"]
    assert {"refund", "policy"} <= found.terms


def test_git_grep_and_grep_read_their_pattern() -> None:
    assert "apiClient" in claude("Bash", {"command": "git grep -n apiClient -- web"}).identifiers
    assert "make_client" in claude("Bash", {"command": "grep -rn make_client ."}).identifiers


def test_codex_bash_string_command() -> None:
    found = codex("Bash", {"command": "sed -n 1,80p src/checkout/flow.py"})
    assert list(found.paths) == ["src/checkout/flow.py"]


def test_codex_shell_list_with_bash_lc_and_workdir() -> None:
    tool_input = {"command": ["bash", "-lc", "cd billing && ls stripe"], "workdir": f"{ROOT}/src"}
    found = codex("shell", tool_input)
    assert list(found.paths) == ["src/billing", "src/billing/stripe"]


def test_codex_exec_command_with_cmd() -> None:
    found = codex("exec_command", {"cmd": "cat web/app.tsx", "workdir": ROOT})
    assert list(found.paths) == ["web/app.tsx"]


PATCH = """*** Begin Patch
*** Update File: src/api/handlers.py
@@ def refund(order):
-    return charge(order)
+    return charge(order, idempotency_key=key)
*** Add File: docs/refunds.md
+Refunds need keys.
*** Update File: src/api/old_name.py
*** Move to: src/billing/new_name.py
*** Delete File: scripts/legacy.sh
*** End Patch
"""


def test_codex_apply_patch_touching_three_files_yields_every_file() -> None:
    three = """*** Begin Patch
*** Update File: src/api/handlers.py
@@
-a
+b
*** Add File: docs/refunds.md
+Refunds need keys.
*** Delete File: scripts/legacy.sh
*** End Patch
"""
    found = codex("apply_patch", {"command": three}, cwd=ROOT)
    assert list(found.paths) == ["src/api/handlers.py", "docs/refunds.md", "scripts/legacy.sh"]


def test_apply_patch_move_to_counts_both_names() -> None:
    found = codex("apply_patch", {"command": PATCH})
    assert "src/api/old_name.py" in found.paths
    assert "src/billing/new_name.py" in found.paths


def test_apply_patch_in_a_shell_heredoc_or_argv() -> None:
    heredoc = f"apply_patch <<'EOF'\n{PATCH}EOF\n"
    found = codex("Bash", {"command": heredoc})
    assert "docs/refunds.md" in found.paths
    assert "EOF" not in " ".join(found.paths)
    argv = codex("shell", {"command": ["apply_patch", PATCH]})
    assert "scripts/legacy.sh" in argv.paths


def test_opencode_tools_use_file_path_and_patch_text() -> None:
    assert list(opencode("read", {"filePath": f"{ROOT}/src/a.ts"}).paths) == ["src/a.ts"]
    edit = {"filePath": f"{ROOT}/src/b.ts", "oldString": "x", "newString": "y"}
    assert list(opencode("edit", edit).paths) == ["src/b.ts"]
    assert list(opencode("bash", {"command": "ls web", "description": "list"}).paths) == ["web"]
    assert "CartTotal" in opencode("grep", {"pattern": "CartTotal", "include": "*.tsx"}).identifiers
    found = opencode("apply_patch", {"patchText": PATCH})
    assert "src/api/handlers.py" in found.paths


def test_here_document_bodies_are_not_arguments() -> None:
    found = claude("Bash", {"command": "cat > notes.md <<EOF\nsrc/secret/path.py\nEOF\nls lib"})
    assert list(found.paths) == ["notes.md", "lib"]


def test_tokenizer_splits_operators_and_keeps_quoted_words() -> None:
    assert simple_commands('a \'b c\'&&d "e\\"f" | g;h') == [
        ["a", "b c"],
        ["d", 'e"f'],
        ["g"],
        ["h"],
    ]


def test_identifiers_keep_dotted_names_whole_and_in_parts() -> None:
    found = identifiers_in(r"os\.path\.join|Foo::bar_baz|\bx\b")
    assert found[:3] == ["os", "path", "join"]
    assert "os.path.join" in found
    assert "Foo::bar_baz" in found
    assert "x" not in found


def test_split_terms_handles_snake_camel_pascal_and_kebab() -> None:
    terms = split_terms("parseHTTPResponse_v2 utf8Decoder api-client StripeWebhook")
    for term in ("parse", "http", "response", "v2", "utf8", "decoder", "api-client", "api",
                 "client", "stripe", "webhook"):  # fmt: skip
        assert term in terms


def test_unknown_tools_without_paths_give_no_signals() -> None:
    found = claude("WebSearch", {"allowed_domains": ["example.com"]})
    assert not found.paths and not found.identifiers and not found.terms


def test_path_names_become_terms_for_keyword_groups() -> None:
    found = claude("Edit", {"file_path": f"{ROOT}/src/stripe/webhookHandler.ts"})
    assert {"stripe", "webhook", "handler"} <= found.terms
    assert "work" not in found.terms  # folders above the root say nothing


def test_words_that_cannot_be_paths_are_only_terms() -> None:
    found = claude("Bash", {"command": 'git commit -m "fix refund rounding" && head -n 20 a.py'})
    assert list(found.paths) == ["a.py"]
    assert {"refund", "rounding"} <= found.terms


def test_git_subcommands_are_verbs_and_dash_c_moves_the_base() -> None:
    assert list(claude("Bash", {"command": "git diff --stat src/api"}).paths) == ["src/api"]
    found = claude("Bash", {"command": "git -C web log -- app.tsx"})
    assert list(found.paths) == ["web", "web/app.tsx"]


def test_a_path_through_a_symlink_to_the_root_is_inside(tmp_path: Path) -> None:
    real = tmp_path / "real"
    (real / "src").mkdir(parents=True)
    link = tmp_path / "link"
    link.symlink_to(real)
    call = parse_payload(
        "claude",
        claude_payload("Read", {"file_path": str(link / "src/a.py")}, session="s", cwd=real),
    )
    assert list(extract_signals(call, str(real)).paths) == ["src/a.py"]
    outside = parse_payload(
        "claude",
        claude_payload("Read", {"file_path": str(tmp_path / "x.py")}, session="s", cwd=real),
    )
    assert not extract_signals(outside, str(real)).paths
