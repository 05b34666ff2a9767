"""The `bfcl` suite: BFCL v4's single-turn categories, posed as BFCL poses them and scored by its AST checker.

Function-calling (`tool` mode): the case's functions, converted as BFCL converts them, are the request's tools and
BFCL's messages are sent unchanged (no instructions of ours); the calls come back unexecuted and are scored. Prompt
(`text` mode): BFCL's prompting system prompt lists the functions and the reply is decoded as BFCL decodes
`[func(a=1), ...]`. The category is the case's group; the report adds BFCL's aggregates.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field

from typed_eval.contracts import AnswerMode, Case, GroupScore, RunSummary, SampleRecord, Scores, is_text_mode
from typed_eval.core.datasets import Dataset, dataset_from_cases
from typed_eval.core.errors import CaseScoringError
from typed_eval.core.money import money
from typed_eval.core.suite import AnswerLine, Suite
from typed_eval.core.tasks import Score, Task, TextReader
from typed_eval.suites.bfcl.categories import MULTI_TURN_CATEGORIES, parse_categories
from typed_eval.suites.bfcl.checker import Decoded, check_reply
from typed_eval.suites.bfcl.data import (
    INSTALL_HINT,
    SAMPLE_DIR,
    BfclCase,
    BfclData,
    load_folder,
    load_installed,
    load_sample,
)
from typed_eval.suites.bfcl.literals import SlowLiteral
from typed_eval.suites.bfcl.multi_turn.backend import check_installed
from typed_eval.suites.bfcl.multi_turn.backend_pool import BackendPool
from typed_eval.suites.bfcl.multi_turn.cases import load_multi_turn
from typed_eval.suites.bfcl.multi_turn.task import MultiTurnRunner, multi_turn_case
from typed_eval.suites.bfcl.multi_turn.turn_view import cause_metrics, trajectory_lines
from typed_eval.suites.bfcl.prompting import TooLargeToCompute, decode_prompt_reply, prompt_messages
from typed_eval.suites.bfcl.scores import Aggregate, CategoryScore, summarize
from typed_eval.suites.bfcl.source_calls import tree_sitter_needed
from typed_eval.suites.bfcl.tools import decode_tool_calls, tools_for

__all__ = ["BFCL", "BfclParams", "bfcl_metrics", "bfcl_task", "score_reply", "show_calls"]

SUITE = "bfcl"
SOLVED_COST = "bfcl-mt-solved-usd"
"""The leaderboard's figure: what a solved multi-turn case cost (shown as money: its name ends in `-usd`)."""
REPLY = "reply"
"""Key of a prompt-mode output (`{"reply": text}`), so a stored output says how it is decoded."""
AGGREGATES = {
    "non_live": "non_live_overall",
    "live": "live_overall",
    "irrelevance": "irrelevance_detection",
    "multi_turn": "multi_turn_overall",
    "overall": "overall",
}
"""BFCL's aggregates and their metric names (as its leaderboard's columns: never a category's name)."""


class BfclParams(BaseModel):
    """Which categories to pose, where BFCL's data is read from, and how multi-turn cases run BFCL's backends."""

    model_config = ConfigDict(extra="forbid")

    categories: str | None = Field(
        None,
        description="comma-separated BFCL categories, or single_turn, multi_turn, all (default: all; multi-turn "
        "runs BFCL's own backends: pip install --no-deps bfcl-eval==2026.3.23 mpmath)",
    )
    data: str | None = Field(
        None,
        description=f"a folder laid out as bfcl-eval's data/, or 'sample' for the shipped sample (default: the "
        f"installed bfcl-eval: {INSTALL_HINT})",
    )
    resolve: Literal["bfcl", "offered"] = Field(
        "bfcl",
        description="multi-turn calls run among every function of the case's classes, as BFCL runs them (bfcl; its "
        "own ground truth calls a held-out function early once), or only among those offered so far (offered)",
    )
    backend_workers: int = Field(2, ge=1, le=32, description="processes running multi-turn backends")
    backend_timeout: float = Field(
        30.0, gt=0, le=3600, description="seconds a multi-turn backend call may take before its case is an error"
    )


