"""How each built-in suite shows a record's answer to the case viewer (`Suite.show_answer`, through `answer_lines`): on
records made by running the suite's own task through pydantic-ai's agent loop with FunctionModels, in every answer
mode a suite poses, with wrong answers, hostile text kept verbatim, and records of shapes a view does not expect
(shown as the default view shows them, never an exception)."""

from __future__ import annotations

import asyncio
import dataclasses
import json
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

import pytest
from pydantic_ai import ModelMessage, ModelRequest, ModelResponse, TextPart, ToolCallPart, UserPromptPart
from pydantic_ai.embeddings import EmbeddingResult, EmbeddingSettings, TestEmbeddingModel
from pydantic_ai.embeddings.result import EmbedInputType
from pydantic_ai.models.function import AgentInfo, FunctionModel
from pydantic_ai.profiles import ModelProfile

import evaluator
from evaluator import Case, SampleRecord, Task
from farel_bench import TAG_INSTRUCTION
from tests.test_novelty import answerer, judging
from typed_eval.contracts import AnswerMode, Quiz
from typed_eval.core.suite import AnswerLine, Suite, answer_lines, suite_named
from typed_eval.providers.embeddings import TextEmbedder
from typed_eval.suites.case_files.suite import CASE_FILE, load_case_file, show_assertions, with_judge
from typed_eval.suites.farel.suite import FAREL, FAREL_TASK
from typed_eval.suites.judge import Judge
from typed_eval.suites.lineage.suite import LINEAGE, LINEAGE_TASK, generated_dataset
from typed_eval.suites.multiple_choice import show_option
from typed_eval.suites.novelty.suite import NOVELTY, NoveltySettings, novelty_dataset, novelty_task, show_answers
from typed_eval.suites.story_graph.suite import (
    STORY_GRAPH,
    TASK,
    Edge,
    ExpectedGraph,
    Member,
    Relation,
    Title,
    show_graph,
)

HOSTILE = "<script>alert(1)</script>"


def run(task: Task[Any], cases: Sequence[Case], model: FunctionModel, **options: Any) -> list[SampleRecord]:
    return asyncio.run(evaluator.evaluate(task, cases, model, local=True, concurrency=1, **options)).records


def prompt_of(messages: Sequence[ModelMessage]) -> str:
    first = messages[0]
    assert isinstance(first, ModelRequest)
    return next(str(p.content) for p in first.parts if isinstance(p, UserPromptPart))


def choosing(choice: Callable[[str], int], text: Callable[[str], str] | None = None) -> FunctionModel:
    """Answers a quiz (known by its prompt) with `choice(prompt)`: through the output tool, as JSON in native and
    prompted mode, or as the text `text(prompt)` (default: the number in farel-bench's tag) in the text modes."""

    def respond(messages: list[ModelMessage], info: AgentInfo) -> ModelResponse:
        prompt = prompt_of(messages)
        if info.output_tools:
            answer = {"reasoning": HOSTILE, "answer": choice(prompt)}
            return ModelResponse(parts=[ToolCallPart(info.output_tools[0].name, answer)])
        if "<ANSWER>" in prompt:  # the tag instruction is posed in the text modes only
            return ModelResponse(parts=[TextPart(text(prompt) if text else f"<ANSWER>{choice(prompt)}</ANSWER>")])
        return ModelResponse(parts=[TextPart(json.dumps({"answer": choice(prompt)}))])

    return FunctionModel(respond, profile=ModelProfile(supports_json_schema_output=True))


def broken(record: SampleRecord) -> list[AnswerLine]:
    raise KeyError("a plug-in's view that cannot read this record")


# --- FaRel and lineage: the option chosen ----------------------------------------------------------------------

QUIZ = Quiz(
    id="q1",
    class_name="parent",
    prompt="Given the family relationships:\n* Ada is Bo's parent.\nWhat is Ada to Bo?\nSelect the correct answer:\n"
    f"1. Ada is Bo's child.\n2. Ada is Bo's parent.\n3. Ada is Bo's {HOSTILE}.\n{TAG_INSTRUCTION}",
    options=("Ada is Bo's child.", "Ada is Bo's parent.", f"Ada is Bo's {HOSTILE}."),
    correct=2,
)
"""A quiz as a FaRel CSV file gives it: its options are whatever the file says."""


