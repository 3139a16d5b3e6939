"""The informative error line of a failed call, per tool family (importers/error_lines.py).

Outputs under tests/fixtures/tool_outputs/ are real (README there says where each came
from); the short ones written here follow the tools' documented formats and are marked.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from active_memory.runlog.importers.error_lines import failing_family, informative_error

OUTPUTS = Path(__file__).parent / "fixtures" / "tool_outputs"


def _output(name: str) -> str:
    return (OUTPUTS / name).read_text(encoding="utf-8")


# --- git -------------------------------------------------------------------------------


def test_git_add_of_an_ignored_path_names_the_path_not_the_hints() -> None:
    error = informative_error(_output("git-add-ignored.txt"), "git add")
    assert error == "The following paths are ignored by one of your .gitignore files: build"


@pytest.mark.parametrize(
    ("name", "family", "expected"),
    [
        ("git-push-no-upstream.txt", "git push",
         "fatal: The current branch spotter-a0y has no upstream branch."),
        ("git-push.txt", "git push", "fatal: No configured push destination."),
        ("git-checkout.txt", "git checkout",
         "error: pathspec 'nosuchbranch' did not match any file(s) known to git"),
        ("git-commit-nothing.txt", "git commit",
         'nothing added to commit but untracked files present (use "git add" to track)'),
    ],
)  # fmt: skip
def test_git_errors_are_its_fatal_and_error_lines(name: str, family: str, expected: str) -> None:
    assert informative_error(_output(name), family) == expected


def test_a_rejected_push_names_the_rejection_and_the_summary() -> None:
    # git 2.4x format, written here.
    output = (
        "To github.com:acme/api.git\n"
        " ! [rejected]        main -> main (fetch first)\n"
        "error: failed to push some refs to 'github.com:acme/api.git'\n"
        "hint: Updates were rejected because the remote contains work that you do not\n"
        "hint: have locally.\n"
    )
    assert informative_error(output, "git push").splitlines() == [
        "! [rejected]        main -> main (fetch first)",
        "error: failed to push some refs to 'github.com:acme/api.git'",
    ]


def test_a_pre_commit_hook_failure_names_the_hook_and_an_auto_fix() -> None:
    # pre-commit's own format, written here.
    output = (
        "ruff.....................................................................Failed\n"
        "- hook id: ruff\n"
        "- files were modified by this hook\n"
        "\n"
        "Found 1 error (1 fixed, 0 remaining).\n"
        "ruff-format..............................................................Passed\n"
    )
    assert informative_error(output, "git commit").splitlines() == [
        "ruff.....................................................................Failed",
        "- files were modified by this hook",
    ]


def test_a_claude_code_hook_refusal_of_git_commit_quotes_the_check_that_failed() -> None:
    assert informative_error(_output("hook-format.txt"), "git commit") == (
        "[FORMAT] Code is not formatted. Run 'mix format' to fix."
    )
    dialyzer = informative_error(_output("hook-dialyzer.txt"), "git commit")
    assert dialyzer == (
        "lib/spotter_web/controllers/otel_trace_helpers.ex:57:13:pattern_match"
        " The pattern can never match the type."
    )
    assert "Finding suitable PLTs" not in dialyzer
    credo = informative_error(_output("hook-credo.txt"), "git commit").splitlines()
    assert credo[0] == "[F] → Function is too complex (cyclomatic complexity is 13, max is 9)."
    assert credo[1].startswith("lib/spotter_web/controllers/hooks_controller.ex:144:7")


# --- test runners ------------------------------------------------------------------------


def test_pytest_names_the_failed_tests_from_its_summary() -> None:
    assert informative_error(_output("pytest.txt"), "pytest").splitlines() == [
        "FAILED test_calc.py::test_add - assert 0 == 4",
        "FAILED test_calc.py::test_import - ModuleNotFoundError: No module named 'chec...",
    ]


def test_pytest_without_a_summary_quotes_its_e_lines() -> None:
    output = (
        "    def test_a():\n>       assert f() == 1\nE       assert 2 == 1\n\n"
        "t.py:2: AssertionError\n"
    )
    assert informative_error(output, "pytest") == "E       assert 2 == 1"


def test_mix_test_names_the_test_and_the_exception_not_the_setup_lines() -> None:
    error = informative_error(_output("mix-test-runtime-error.txt"), "mix test").splitlines()
    assert error[0] == (
        "1) test mount renders transcript annotation with message ref count"
        " (SpotterWeb.ProjectReviewLiveTest)"
    )
    assert error[1] == (
        "** (RuntimeError) no :secret_key_base configuration found in SpotterWeb.Endpoint."
    )
    assert not any("Running ExUnit" in line or "Getting extensions" in line for line in error)


def test_mix_test_assertion_and_compile_error() -> None:
    assertion = informative_error(_output("mix-test-assertion.txt"), "mix test").splitlines()
    assert assertion[1:] == [
        "Assertion with != failed, both sides are exactly equal",
        "code: assert subagent_lines != []",
    ]
    compiled = informative_error(_output("mix-test-compile-error.txt"), "mix test").splitlines()
    assert compiled[0].startswith("error: undefined function get/2")
    assert compiled[1].startswith("└─ test/spotter_web/live/project_review_live_test.exs:128")


def test_jest_names_the_test_and_the_expectation() -> None:
    # jest 29 format, written here.
    output = (
        " FAIL  src/sum.test.js\n"
        "  ● sum › adds two numbers\n"
        "\n"
        "    expect(received).toBe(expected) // Object.is equality\n"
        "\n"
        "    Expected: 4\n"
        "    Received: 3\n"
        "\n"
        "      at Object.toBe (src/sum.test.js:4:21)\n"
        "\n"
        "Test Suites: 1 failed, 1 total\n"
    )
    assert informative_error(output, "jest").splitlines() == [
        "● sum › adds two numbers",
        "expect(received).toBe(expected) // Object.is equality",
    ]


def test_vitest_names_the_test_and_the_assertion() -> None:
    # vitest 3 format, written here.
    output = (
        " ❯ src/sum.test.ts (1 test | 1 failed) 4ms\n"
        "   × sum > adds two numbers 3ms\n"
        "     → expected 3 to be 4 // Object.is equality\n"
        "⎯⎯⎯⎯⎯⎯⎯ Failed Tests 1 ⎯⎯⎯⎯⎯⎯⎯\n"
        "\n"
        " FAIL  src/sum.test.ts > sum > adds two numbers\n"
        "AssertionError: expected 3 to be 4 // Object.is equality\n"
    )
    assert informative_error(output, "vitest run").splitlines() == [
        "FAIL  src/sum.test.ts > sum > adds two numbers",
        "AssertionError: expected 3 to be 4 // Object.is equality",
    ]


def test_go_test_names_the_test_and_its_message() -> None:
    # go 1.22 format, written here.
    output = (
        "--- FAIL: TestAdd (0.00s)\n"
        "    calc_test.go:10: add(2, 2) = 0, want 4\n"
        "FAIL\n"
        "FAIL\texample.com/calc\t0.002s\n"
    )
    assert informative_error(output, "go test").splitlines() == [
        "--- FAIL: TestAdd (0.00s)",
        "calc_test.go:10: add(2, 2) = 0, want 4",
    ]


def test_cargo_test_quotes_the_panic_and_its_assertion() -> None:
    assert informative_error(_output("cargo-test.txt"), "cargo test") == (
        "thread 'tests::adds' (28195) panicked at src/lib.rs:6:17:"
        " assertion `left == right` failed left: 0 right: 4"
    )


# --- task runners: the recipe's output first --------------------------------------------


def test_make_test_quotes_the_recipes_own_error_not_makes_summary() -> None:
    # Recorded with the real claude 2.1.332 (the calc-env learning sequence).
    assert informative_error(_output("make-test-calc-env.txt"), "make test") == (
        "ERROR: CALC_ENV is not 'test': the ledger tests would write to ~/.calc"
    )


def test_make_reads_its_recipe_with_the_rules_of_the_program_it_echoed() -> None:
    # `python3 -m pytest …` echoed by make: pytest's summary line, not its E lines.
    assert informative_error(_output("make-test-pytest.txt"), "make test") == (
        "FAILED tests/test_total.py::test_total_adds_the_items - assert 4 == 3"
    )


def test_a_nested_make_quotes_the_compilers_error_under_both_makes() -> None:
    assert informative_error(_output("make-nested-cc.txt"), "make nested") == (
        "cc1: fatal error: missing.c: No such file or directory"
    )


def test_make_itself_is_quoted_when_the_recipe_names_no_error() -> None:
    # GNU make's own formats, written here.
    silent = "python3 -m pytest\nmake: *** [Makefile:2: test] Error 1\n"
    assert informative_error(silent, "make test") == "make: *** [Makefile:2: test] Error 1"
    missing = "make: *** No rule to make target 'tset'.  Stop.\n"
    assert informative_error(missing, "make tset") == missing.strip()


def test_the_recipe_rule_is_only_for_task_runners() -> None:
    # The same output from a command that is not a runner keeps the general fallback.
    output = _output("make-test-calc-env.txt")
    assert informative_error(output, "bash").startswith("make: ***")


# --- compilers -----------------------------------------------------------------------------


def test_gcc_quotes_the_error_not_the_warning_before_it() -> None:
    assert informative_error(_output("gcc.txt"), "gcc") == (
        "bad.c:3:10: error: ‘y’ undeclared (first use in this function)"
    )


def test_rustc_and_cargo_build_quote_each_error_with_its_location() -> None:
    assert informative_error(_output("rustc.txt"), "rustc").splitlines() == [
        "error[E0425]: cannot find value `w` in this scope",
        "--> bad.rs:1:46",
        "error[E0308]: mismatched types",
        "--> bad.rs:1:26",
    ]
    assert informative_error(_output("cargo-build.txt"), "cargo build").splitlines() == [
        "error[E0308]: mismatched types",
        "--> src/lib.rs:1:34",
    ]


def test_tsc_quotes_its_diagnostics_even_under_npm_run() -> None:
    # tsc 5 format (plain and pretty), written here.
    output = (
        "\n> app@1.0.0 build\n> tsc\n\n"
        "src/a.ts(3,7): error TS2322: Type 'string' is not assignable to type 'number'.\n"
        "src/b.ts:1:10 - error TS2305: Module './c' has no exported member 'x'.\n"
        "\nFound 2 errors in 2 files.\n"
    )
    assert informative_error(output, "npm run build").splitlines() == [
        "src/a.ts(3,7): error TS2322: Type 'string' is not assignable to type 'number'.",
        "src/b.ts:1:10 - error TS2305: Module './c' has no exported member 'x'.",
    ]


def test_esbuild_and_a_node_exception() -> None:
    esbuild = informative_error(_output("esbuild.txt"), "node assets/build.js")
    assert esbuild.splitlines()[0] == '✘ [ERROR] Could not resolve "js/app.js"'
    assert informative_error(_output("npm-run-build.txt"), "npm run build") == (
        "Error: Cannot find module ./config"
    )


def test_credo_and_a_python_traceback() -> None:
    credo = informative_error(_output("mix-credo.txt"), "mix credo").splitlines()
    assert credo[0] == "[D] ↘ Nested modules could be aliased at the top of the invoking module."
    assert informative_error(_output("python-traceback.txt"), "python3") == (
        "json.decoder.JSONDecodeError: Unterminated string starting at: line 1 column 256"
        " (char 255)"
    )


# --- package managers -------------------------------------------------------------------------


def test_npm_quotes_its_error_not_its_code_path_and_log_lines() -> None:
    assert informative_error(_output("npm-missing-script.txt"), "npm run biuld") == (
        'npm error Missing script: "biuld"'
    )
    assert informative_error(_output("npm-enoent.txt"), "npm test") == (
        "npm error enoent Could not read package.json: Error: ENOENT: no such file or"
        " directory, open '/home/dev/demo/empty/package.json'"
    )


def test_pip_quotes_both_of_its_error_lines() -> None:
    assert informative_error(_output("pip.txt"), "pip install").splitlines() == [
        "ERROR: Could not find a version that satisfies the requirement nosuchpkg-xyz-123"
        " (from versions: none)",
        "ERROR: No matching distribution found for nosuchpkg-xyz-123",
    ]


def test_mix_deps_and_uv() -> None:
    # mix 1.17 and uv 0.5 formats, written here.
    mix = "** (Mix) No package with name nosuch (from: mix.exs) in registry\n"
    assert informative_error(mix, "mix deps.get") == mix.strip()
    uv = (
        "  × No solution found when resolving dependencies:\n"
        "  ╰─▶ Because nosuch was not found in the package registry and you require\n"
    )
    assert informative_error(uv, "uv add").splitlines() == [
        "× No solution found when resolving dependencies:",
        "╰─▶ Because nosuch was not found in the package registry and you require",
    ]


# --- file tools, the fallback, chains --------------------------------------------------------


def test_a_file_tool_error_is_its_first_line_without_tags() -> None:
    output = "<tool_use_error>String to replace not found in file.\nString:   defp x do\n"
    assert informative_error(output, "Edit lib/x.ex") == "String to replace not found in file."


def test_without_a_rule_the_last_line_naming_an_error_is_quoted() -> None:
    output = "starting\nconnecting to db\nError connecting: refused\nretrying later\n"
    assert informative_error(output, "unknown-tool") == "Error connecting: refused"
    assert informative_error("all quiet\nbye\n", None) == "bye"
    assert informative_error("", None) == ""
    assert informative_error("(eval):1: command not found: tree", "tree") == (
        "(eval):1: command not found: tree"
    )


def test_escaped_line_breaks_printed_by_a_hook_are_read_as_lines() -> None:
    output = "Pre-commit validation failed:\\n\\n[FORMAT] Code is not formatted.\\nRun it.\\n"
    assert informative_error(output, "git commit") == "[FORMAT] Code is not formatted. Run it."


def test_a_chain_failure_is_attributed_by_what_the_output_shows() -> None:
    chain = ["git add", "git commit"]
    assert failing_family(chain, _output("git-add-ignored.txt")) == "git add"
    assert failing_family(chain, "Pre-commit validation failed: [FORMAT]") == "git commit"
    assert failing_family(chain, "something else") == "git commit"
    assert failing_family([], "x") is None