def _load(params: BfclParams, categories: Sequence[str]) -> BfclData:
    if params.data is None:
        return load_installed(categories)
    if params.data == "sample":
        return load_sample(categories)
    return load_folder(Path(params.data), categories)


def _last_user_text(question: Sequence[dict[str, Any]]) -> str:
    texts = [str(m.get("content", "")) for m in question if m.get("role") == "user"]
    return texts[-1] if texts else ""


def bfcl_case(case: BfclCase) -> Case:
    """A BFCL entry as a case: its messages and function docs in the metadata, its possible answers expected."""
    return Case(
        id=case.id,
        prompt=_last_user_text(case.question),
        expected=case.ground_truth,
        group=case.category,
        metadata={"question": case.question, "functions": case.functions},
    )


def _functions(case: Case) -> list[dict[str, Any]]:
    """The case's tools in function-calling mode, converted as BFCL's FC handler converts them."""
    return [tool["function"] for tool in tools_for(case.metadata["functions"], case.group or "")]


def _messages(case: Case, mode: AnswerMode) -> list[dict[str, Any]]:
    question: list[dict[str, Any]] = case.metadata["question"]
    if mode == "text":
        return prompt_messages(question, case.metadata["functions"], case.group or "")
    return [dict(message) for message in question]


def _decoded(output: Any, category: str) -> Decoded:
    """An output as BFCL's handler decodes it: a prompt-mode reply, the calls made, or a function-calling text."""
    if isinstance(output, dict) and REPLY in output:
        return decode_prompt_reply(str(output[REPLY]), category)
    if isinstance(output, list):
        pairs = []
        for call in output:
            arguments = call.get("arguments") if isinstance(call, dict) else None
            text = arguments if isinstance(arguments, str) else json.dumps(arguments)
            pairs.append((str(call.get("name")) if isinstance(call, dict) else "", text))
        return decode_tool_calls(pairs, None)
    return decode_tool_calls(None, output if isinstance(output, str) else None)


def score_reply(case: Case, output: Any) -> Score:
    """BFCL's verdict: 1 or 0, with the checker's error type and reasons."""
    category = case.group or ""
    prompt_mode = isinstance(output, dict) and REPLY in output
    verdict = check_reply(
        category,
        case.metadata["functions"],
        case.expected,
        _decoded(output, category),
        underscore_to_dot=not prompt_mode,
    )
    if verdict.valid:
        return Score(1.0)
    return Score(0.0, {"error_type": verdict.error_type, "errors": list(verdict.errors)})


IRRELEVANCE_CATEGORIES = ("irrelevance", "live_irrelevance")
FAILED_CALL = "failed_call"
"""Where a record scored from a rejected request keeps the provider's error (`score_details`)."""


def score_rejected(case: Case, error: str) -> Score:
    """A request the provider rejected as no resend can change (a context length exceeded) scored as BFCL scores a
    failed inference: its error text is the reply, which makes no call, right in the irrelevance categories and
    wrong in every other."""
    right = case.group in IRRELEVANCE_CATEGORIES
    why = "no call made: right here, as BFCL scores a failed call" if right else "a failed call: wrong, as in BFCL"
    details = {FAILED_CALL: error, "scored_as": why}
    if right:
        return Score(1.0, details)
    return Score(0.0, {**details, "error_type": "failed_call", "errors": [error]})


def _read_reply(text: str) -> dict[str, str]:
    """Every reply is read (BFCL scores what it cannot decode as such): the checker decodes it."""
    return {REPLY: text}


def _no_instructions(categories: Sequence[str]) -> Callable[[AnswerMode], str | None]:
    """No instructions of ours in any mode (BFCL's messages are sent as they are). Asked for them before the first
    request, a prompt-mode run whose Java or JavaScript replies tree-sitter cannot read as BFCL does stops there."""

    def instructions(mode: AnswerMode) -> str | None:
        missing = tree_sitter_needed(categories) if is_text_mode(mode) else None
        if missing is not None:
            raise missing
        return None

    return instructions


