"""The init skill with the real Claude Code binary, driven by a scripted model on loopback
(and listed by the real Codex binary).

`active-memory skill install claude --user` writes the skill into an isolated HOME; the
test checks that Claude Code lists it (its `init` event and the model's system prompt),
then runs one `claude -p` session whose scripted model follows the skill: it loads the
skill with the `Skill` tool, takes the command from it, calls `init` with Bash, answers
the discovery tasks with one `Agent` subagent per selected run and the maintenance task
with a fresh one (each reads its task file and writes the answer file), advances with
`init --directory` alone, and stops at `complete`. The fixture history: two
repositories, twelve run records (ten selected, two excluded), one stored lesson.

The scripted model (the shared fake server's `respond`) decides each reply from the
request it gets (the conversation so far), as a model would; everything else is the real
client, the real tools and the real `active-memory` command.
"""

from __future__ import annotations

import json
import re
import subprocess
from pathlib import Path
from typing import Any

import anyio
import pytest
from fakes.harness import claude_environment, isolated_home, require_harness
from fakes.model_server import ModelServer, Received, Turn, text, tool
from fakes.model_wire import ToolCall
from init_support import make_repository, run_data
from specialist_builders import proposal

from active_memory.cli import main
from active_memory.lessons import Associations, Author, Lesson, RepositoryScope
from active_memory.skills import SKILL_NAME
from active_memory.store import LessonQuery, open_store

KEY = "sk-ant-api03-SKILLTESTkey0123456789"
MAIN = "Initialise Active Memory for me."
SUBAGENT = "Answer these Active Memory task files"
BETA = "repo:github.com/acme/beta"


class History:
    """Two repositories and twelve run records: alpha a1 to a5 and beta b1 to b5 selected
    (a1 and b1 with two worker timeouts: discovery evidence), a6 unfinished, b6 whose
    checkout is gone. The store holds one beta lesson for maintenance."""

    def __init__(self, root: Path) -> None:
        repos = root / "repos"
        self.alpha = make_repository(repos, "alpha", "git@github.com:acme/alpha.git")
        self.beta = make_repository(repos, "beta", "https://github.com/acme/beta.git")
        self.runs = root / "records"
        self.runs.mkdir()
        alpha: dict[str, Any] = {"namespace": "repo:github.com/acme/alpha",
                 "remote": "git@github.com:acme/alpha.git"}  # fmt: skip
        beta: dict[str, Any] = {"namespace": BETA, "remote": "https://github.com/acme/beta.git"}
        for n in range(1, 6):
            self.write(run_data(f"run-a{n}", self.alpha, evidence=n == 1, **alpha))
            self.write(run_data(f"run-b{n}", self.beta, evidence=n == 1, **beta))
        self.write(run_data("run-a6", self.alpha, finished=False, **alpha))
        self.write(run_data("run-b6", root / "gone", **beta))
        self.store = root / "lessons.sqlite3"
        self.session = root / "init-session"

    def write(self, data: dict[str, Any]) -> None:
        (self.runs / f"{data['run_id']}.json").write_text(json.dumps(data))

    async def seed(self) -> None:
        lesson = Lesson(
            id="L-1",
            revision=1,
            scope=RepositoryScope(repository=BETA),
            title="Regenerate the beta client after schema edits",
            recommendation="After editing `api/schema.json` run `make api-client`.",
            associations=Associations(files=["api/schema.json"]),
        )
        async with open_store(str(self.store)) as store:
            await store.import_lessons([lesson], Author(specialist="person:test"))


def _first_user_text(received: Received) -> str:
    body = received.body if isinstance(received.body, dict) else {}
    for message in body.get("messages") or []:
        if message.get("role") != "user":
            continue
        content = message.get("content")
        if isinstance(content, str):
            return content
        return "\n".join(
            str(block.get("text", "")) for block in content or [] if isinstance(block, dict)
        )
    return ""


def _task_input(task: dict[str, Any]) -> dict[str, Any]:
    """The task JSON the prompt carries: the first complete JSON object in the last
    message that has the task's `run` (the prompt's wording around it may change)."""
    content = task["messages"][-1]["content"]
    decoder = json.JSONDecoder()
    heading = content.rfind("## Task")  # today's prompts end with it; else scan them all
    start = content.find("{", max(heading, 0))
    while start >= 0:
        try:
            value, _ = decoder.raw_decode(content, start)
        except json.JSONDecodeError:
            value = None
        if isinstance(value, dict) and "run" in value:
            return value
        start = content.find("{", start + 1)
    raise AssertionError("no task JSON in the task's message")


def _answer_for(task: dict[str, Any]) -> dict[str, Any]:
    """What the scripted specialist answers: one lesson from alpha's repository
    discovery, nothing from the other discoveries, `keep` for every supplied lesson."""
    data = _task_input(task)
    if task["specialist"].endswith("maintenance"):
        return {"decisions": [
            {"id": x["id"], "revision": x["revision"], "action": "keep", "reason": "still true"}
            for x in data["lessons"]
        ]}  # fmt: skip
    if task["specialist"] == "repository_discovery" and data["run"]["run_id"] == "run-a1":
        return {"lessons": [proposal(evidence=[data["evidence"][0]["id"]])]}
    return {"lessons": []}


