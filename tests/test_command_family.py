"""Command families (command_family.py): one rule for importers and recall."""

from __future__ import annotations

import pytest

from active_memory.command_family import (
    argv_family,
    chain_families,
    file_family,
    main_invocation,
    shell_family,
)


@pytest.mark.parametrize(
    ("command", "family"),
    [
        # program and subcommand
        ("git commit -m 'fix: rounding'", "git commit"),
        ("git -C sub --no-pager log --oneline", "git log"),
        ("git stash pop", "git stash pop"),
        ("mix test test/spotter/a_test.exs", "mix test"),
        ("mix deps.get", "mix deps.get"),
        ("mix phx.server", "mix phx.server"),
        ("cargo +nightly test --lib", "cargo test"),
        ("go test ./...", "go test"),
        ("make -j4 -C build test V=1", "make test"),
        ("make", "make"),
        ("npm test", "npm test"),
        ("npm i lodash", "npm install"),
        ("npm --prefix assets run build -- --watch", "npm run build"),
        ("yarn run lint:fix", "yarn run lint:fix"),
        ("uv pip install -e .", "uv pip install"),
        ("docker compose up -d", "docker compose up"),
        ("gh pr create --fill", "gh pr create"),
        # programs without subcommands
        ("pytest -x tests/test_a.py", "pytest"),
        ("tsc --noEmit", "tsc"),
        ("gcc -c bad.c -o bad.o", "gcc"),
        ("tree lib -L 3", "tree"),
        # wrappers
        ("timeout 3 make test", "make test"),
        ("timeout -s KILL 10m mix test", "mix test"),
        ("env MIX_ENV=test mix test", "mix test"),
        ("MIX_ENV=test FOO=1 mix test", "mix test"),
        ("npx -y vitest run", "vitest run"),
        ("npx tsc --noEmit", "tsc"),
        ("uv run --with rich python -m pytest -q", "pytest"),
        ("python3 -m pip install requests", "pip install"),
        (".venv/bin/python -m pytest", "pytest"),
        ("./node_modules/.bin/jest --ci", "jest"),
        ("/usr/bin/git status", "git status"),
        ("sudo -u app nice -n 5 make build", "make build"),
        ("poetry run pytest", "pytest"),
        ("bundle exec rake db:migrate", "rake db:migrate"),
        ("bash -c 'cd web && npm test'", "npm test"),
        ('bash -lc "timeout 5 go test ./..."', "go test"),
        # chains and pipelines
        ("cd /home/dev/app && mix test 2>&1 | tail -30", "mix test"),
        ("git add -A && git commit -m \"$(cat <<'EOF'\nfeat: x\nEOF\n)\"", "git commit"),
        ("npm test && echo done", "npm test"),
        ("cargo build || true", "cargo build"),
        ("head -c 500 a.jsonl | python3 -c 'import sys'", "python3"),
        ("cat data.json | jq .items", "cat"),
        ("source .venv/bin/activate && pytest", "pytest"),
        ("mkdir -p build && cd build && cmake ..", "cmake"),
        ("mkdir out", "mkdir"),
        ("sleep 8 && echo finished", "sleep"),
        ("python3 <<< 'print(1)'", "python3"),
        # interpreters keep the script
        ("node assets/build.js 2>&1", "node assets/build.js"),
        ("cd assets && node build.js", "node build.js"),
        ("python3 ./scripts/seed.py --fast", "python3 scripts/seed.py"),
        ("python3 -c 'import nosuchmodule'", "python3"),
        ("bash scripts/check.sh", "bash scripts/check.sh"),
        ("./scripts/deploy.sh staging", "scripts/deploy.sh"),
    ],
)
def test_a_shell_command_has_the_family_of_its_main_command(command: str, family: str) -> None:
    assert shell_family(command) == family


def test_an_empty_or_bookkeeping_only_line() -> None:
    assert shell_family("") is None
    assert shell_family("   # just a comment") is None
    assert shell_family("cd src") == "cd"


def test_a_chain_lists_every_working_command_once() -> None:
    command = "cd web && git add -A && git commit -m x && git add -A && git push"
    assert chain_families(command) == ["git add", "git commit", "git push"]


def test_the_arguments_after_the_family_are_its_targets() -> None:
    invocation = main_invocation("timeout 60 mix test --trace test/a_test.exs 2>&1 | tail")
    assert invocation is not None
    assert invocation.targets == ("test/a_test.exs",)


def test_an_argument_vector_is_read_like_the_line_it_runs() -> None:
    assert argv_family(["bash", "-lc", "cd app && pytest -q"]) == "pytest"
    assert argv_family(["git", "push"]) == "git push"
    assert argv_family([]) is None


def test_a_file_tool_is_its_name_and_path() -> None:
    assert file_family("Edit", "lib/app.ex") == "Edit lib/app.ex"
    assert file_family("Read", None) == "Read"


def test_a_huge_command_line_is_read_only_up_to_its_bound() -> None:
    assert shell_family("git status && " + "echo x && " * 20000) == "git status"