def bfcl_task(categories: Sequence[str] = (), runner: MultiTurnRunner | None = None) -> Task[Any]:
    """The task posing cases of the single-turn `categories` (which say whether prompt mode needs tree-sitter) and,
    with a `runner`, its multi-turn cases, each played by the runner's session in the run's mode."""
    played = {mode: runner.task(mode) for mode in ("tool", "text")} if runner is not None else {}

    def pose_as(case: Case, mode: AnswerMode) -> tuple[Task[Any], AnswerMode]:
        if case.group in MULTI_TURN_CATEGORIES and played:
            return played["text" if mode == "text" else "tool"], mode
        return task, mode

    async def score(case: Case, output: Any) -> Score:
        if runner is not None and case.group in MULTI_TURN_CATEGORIES:
            return await runner.score(case, output)
        try:
            return score_reply(case, output)
        except (TooLargeToCompute, SlowLiteral) as exc:  # BFCL's checker would fill the memory or never end
            raise CaseScoringError(f"{type(exc).__name__}: {exc}") from None

    task: Task[Any] = Task(
        name=SUITE,
        output_type=list[dict[str, Any]] | dict[str, str] | str,
        score=score,
        reader=TextReader(_read_reply, example="[]"),
        instructions=_no_instructions(categories),
        functions=_functions,
        messages=_messages,
        empty_reply=True,
        rejected=score_rejected,
        metrics=cause_metrics if runner is not None else None,
        pose_as=pose_as if runner is not None else None,
    )
    return task


def _category_scores(scores: Scores) -> dict[str, CategoryScore]:
    """Each category's BFCL accuracy: correct over the cases scored, as every figure of the run counts them (a
    missing answer and a rejected call are scored; a call that failed as a resend may pass is an error, left out
    until `--retry-errors` poses it again)."""
    found = {}
    for group in scores.groups:
        total = group.correct + group.partial + group.incorrect + group.missing
        found[group.group] = CategoryScore(group.group, group.correct, total)
    return found


def bfcl_metrics(scores: Scores) -> dict[str, float | None]:
    """Per-category accuracy and BFCL's aggregates, in percent (an aggregate BFCL shows as N/A: None)."""
    categories = _category_scores(scores)
    summary = summarize(categories)
    metrics: dict[str, float | None] = {
        f"bfcl-{name}": round(100 * score.accuracy, 2) for name, score in categories.items()
    }
    for name, column in AGGREGATES.items():
        aggregate: Aggregate = getattr(summary, name)
        metrics[f"bfcl-{column}"] = round(100 * aggregate.accuracy, 2) if aggregate.shown else None
    multi_turn = [g for g in scores.groups if g.group in MULTI_TURN_CATEGORIES]
    if multi_turn:
        metrics[SOLVED_COST] = _solved_cost(multi_turn)
    return metrics


def _solved_cost(groups: Sequence[GroupScore]) -> float | None:
    """What a solved case cost: the groups' samples' cost over their correct ones (None if none, or no cost)."""
    costs = [g.cost_usd for g in groups if g.cost_usd is not None]
    correct = sum(g.correct for g in groups)
    return sum(costs) / correct if costs and correct else None


def _report_lines(summary: RunSummary) -> list[str]:
    table = summarize(_category_scores(summary.scores))
    parts = [
        f"{name.replace('_', '-')} {100 * a.accuracy:.2f}" if a.shown else f"{name.replace('_', '-')} N/A"
        for name, a in ((n, getattr(table, n)) for n in AGGREGATES)
    ]
    present = ", ".join(table.groups_present) or "none"
    lines = [f"BFCL: {', '.join(parts)} (overall counts groups not run as 0; groups present: {present})"]
    errors = sum(group.errors for group in summary.scores.groups)
    if errors:
        them = "them" if errors != 1 else "it"
        lines.append(
            f"BFCL: {errors} failed call{'s' if errors != 1 else ''} that a resend may change left out of every figure "
            f"here (BFCL would count {them} wrong): --resume --retry-errors poses {them} again"
        )
    multi_turn = [g for g in summary.scores.groups if g.group in MULTI_TURN_CATEGORIES]
    if multi_turn:
        costs = [f"{g.group.removeprefix('multi_turn_')} {money(g.cost_per_correct) or 'n/a'}" for g in multi_turn]
        overall = money(_solved_cost(multi_turn)) or "n/a"
        lines.append(f"BFCL multi-turn, cost of a solved case: {overall} ({', '.join(costs)})")
    return lines