@pytest.mark.parametrize("mode", ["tool", "native", "prompted", "text", "tag"])
def test_farel_shows_the_option_chosen_right_or_wrong_in_every_mode(mode: AnswerMode) -> None:
    case = QUIZ.to_case()
    (right,) = run(FAREL_TASK, [case], choosing(lambda _: 2), mode=mode)
    (wrong,) = run(FAREL_TASK, [case], choosing(lambda _: 3), mode=mode)
    structured = {"reasoning": HOSTILE if mode == "tool" else None, "answer": 3}
    assert (right.status, wrong.status, wrong.output) == ("correct", "incorrect", "3" if mode in ("text", "tag")
                                                          else structured)  # fmt: skip
    assert answer_lines(FAREL, right) == [AnswerLine("2. Ada is Bo's parent.", "right")]
    assert answer_lines(FAREL, wrong) == [AnswerLine(f"3. Ada is Bo's {HOSTILE}.", "wrong")]


@pytest.mark.parametrize(
    ("reply", "lines"),
    [
        ("<ANSWER>7</ANSWER>", [AnswerLine("7. (no such option)", "wrong")]),
        ("<ANSWER>0</ANSWER>", [AnswerLine("0. (no such option)", "wrong")]),
        ("<ANSWER> 2 </ANSWER>", [AnswerLine("2. Ada is Bo's parent.", "right")]),  # farel-bench strips the tag
        ("<ANSWER>02</ANSWER>", [AnswerLine('"02" (not an option number)', "wrong")]),  # compared as text: wrong
        ("<ANSWER>2.</ANSWER>", [AnswerLine('"2." (not an option number)', "wrong")]),
        ("<ANSWER></ANSWER>", [AnswerLine('"" (not an option number)', "wrong")]),
        (f"<ANSWER>{HOSTILE}</ANSWER>", [AnswerLine(f'"{HOSTILE}" (not an option number)', "wrong")]),
        ("<ANSWER>" + "9" * 5000 + "</ANSWER>", [AnswerLine('"' + "9" * 5000 + '" (not an option number)', "wrong")]),
        ("no tag at all", [AnswerLine("no tag at all", "invalid")]),  # no output: the reply, as the default shows it
    ],
)
def test_farel_tag_mode_shows_what_the_reader_took(reply: str, lines: list[AnswerLine]) -> None:
    """In tag mode the reader takes whatever the first tag holds, and the scorer compares it with the number as
    text: a number no option has, or a text no number, is shown as such, wrong as it was scored."""
    (record,) = run(FAREL_TASK, [QUIZ.to_case()], choosing(lambda _: 0, lambda _: reply), mode="tag", retries=0)
    assert answer_lines(FAREL, record) == lines
    if record.output is not None:
        assert (record.score == 1.0) == (lines[0].mark == "right")


def test_lineage_shows_the_option_chosen_as_its_quiz_lists_it() -> None:
    (case,) = generated_dataset([8], 1, 42, shuffle=True).load()[:1]
    assert (case.expected, case.metadata["options"][2]) == (3, "Andrea is Stephen's ancestor.")
    (right,) = run(LINEAGE_TASK, [case], choosing(lambda _: 3), mode="tool")
    (wrong,) = run(LINEAGE_TASK, [case], choosing(lambda _: 5), mode="tag")
    (unread,) = run(LINEAGE_TASK, [case], choosing(lambda _: 0, lambda _: "<ANSWER>12</ANSWER>"), mode="tag",
                    retries=0)  # fmt: skip
    assert answer_lines(LINEAGE, right) == [AnswerLine("3. Andrea is Stephen's ancestor.", "right")]
    assert answer_lines(LINEAGE, wrong) == [AnswerLine("5. None of the above is correct.", "wrong")]
    assert unread.output is None  # lineage-bench's strict reading: one digit, or no answer
    assert answer_lines(LINEAGE, unread) == [AnswerLine("<ANSWER>12</ANSWER>", "invalid")]


def test_an_odd_multiple_choice_record_is_shown_as_its_json() -> None:
    (record,) = run(FAREL_TASK, [QUIZ.to_case()], choosing(lambda _: 2), mode="tool")
    odd = [
        record.model_copy(update={"output": {"answer": "2"}}),
        record.model_copy(update={"output": {"answer": True}}),
        record.model_copy(update={"output": {"answer": 10**12}}),
        record.model_copy(update={"output": [2]}),
        record.model_copy(update={"metadata": {}}),
        record.model_copy(update={"metadata": {"options": "Ada is Bo's child."}}),
        record.model_copy(update={"metadata": {"options": [1, 2, 3]}}),
    ]
    assert [answer_lines(FAREL, r) for r in odd] == [
        [AnswerLine('{"answer": "2"}')],
        [AnswerLine('{"answer": true}')],
        [AnswerLine('{"answer": 1000000000000}')],
        [AnswerLine("[2]")],
        *[[AnswerLine(json.dumps({"reasoning": HOSTILE, "answer": 2}))]] * 3,
    ]