class SkillFollower:
    """The scripted model: the reply to each request, from the conversation so far."""

    def __init__(self, session: Path, runs: Path) -> None:
        self.session = session
        self.runs = runs
        self.command: str | None = None
        self.outputs: list[dict[str, Any]] = []  # every init document the agent saw
        self.agents = 0
        self.log: list[str] = []  # what it saw and did, for a failure's message

    def __call__(self, received: Received) -> Turn:
        try:
            turn = self.reply(received)
        except Exception as exc:  # a broken script must show in the failure, not hang
            self.log.append(f"the scripted model failed: {exc!r}")
            raise
        results = received.tool_results()
        seen = results[-1][:200].replace("\n", " ") if results else "-"
        did = [getattr(p, "name", "text") for p in turn.parts]
        self.log.append(f"{_first_user_text(received)[:30]!r} saw {seen!r} -> {did}")
        return turn

    def reply(self, received: Received) -> Turn:
        opening = _first_user_text(received)
        results = received.tool_results()
        if SUBAGENT in opening:
            return self.subagent(received, opening, results)
        if MAIN not in opening:
            return text("ok")  # a request the client makes for itself
        if not results:
            return tool("Skill", {"skill": SKILL_NAME})
        document = _json_in(results[-1])
        if document is None and self.command is None:
            # The skill's text reached the model (Claude Code adds it to the conversation
            # after the Skill tool's result): take the command it names.
            found = re.search(r"ACTIVE_MEMORY_COMMAND: ([^\s\\]+)", received.dump())
            assert found is not None, "the skill's text never reached the model"
            self.command = found.group(1)
            start = f"{self.command} init --json --directory {self.session} --runs {self.runs}"
            return tool("Bash", {"command": start, "description": "Start the init session"})
        if document is None:  # the subagents reported: advance with --directory alone
            advance = f"{self.command} init --json --directory {self.session}"
            return tool("Bash", {"command": advance, "description": "Advance the session"})
        self.outputs.append(document)
        if document["phase"] == "complete":
            return text(f"Done: published {json.dumps(document['receipt']['published'])}")
        return self.delegate(document)

    def delegate(self, document: dict[str, Any]) -> Turn:
        """One subagent per selected run (discovery) or per task (maintenance)."""
        groups: dict[str, list[str]] = {}
        for task in document["tasks"]:
            data = _task_input(json.loads(Path(task["task_file"]).read_text()))
            key = data["run"]["run_id"] if document["phase"] == "discovery" else task["digest"]
            groups.setdefault(key, []).append(task["task_file"])
        calls = []
        for key, files in sorted(groups.items()):
            self.agents += 1
            prompt = f"{SUBAGENT} ({key}):\n" + "\n".join(files)
            calls.append(
                ToolCall(
                    "Agent",
                    {"description": f"Answer {key}", "prompt": prompt,
                     "subagent_type": "general-purpose", "run_in_background": False},
                    f"call_agent_{self.agents:04d}",
                )
            )  # fmt: skip
        return Turn(tuple(calls))

    def subagent(self, received: Received, opening: str, results: list[str]) -> Turn:
        files = [line for line in opening.splitlines() if line.endswith(".task.json")]
        if not results:  # read every task file first
            return Turn(tuple(
                ToolCall("Read", {"file_path": f}, f"call_read_{i}_{abs(hash(f)) % 10**6}")
                for i, f in enumerate(files)
            ))  # fmt: skip
        if not _called(received, "Write"):
            calls = []
            for i, name in enumerate(files):
                task = json.loads(Path(name).read_text())
                envelope = {"schema": "active-memory/exchange-answer@1",
                            "specialist": task["specialist"], "digest": task["digest"],
                            "answer": _answer_for(task)}  # fmt: skip
                target = str(Path(name).parent / task["answer_file"])
                content = json.dumps(envelope)
                call_id = f"call_write_{i}_{abs(hash(name)) % 10**6}"
                calls.append(ToolCall("Write", {"file_path": target, "content": content}, call_id))
            return Turn(tuple(calls))
        return text("Answer files written.")


def _called(received: Received, name: str) -> bool:
    """Whether the conversation so far has a call of the tool `name`."""
    body = received.body if isinstance(received.body, dict) else {}
    return any(
        isinstance(block, dict) and block.get("type") == "tool_use" and block.get("name") == name
        for message in body.get("messages") or []
        if message.get("role") == "assistant" and isinstance(message.get("content"), list)
        for block in message["content"]
    )


def _json_in(result: str) -> dict[str, Any] | None:
    start = result.find('{\n  "phase"')
    if start < 0:
        return None
    value, _ = json.JSONDecoder().raw_decode(result, start)
    return value if isinstance(value, dict) else None