def show_calls(record: SampleRecord) -> list[AnswerLine]:
    """The calls made (or the reply), right or wrong as BFCL's checker found them, its reason, the functions
    offered and the calls that count as right."""
    if record.group in MULTI_TURN_CATEGORIES:
        return trajectory_lines(record)
    mark: Literal["right", "wrong"] = "right" if record.score == 1.0 else "wrong"
    output = record.output
    if isinstance(output, list):
        lines = [AnswerLine(f"{_field(call, 'name')}({_field(call, 'arguments')})", mark) for call in output]
        lines = lines or [AnswerLine("(no call)", mark)]
    elif isinstance(output, dict) and REPLY in output:
        lines = [AnswerLine(str(output[REPLY]) or "(empty reply)", mark)]
    else:
        lines = [AnswerLine(f"(no call) {output}" if output else "(no call, no text)", mark)]
    details = record.score_details or {}
    if details.get(FAILED_CALL):
        lines = [
            AnswerLine(f"(the request failed) {details[FAILED_CALL]}", mark),
            AnswerLine(f"{details['scored_as']}"),
        ]
    elif details.get("error_type"):
        errors = details.get("errors")
        reasons = "; ".join(str(e) for e in errors) if isinstance(errors, list) else ""
        lines.append(AnswerLine(f"checker: {details['error_type']}: {reasons}"))
    functions = record.metadata.get("functions")
    if isinstance(functions, list):
        names = ", ".join(str(doc.get("name")) for doc in functions if isinstance(doc, dict))
        lines.append(AnswerLine(f"offered: {names or '(none)'}"))
    expected = record.expected if isinstance(record.expected, list) else []
    for allowed in expected:
        lines.append(AnswerLine(f"allowed: {json.dumps(allowed, ensure_ascii=False)}"))
    return lines


def _field(call: Any, key: str) -> str:
    value = call.get(key) if isinstance(call, dict) else None
    return value if isinstance(value, str) else json.dumps(value, ensure_ascii=False)


def _build(params: BfclParams) -> tuple[Task[Any], Dataset]:
    single, multi = parse_categories(params.categories)
    cases: list[Case] = []
    info: dict[str, Any] = {"categories": [*single, *multi]}
    path = str(SAMPLE_DIR) if params.data == "sample" else None
    if single:
        data = _load(params, single)
        cases += [bfcl_case(case) for case in data.cases]
        info |= {"bfcl_eval_version": data.version, "dataset_hash": data.dataset_hash}
        path = path or data.source
    runner = None
    if multi:
        check_installed()  # BFCL's own backends play every multi-turn case, the sample's too
        turns = load_multi_turn(multi, params.data)
        pool = BackendPool(params.backend_workers, params.backend_timeout)
        runner = MultiTurnRunner({c.id: c for c in turns.cases}, pool, offered_only=params.resolve == "offered")
        cases += [multi_turn_case(case) for case in turns.cases]
        info |= {"bfcl_eval_version": turns.version, "multi_turn_dataset_hash": turns.dataset_hash}
        path = path or turns.source
    task = bfcl_task(single, runner)
    return task, dataset_from_cases(cases, suite=SUITE, source="file", path=path, params=info)


BFCL = Suite(
    name=SUITE,
    params=BfclParams,
    build=_build,
    description="BFCL v4 function calling, single-turn scored by BFCL's AST checker, multi-turn played on BFCL's "
    "backends and scored by its multi-turn checker (function calling and prompt)",
    columns=["bfcl-*"],
    title="BFCL",
    modes=("tool", "text"),
    group_columns=False,  # the categories are columns of their own, counted as BFCL counts them
    pair_groups=True,  # function calling against prompt, category by category
    temperature=0.001,  # BFCL's default; its requests carry no seed
    seed=None,
    row_metrics=bfcl_metrics,
    report_lines=_report_lines,
    show_answer=show_calls,
)