# --- story-graph: valid, invalid and missing edges -------------------------------------------------------------


def edge(source: str, relation: str, target: str) -> Edge:
    return Edge(source=source, relation=Relation(relation), target=target)


STORY = Case(
    id="story",
    prompt="(hand-made)",
    expected=ExpectedGraph(
        group="Order of Tests",
        edges=[edge("Anna", "spouse", "Bertil"), edge("Bertil", "spouse", "Anna"), edge("Anna", "parent", "Mia"),
               edge("Mia", "child", "Anna"), edge("Bertil", "foster_parent", "Leo"),
               edge("Leo", "foster_child", "Bertil")],
        optional_edges=[edge("Mia", "sibling", "Leo"), edge("Leo", "sibling", "Mia")],
        members=[Member(name="Anna", title=Title.TREASURER), Member(name="Leo", title=Title.MOTHER_OF_THE_HALL)],
    ),
)  # fmt: skip


def submitting(graph: dict[str, Any]) -> FunctionModel:
    def respond(messages: list[ModelMessage], info: AgentInfo) -> ModelResponse:
        return ModelResponse(parts=[ToolCallPart("submit_graph", graph)])

    return FunctionModel(respond)


def test_story_graph_shows_each_edge_valid_then_invalid_then_missing() -> None:
    graph = {
        "edges": [
            {"source": "Anna", "relation": "spouse", "target": "Bertil", "note": None},
            {"source": " bertil ", "relation": "spouse", "target": "ANNA", "note": None},  # names match as the scorer
            {"source": "Anna", "relation": "parent", "target": "Mia", "note": "twice"},  # matches them: valid, once
            {"source": "Anna", "relation": "parent", "target": "Mia", "note": None},
            {"source": "Mia", "relation": "sibling", "target": "Leo", "note": None},  # optional: neither way scored
            {"source": HOSTILE, "relation": "parent", "target": "Mia", "note": None},
            {"source": "Mia", "relation": "parent", "target": "Anna", "note": None},
        ],
        "members": [{"name": "Anna", "title": "treasurer"}, {"name": "Leo", "title": "elder brother"}],
    }
    (record,) = run(TASK, [STORY], submitting(graph))
    assert answer_lines(STORY_GRAPH, record) == [
        AnswerLine("Anna -parent-> Mia", "valid"),
        AnswerLine("Anna -spouse-> Bertil", "valid"),
        AnswerLine("bertil -spouse-> ANNA", "valid"),
        AnswerLine("Mia -sibling-> Leo (optional)"),
        AnswerLine(f"{HOSTILE} -parent-> Mia", "invalid"),
        AnswerLine("Mia -parent-> Anna", "invalid"),
        AnswerLine("Bertil -foster_parent-> Leo", "missing"),
        AnswerLine("Leo -foster_child-> Bertil", "missing"),
        AnswerLine("Mia -child-> Anna", "missing"),
        AnswerLine("Anna (treasurer)", "valid"),
        AnswerLine("Leo (elder brother)", "invalid"),
        AnswerLine("Leo (mother of the hall)", "missing"),
    ]
    details = record.score_details or {}
    assert (details["valid_edges"], details["optional_edges"]) == (3, 1)  # the lines are what the scorer counted
    assert details["invalid"] == [f"{HOSTILE} -parent-> Mia", "Mia -parent-> Anna"]
    assert details["missing"] == ["Bertil -foster_parent-> Leo", "Leo -foster_child-> Bertil", "Mia -child-> Anna"]
    assert (details["invalid_members_list"], details["missing_members"]) == (["Leo (elder brother)"],
                                                                             ["Leo (mother of the hall)"])  # fmt: skip


def test_an_empty_graph_is_all_missing_and_an_odd_one_is_shown_as_its_json() -> None:
    (record,) = run(TASK, [STORY], submitting({"edges": [], "members": []}))
    assert [line.mark for line in answer_lines(STORY_GRAPH, record)] == ["missing"] * 8
    odd = {"edges": [{"source": "Anna", "relation": "aunt", "target": "Mia"}], "members": []}
    assert answer_lines(STORY_GRAPH, record.model_copy(update={"output": odd})) == [AnswerLine(json.dumps(odd))]
    assert answer_lines(STORY_GRAPH, record.model_copy(update={"expected": None})) == [
        AnswerLine('{"edges": [], "members": []}')
    ]


