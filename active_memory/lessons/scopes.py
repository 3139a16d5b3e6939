"""Whose lessons a lesson is (SPEC §5): one repository's, or one node's of one graph."""

from __future__ import annotations

from typing import Annotated, Literal

from pydantic import AfterValidator, Field

from active_memory.lessons.fields import GraphHash, Namespace, VocabularyModel, not_blank


class RepositoryScope(VocabularyModel):
    """Lessons about one repository, injected when a tool call touches matching code."""

    kind: Literal["repository"] = "repository"
    repository: Namespace

    def key(self) -> tuple[str, str, str, str]:
        """A flat, sortable identity of the scope (kind, repository, graph hash, node)."""
        return ("repository", self.repository, "", "")


class GraphScope(VocabularyModel):
    """Lessons for one node of one graph, optionally only in one repository."""

    kind: Literal["graph"] = "graph"
    graph_hash: GraphHash
    node: Annotated[str, AfterValidator(not_blank)]
    repository: Namespace | None = None

    def key(self) -> tuple[str, str, str, str]:
        """A flat, sortable identity of the scope (kind, repository, graph hash, node)."""
        return ("graph", self.repository or "", self.graph_hash, self.node)


Scope = Annotated[RepositoryScope | GraphScope, Field(discriminator="kind")]
