"""Lanes and answer models for provider tests."""

from __future__ import annotations

from typing import Any

from pydantic import BaseModel, ConfigDict, Field, JsonValue

from active_memory.config import SpecialistLane

ANTHROPIC_KEY = "sk-ant-api03-FAKEKEYfakekeyFAKEKEY0123456789"
OPENAI_KEY = "sk-proj-FAKEKEYfakekey0123456789abcdef"
OPENROUTER_KEY = "sk-or-v1-FAKEKEYfakekey0123456789abcdef"


def lane(**changes: Any) -> SpecialistLane:
    """The worker's lane of SPEC §2's example, changed as asked."""
    fields: dict[str, Any] = {
        "source_node": "worker",
        "source_kind": "step",
        "chosen_by": "first_step",
        "harness": "claude",
        "provider": "anthropic",
        "model": "claude-sonnet-5",
        "effort": "high",
        "connections": {},
        "env": ["ANTHROPIC_API_KEY"],
    }
    fields.update(changes)
    return SpecialistLane.model_validate(fields)


class Proposal(BaseModel):
    """A small discovery-like answer item."""

    model_config = ConfigDict(extra="forbid")

    title: str = Field(max_length=96)
    evidence: list[str] = Field(min_length=1)


class Discoveries(BaseModel):
    """A small discovery-like answer: `{"lessons": [...]}`."""

    model_config = ConfigDict(extra="forbid")

    lessons: list[Proposal]


GOOD: JsonValue = {"lessons": [{"title": "Regenerate the client", "evidence": ["E-1"]}]}
BAD: JsonValue = {"lessons": [{"title": "Regenerate the client", "evidence": []}]}
