"""A store with lessons of three repositories, each with a real git checkout of its own,
and a fourth repository with no checkout on this machine (issue 30's team store)."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from checkout_support import git_checkout
from conftest import AUTHOR
from ui_support import publish

from active_memory.checkout import Checkout
from active_memory.known_checkouts import remember
from active_memory.lessons import (
    Associations,
    Card,
    Citation,
    CreateLesson,
    Evidence,
    RepositoryScope,
)
from active_memory.orchestrator.publish import fingerprinted

API = "repo:github.com/acme/api"
WEB = "repo:github.com/acme/web"
INFRA = "repo:github.com/acme/infra"
ELSEWHERE = "repo:github.com/acme/mobile"
"""A repository whose checkout is not on this machine."""

SCHEMA = "".join(f"field_{n} = {n}\n" for n in range(1, 13))
APP = "".join(f"export const route{n} = '/r{n}';\n" for n in range(1, 13))
MAIN_TF = "".join(f'variable "v{n}" {{ default = {n} }}\n' for n in range(1, 13))


@dataclass(frozen=True)
class Team:
    """The three checkouts; the lesson IDs of each repository."""

    api: Path
    web: Path
    infra: Path


def _lesson(namespace: str, title: str, path: str, lines: tuple[int, int]) -> CreateLesson:
    return CreateLesson(
        scope=RepositoryScope(repository=namespace),
        card=Card(
            title=title,
            recommendation=f"After editing `{path}` run `make check` before committing.",
            associations=Associations(files=[path]),
        ),
        evidence=Evidence(
            run_ids=["run-7"],
            evidence_ids=["ev-tf-000000000007"],
            citations=[Citation(path=path, lines=lines)],
        ),
        author=AUTHOR,
        reason="seen in run-7",
    )


def team_store(location: str, root: Path, env: dict[str, str]) -> Team:
    """Three checkouts under `root` and their lessons in the store at `location`:
    L-1, L-2 (api), L-3, L-4 (web), L-5, L-6 (infra), L-7 (mobile, fingerprinted against
    a checkout that then went away). This machine knows web's and infra's checkouts
    (the registry in `env`'s state folder); api's is given to the view."""
    api = git_checkout(root / "api", {"schema/fields.py": SCHEMA}, API)
    web = git_checkout(root / "web", {"src/app.ts": APP}, WEB)
    infra = git_checkout(root / "infra", {"terraform/main.tf": MAIN_TF}, INFRA)
    mobile = git_checkout(root / "mobile", {"app/build.gradle": SCHEMA}, ELSEWHERE)
    for checkout, lessons in (
        (api, [_lesson(API, "Regenerate the schema client", "schema/fields.py", (2, 3)),
               _lesson(API, "Keep field numbers stable", "schema/fields.py", (8, 9))]),
        (web, [_lesson(WEB, "Register every route in app.ts", "src/app.ts", (1, 2)),
               _lesson(WEB, "Route names match their paths", "src/app.ts", (5, 6))]),
        (infra, [_lesson(INFRA, "Plan before apply", "terraform/main.tf", (1, 2)),
                 _lesson(INFRA, "Defaults stay numeric", "terraform/main.tf", (4, 5))]),
        (mobile, [_lesson(ELSEWHERE, "Bump the gradle version", "app/build.gradle", (1, 2))]),
    ):  # fmt: skip
        publish(location, fingerprinted(lessons, Checkout(checkout)))
    remember(WEB, web, "session", env)
    remember(INFRA, infra, "session", env)
    import shutil

    shutil.rmtree(mobile)  # its checkout is on another machine now
    return Team(api, web, infra)


def change_api_schema(team: Team) -> None:
    """Change the lines L-1 cites (schema/fields.py 2-3), nothing else."""
    path = team.api / "schema" / "fields.py"
    path.write_text(SCHEMA.replace("field_2 = 2\n", "field_2 = 20  # renumbered\n"))
