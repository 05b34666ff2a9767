"""The output types of the story-graph task (they become the tool's JSON schema): typed edges whose relation comes
from an enum, and a group's members with their titles; and the graph a story is expected to give."""

from __future__ import annotations

from enum import StrEnum

from pydantic import BaseModel, ConfigDict, Field

__all__ = ["KINSHIP_TITLES", "REVERSE", "Edge", "ExpectedGraph", "Member", "Relation", "StoryGraph", "Title"]


class Relation(StrEnum):
    """What the source of an edge is to its target: "source is the RELATION of target"."""

    PARENT = "parent"
    CHILD = "child"
    SIBLING = "sibling"
    SPOUSE = "spouse"
    ADOPTIVE_PARENT = "adoptive_parent"
    ADOPTED_CHILD = "adopted_child"
    FOSTER_PARENT = "foster_parent"
    FOSTER_CHILD = "foster_child"
    OTHER = "other"


REVERSE: dict[Relation, Relation] = {
    Relation.PARENT: Relation.CHILD,
    Relation.CHILD: Relation.PARENT,
    Relation.SIBLING: Relation.SIBLING,
    Relation.SPOUSE: Relation.SPOUSE,
    Relation.ADOPTIVE_PARENT: Relation.ADOPTED_CHILD,
    Relation.ADOPTED_CHILD: Relation.ADOPTIVE_PARENT,
    Relation.FOSTER_PARENT: Relation.FOSTER_CHILD,
    Relation.FOSTER_CHILD: Relation.FOSTER_PARENT,
    Relation.OTHER: Relation.OTHER,
}
"""The same fact read from the target's side."""


class Edge(BaseModel):
    """One directed relation between two characters the story names: "source is the RELATION of target"."""

    model_config = ConfigDict(extra="forbid")

    source: str = Field(description="Name of a character the story names, spelled as in the story.")
    relation: Relation = Field(
        description="What the source is to the target: parent / child (biological), sibling, spouse, "
        "adoptive_parent (source adopted target) / adopted_child, foster_parent (source took target in as a "
        "foster child) / foster_child, or other (any other stated relation, described in note)."
    )
    target: str = Field(description="Name of a character the story names, spelled as in the story.")
    note: str | None = Field(default=None, description="For relation `other`: what the relation is (free text).")


class Title(StrEnum):
    """The titles the groups of the stories give their members (ranks, whatever they sound like)."""

    LEADER = "leader"
    TREASURER = "treasurer"
    SCRIBE = "scribe"
    KEEPER_OF_THE_KEYS = "keeper of the keys"
    STEWARD = "steward"
    FOURTEENTH_LADY = "fourteenth lady"
    MOTHER_OF_THE_HALL = "mother of the hall"
    ELDER_BROTHER = "elder brother"


KINSHIP_TITLES: tuple[Title, ...] = (Title.FOURTEENTH_LADY, Title.MOTHER_OF_THE_HALL, Title.ELDER_BROTHER)
"""Titles that sound like kinship: the stories give them only to characters who lack that kinship."""


class Member(BaseModel):
    """A member of the group the question names, with the title the member holds in it."""

    model_config = ConfigDict(extra="forbid")

    name: str = Field(description="The member's name, spelled as in the story.")
    title: Title = Field(description="The title the member holds in the group the question names.")


class StoryGraph(BaseModel):
    """The relationship graph of a story and the members of the group the question names."""

    model_config = ConfigDict(extra="forbid")

    edges: list[Edge] = Field(
        description="Every relation the story states between two named characters, each in both directions "
        "(A parent B and B child A, A sibling B and B sibling A, ...)."
    )
    members: list[Member] = Field(description="Every member of the group the question names, with their title.")


class ExpectedGraph(BaseModel):
    """What a right output looks like (a case's `expected`): required and optional edges, the group's members."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    group: str = Field(description="The name of the group whose members are asked for.")
    edges: list[Edge] = Field(description="Every stated relation, in both directions: each one is required.")
    optional_edges: list[Edge] = Field(
        default_factory=list,
        description="Both readings of the relations the story leaves ambiguous: neither rewarded nor penalised.",
    )
    members: list[Member] = Field(description="The group's members with their titles.")