def _run_claude(
    claude: Path, env: dict[str, str], cwd: Path, session: Path, prompt: str, log: list[str]
) -> list[dict[str, Any]]:
    command = [str(claude), "-p", prompt, "--output-format", "stream-json", "--verbose",
               "--allowedTools", "Skill,Bash,Read,Write,Agent", "--add-dir", str(session),
               "--max-turns", "60"]  # fmt: skip
    try:
        done = subprocess.run(
            command, cwd=cwd, env=env, capture_output=True, text=True, timeout=240, check=False
        )
    except subprocess.TimeoutExpired as exc:
        output = exc.stdout.decode() if isinstance(exc.stdout, bytes) else str(exc.stdout)
        pytest.fail("\n".join(["claude timed out", *log[-30:], output[-3000:]]))
    assert done.returncode == 0, "\n".join([*log[-30:], done.stderr[-2000:]])
    return [json.loads(line) for line in done.stdout.splitlines() if line.startswith("{")]


def test_claude_code_lists_the_skill_and_a_session_following_it_completes_init(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    claude = require_harness("claude")
    history = History(tmp_path)
    anyio.run(history.seed)
    history.session.parent.mkdir(exist_ok=True)
    env = claude_environment(tmp_path / "client", "", KEY)
    env |= {
        "ACTIVE_MEMORY_STORE": str(history.store),
        "ZEROSHOT_STATE_DIR": str(tmp_path / "state" / "zeroshot"),
        "ZEROSHOT_RUST_STATE_DIR": str(tmp_path / "state" / "zeroshot-rust"),
        "GIT_CONFIG_GLOBAL": "/dev/null",
    }
    monkeypatch.setenv("HOME", env["HOME"])
    monkeypatch.delenv("CLAUDE_CONFIG_DIR", raising=False)
    assert main(["skill", "install", "claude", "--user"]) == 0
    work = tmp_path / "work"
    work.mkdir()
    prompt = f"{MAIN} Session folder: {history.session}. Run records: {history.runs}."

    follower = SkillFollower(history.session, history.runs)
    with ModelServer(respond=follower) as server:
        env["ANTHROPIC_BASE_URL"] = server.url
        events = _run_claude(claude, env, work, history.session, prompt, follower.log)
        requests = server.main_requests()

    # The client lists our skill: in its init event and in the model's system prompt.
    init = next(e for e in events if e.get("type") == "system" and e.get("subtype") == "init")
    assert SKILL_NAME in init["skills"]
    assert f"- {SKILL_NAME}: Initialise Active Memory" in requests[0].dump()
    # The session followed the skill through every phase to `complete`.
    phases = [d["phase"] for d in follower.outputs]
    assert phases == ["discovery", "maintenance", "complete"], phases
    first = follower.outputs[0]
    selected = sorted(e["run_id"] for e in first["inventory"]["selected"])
    assert selected == [f"run-{r}{n}" for r in "ab" for n in range(1, 6)]
    assert sorted(e["kind"] for e in first["inventory"]["excluded"]) == [
        "missing_checkout",
        "unfinished",
    ]
    discovery_agents = {t["specialist"] for t in first["tasks"]}
    assert discovery_agents == {"graph_discovery", "repository_discovery"}
    assert follower.agents == 3  # one per run with evidence (a1, b1), one for maintenance
    assert [t["specialist"] for t in follower.outputs[1]["tasks"]] == ["repository_maintenance"]
    receipt = follower.outputs[-1]["receipt"]
    assert receipt["published"]["created"] and len(receipt["published"]["created"]) == 1
    result = events[-1]
    assert result["type"] == "result" and result["subtype"] == "success"

    async def stored() -> list[Any]:
        async with open_store(str(history.store)) as store:
            return list(await store.select(LessonQuery()))

    lessons = anyio.run(stored)
    titles = sorted(x.title for x in lessons)
    assert titles == [
        "Regenerate the beta client after schema edits",
        "Regenerate the client with make api-client",
    ]
    # Calling init again returns the same receipt: the session is complete.
    again = subprocess.run(
        [follower.command or "", "init", "--directory", str(history.session)],
        env=env, capture_output=True, text=True, check=True,
    )  # fmt: skip
    assert json.loads(again.stdout)["receipt"] == receipt


@pytest.mark.parametrize("where", ["--project", "--user"])
def test_codex_lists_the_installed_skill_at_project_and_user_level(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, where: str
) -> None:
    codex = require_harness("codex")
    env = isolated_home(tmp_path)
    repo = tmp_path / "repo"
    repo.mkdir()
    subprocess.run(["git", "init", "-q"], cwd=repo, check=True)
    monkeypatch.setenv("HOME", env["HOME"])
    monkeypatch.chdir(repo)
    assert main(["skill", "install", "codex", where]) == 0
    # The prompt Codex would send its model, rendered without calling one.
    done = subprocess.run(
        [str(codex), "debug", "prompt-input", "hello"],
        cwd=repo, env=env, capture_output=True, text=True, timeout=120, check=False,
    )  # fmt: skip
    assert done.returncode == 0, done.stderr[-2000:]
    listed = re.findall(rf"- {SKILL_NAME}: Initialise Active Memory[^\n\\]*", done.stdout)
    assert len(listed) == 1, done.stdout[-3000:]
    root = repo / ".agents" / "skills" if where == "--project" else tmp_path / "home" / ".agents"
    assert str(root) in done.stdout