# --- case files: the output, then each assertion ----------------------------------------------------------------

CASES_YAML = """
prompts: ["{{q}}"]
tests:
  - vars: {q: "Say hi"}
    assert:
      - {type: contains, value: hi}
      - {type: not-contains, value: "<script>"}
      - {type: python, value: "len(output) < 5"}
      - {type: llm-rubric, value: "Is it friendly?"}
  - vars: {q: "Give JSON"}
    options: {output_schema: {type: object, required: [n], properties: {n: {type: integer}}}}
    assert:
      - {type: is-json}
      - {type: equals, value: {n: 3}}
"""


def test_case_files_show_the_output_then_each_assertion_passed_or_failed(tmp_path: Path) -> None:
    (tmp_path / "cases.yaml").write_text(CASES_YAML, encoding="utf-8")
    task, dataset = load_case_file(tmp_path / "cases.yaml")

    def respond(messages: list[ModelMessage], info: AgentInfo) -> ModelResponse:
        if info.output_tools:
            return ModelResponse(parts=[ToolCallPart(info.output_tools[0].name, {"n": 4})])
        return ModelResponse(parts=[TextPart(f"hi {HOSTILE}")])

    def judge(messages: list[ModelMessage], info: AgentInfo) -> ModelResponse:
        (tool,) = info.output_tools
        return ModelResponse(parts=[ToolCallPart(tool.name, {"reason": f"Friendly, {HOSTILE} aside.", "score": 0.75})])

    judged = with_judge(task, Judge(FunctionModel(judge), "fn-judge", local=True))
    text, structured = run(judged, dataset.load(), FunctionModel(respond))
    assert (text.mode, structured.mode) == ("text", "tool")
    assert answer_lines(CASE_FILE, text) == [
        AnswerLine(f"hi {HOSTILE}"),
        AnswerLine("contains: Assertion passed", "pass"),
        AnswerLine("not-contains: Expected output to not contain '<script>'", "fail"),
        AnswerLine("python: Python code returned false", "fail"),
        AnswerLine(f"llm-rubric: Friendly, {HOSTILE} aside.", "pass"),
    ]
    assert answer_lines(CASE_FILE, structured) == [
        AnswerLine('{"n":4}'),  # as the assertions read it: compact, as JSON.stringify writes it
        AnswerLine("is-json: Assertion passed", "pass"),
        AnswerLine('equals: Expected output \'{"n":4}\' to equal {"n":3}', "fail"),
    ]
    odd = [
        text.model_copy(update={"score_details": None}),
        text.model_copy(update={"score_details": {"pass": False, "assertions": "all failed"}}),
        text.model_copy(update={"score_details": {"assertions": [{"type": "contains", "pass": 1, "reason": "?"}]}}),
        text.model_copy(update={"score_details": {"assertions": [["contains", True, "ok"]]}}),
    ]
    assert [answer_lines(CASE_FILE, r) for r in odd] == [[AnswerLine(f"hi {HOSTILE}")]] * 4


# --- novelty: the answers of a question's loop ------------------------------------------------------------------


class Vectors(TestEmbeddingModel):
    """Embeds each answer as the vector given for it, so each novelty is exact (1 - the highest cosine)."""

    def __init__(self, vectors: dict[str, list[float]]) -> None:
        super().__init__("vectors", dimensions=3)
        self.vectors = vectors

    async def embed(
        self, inputs: str | Sequence[str], *, input_type: EmbedInputType, settings: EmbeddingSettings | None = None
    ) -> EmbeddingResult:
        result = await super().embed(inputs, input_type=input_type, settings=settings)
        return dataclasses.replace(result, embeddings=[self.vectors[text] for text in result.inputs])


FARM, GYM, BOTH, NAP = "An indoor farm.", "A climbing gym.", "A farm with a climbing wall.", "A nap."
SCRIPTS = {
    "Similar?": [FARM, GYM, FARM],  # the repeat is too similar
    "Incoherent?": [FARM, HOSTILE],  # the judge rates the second 2
    "Cap?": [FARM, GYM, BOTH],  # 1 - 1/sqrt(2) from both earlier answers: accepted, at the cap
    "Silent?": ["  "],  # empty, and again when asked to correct it
    "Unjudged?": [NAP],  # the judge answers 11, out of range, every time
}


