"""The story-graph suite: short stories whose relationship graph the model must extract through a typed tool call.

Why: a nested output (a list of typed edges whose relation comes from an enum, plus a list of typed members)
is where tool-calling models fail most, and a family story is where they are most tempted to answer from
habit instead of from the text. Each story is generated from a seeded random family, so it cannot have been
memorised, and carries the traps of WeiXiaoTien's story: guild titles that sound like kinship ("the guild's
fourteenth lady", "Mother of the Hall") held by characters who are nobody's mother, adoptive and foster
relations next to biological ones, characters referred to but never named ("Mara's mother, whose name nobody
remembers"), relations stated from either side ("Anna raised her son Tomas", "Tomas is Anna's boy"), a second
group whose members are not asked for, and one relation the story leaves ambiguous on purpose (either reading
is an optional edge: neither rewarded nor penalised).

The expected graph lists every stated relation in both directions (the prompt says so); the score is
WeiXiaoTien's: valid edges / expected edges x (1 - invalid edges / output edges) x 0.8, plus members found /
expected members x (1 - invalid members / output members) x 0.2. `graph_metrics` turns the edge counts summed
over a run into edge precision, recall and F1.

The same `generate_cases(people, count, seed)` gives byte-identical cases in any process: one
`random.Random(seed)` drives everything, in a fixed order, and nothing depends on set order or `hash()`.
"""

from __future__ import annotations

from pydantic import BaseModel, ConfigDict, Field

from typed_eval.contracts import AnswerMode
from typed_eval.core.datasets import Dataset, bounded_size, dataset_from_cases
from typed_eval.core.errors import InputError
from typed_eval.core.suite import Suite, SuiteFlag
from typed_eval.core.tasks import Task
from typed_eval.suites.flags import positive
from typed_eval.suites.story_graph.grading import (
    grade,
    graph_metrics,
    show_graph,
)
from typed_eval.suites.story_graph.graph import (
    KINSHIP_TITLES,
    Edge,
    ExpectedGraph,
    Member,
    Relation,
    StoryGraph,
    Title,
)
from typed_eval.suites.story_graph.stories import (
    generate_cases,
    iter_cases,
)
from typed_eval.suites.story_graph.wording import (
    MAX_PEOPLE,
    MIN_PEOPLE,
)

__all__ = [
    "KINSHIP_TITLES",
    "MAX_PEOPLE",
    "MIN_PEOPLE",
    "TASK",
    "Edge",
    "ExpectedGraph",
    "Member",
    "Relation",
    "StoryGraph",
    "Title",
    "generate_cases",
    "grade",
    "graph_metrics",
    "show_graph",
]

# --- output types (they become the tool's JSON schema) --------------------------------------------------------


# --- scoring --------------------------------------------------------------------------------------------------


# --- the generator --------------------------------------------------------------------------------------------


# --- the task -------------------------------------------------------------------------------------------------

TOOL_NAME = "submit_graph"


def _instructions(mode: AnswerMode) -> str:
    task = "You read short stories and record who is related to whom, exactly as the story states it."
    if mode == "tool":
        return f"{task} Answer by calling the {TOOL_NAME} tool once, with every edge and every member."
    relations = ", ".join(r.value for r in Relation)
    titles = ", ".join(t.value for t in Title)
    shape = (
        '{"edges": [{"source": "...", "relation": "...", "target": "...", "note": null}], '
        '"members": [{"name": "...", "title": "..."}]}'
    )
    return (
        f"{task} Answer with only a JSON object of this shape: {shape}. The relation is one of: {relations}. "
        f"The title is one of: {titles}."
    )


TASK: Task[StoryGraph] = Task(
    name="story-graph",
    output_type=StoryGraph,
    score=grade,
    instructions=_instructions,
    tool_name=TOOL_NAME,
    tool_description="Submit the story's relationship graph: every relation stated between named characters as "
    "directed edges, in both directions, and the members of the group the question names with their titles.",
    aggregate="mean",
    metrics=graph_metrics,
)
"""The built-in `story-graph` task: a `StoryGraph` through the `submit_graph` tool, scored by `grade`."""


MAX_STORIES = 100_000
"""The most stories a run may generate (a few minutes of generating: each is made before the first is posed)."""


class StoryGraphParams(BaseModel):
    """How many stories, of how many people, from which seed."""

    model_config = ConfigDict(extra="forbid")

    people: int = Field(
        8, ge=MIN_PEOPLE, le=MAX_PEOPLE, description=f"named people per story, {MIN_PEOPLE} to {MAX_PEOPLE}"
    )
    count: int = Field(20, ge=1, description=f"number of stories, at most {MAX_STORIES:,}")
    seed: int = Field(42, description="generator seed")


def _build(params: StoryGraphParams) -> tuple[Task[StoryGraph], Dataset]:
    people, count, seed = params.people, params.count, params.seed
    bounded_size(count, "count", most=MAX_STORIES)
    try:
        iter_cases(people, count, seed)
    except ValueError as exc:
        raise InputError(str(exc)) from None
    dataset = dataset_from_cases(
        lambda: iter_cases(people, count, seed),
        suite="story-graph",
        total=count,
        source="generated",
        params={"people": people, "count": count, "seed": seed},
    )
    return TASK, dataset


STORY_GRAPH = Suite(
    name="story-graph",
    params=StoryGraphParams,
    build=_build,
    description="stories to relationship graphs: typed edges and members through one tool call (WeiXiaoTien's score)",
    show_answer=show_graph,
    flags=(
        SuiteFlag("--people", "people", type=positive),
        SuiteFlag("--count", "count", type=positive),
        SuiteFlag("--seed", "seed", type=int),
    ),
)