def test_novelty_shows_each_answer_accepted_or_why_it_ended_the_loop() -> None:
    settings = NoveltySettings(max_answers=3)
    embedder = TextEmbedder(Vectors({FARM: [1.0, 0.0, 0.0], GYM: [0.0, 1.0, 0.0], BOTH: [1.0, 1.0, 0.0]}), "vectors",
                            local=True, in_process=True)  # fmt: skip
    judge = Judge(judging({HOSTILE: 2, NAP: 11}), "fn-judge", local=True)
    cases = novelty_dataset(list(SCRIPTS), "vectors", settings).load()
    similar, incoherent, cap, silent, unjudged = run(novelty_task(embedder, judge, settings), cases,
                                                     answerer(SCRIPTS), retries=1)  # fmt: skip
    assert answer_lines(NOVELTY, similar) == [
        AnswerLine(f"{FARM} (coherence 8/10, novelty 1.00)", "valid"),
        AnswerLine(f"{GYM} (coherence 8/10, novelty 1.00)", "valid"),
        AnswerLine(f"{FARM} (coherence 8/10, novelty 0.00, too similar)", "invalid"),
    ]
    assert answer_lines(NOVELTY, incoherent) == [
        AnswerLine(f"{FARM} (coherence 8/10, novelty 1.00)", "valid"),
        AnswerLine(f"{HOSTILE} (coherence 2/10, incoherent)", "invalid"),
    ]
    assert answer_lines(NOVELTY, cap) == [
        AnswerLine(f"{FARM} (coherence 8/10, novelty 1.00)", "valid"),
        AnswerLine(f"{GYM} (coherence 8/10, novelty 1.00)", "valid"),
        AnswerLine(f"{BOTH} (coherence 8/10, novelty 0.29)", "valid"),
    ]
    assert answer_lines(NOVELTY, silent) == [
        AnswerLine("(no answer: the model gave none after its corrective retries)", "missing")
    ]
    assert answer_lines(NOVELTY, unjudged) == [AnswerLine(f"{NAP} (no verdict from the judge)", "invalid")]
    assert answer_lines(NOVELTY, similar.model_copy(update={"output": "An indoor farm."})) == [
        AnswerLine("An indoor farm.")  # a text output, as the default view shows it
    ]
    assert answer_lines(NOVELTY, similar.model_copy(update={"output": {"answers": [{"text": 1}], "stop": "cap"}})) == [
        AnswerLine('{"answers": [{"text": 1}], "stop": "cap"}')
    ]


# --- the suites as registered, and a plug-in's view that fails ----------------------------------------------------


def test_the_registered_suites_carry_their_views() -> None:
    views = {name: suite_named(name)[0].suite.show_answer for name in ("farel", "lineage", "story-graph", "novelty")}
    assert views == {"farel": show_option, "lineage": show_option, "story-graph": show_graph, "novelty": show_answers}
    assert suite_named("cases.yaml")[0].suite.show_answer is show_assertions
    assert suite_named("suite.py")[0].suite.show_answer is None  # a suite file's task is its author's: its JSON


def test_a_view_that_raises_falls_back_to_the_outputs_json() -> None:
    plugin: Suite[Any] = dataclasses.replace(FAREL, show_answer=broken)
    (structured,) = run(FAREL_TASK, [QUIZ.to_case()], choosing(lambda _: 3), mode="tool")
    (tagged,) = run(FAREL_TASK, [QUIZ.to_case()], choosing(lambda _: 3), mode="tag")
    assert answer_lines(plugin, structured) == [AnswerLine(json.dumps({"reasoning": HOSTILE, "answer": 3}))]
    assert answer_lines(plugin, tagged) == [AnswerLine("3")]


def test_an_unknown_mark_is_no_class_and_a_known_one_is_escaped() -> None:
    """In the viewer's pages and the HTML report's grid alike: one function renders an answer line for both."""
    from typed_eval.reports.html import answer_html as _line

    hostile = AnswerLine("<i>", '"><form action=/elsewhere><button>')  # type: ignore[arg-type]
    assert _line(hostile, 100) == '<div class="answer">&lt;i&gt;</div>'
    assert (
        _line(AnswerLine("<i>", "pass"), 100)
        == '<div class="answer mark-pass"><span class="tag">pass</span> &lt;i&gt;</div>'
    )
