"""Case files: promptfoo's test-case format (YAML or JSON), scored by difficulty-weighted assertions (seed 003).

`python main.py run --suite cases.yaml` poses every test of the file (each rendered prompt: `prompts` x `tests`)
and judges the output by the test's assertions (`typed_eval.suites.case_files.assertions`). The `providers` section is
ignored: the model comes from `--model`. A test is answered in plain text, unless its `options` name a JSON
schema (`response_format`, OpenAI's shape, or `output_schema`, the schema itself): then it is posed in the run's
structured mode, validated against the schema and retried when invalid.

Scoring as seed 003 defines it: a test's difficulty D = reasoning (1, 2 or 4) + format (1, 2 or 3), from the
test's `metadata: {difficulty: {reasoning, format}}` (1 each when absent), + context, from the rendered prompt's
length (up to 2,000 characters 1, up to 5,000 2, longer 3). R is the weighted mean of the test's assertion
results; the case weighs D, so the run's score is sum(R x D) / sum(D) x 100 (the seed's total of 100).
"""

from __future__ import annotations

import json
import math
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from typed_eval.contracts import AnswerMode, Case, SampleRecord
from typed_eval.core.datasets import Dataset, dataset_from_cases
from typed_eval.core.errors import InputError, TaskError
from typed_eval.core.suite import AnswerLine, answer_lines, file_suite
from typed_eval.core.tasks import Task, TextReader
from typed_eval.suites.case_files.assertions import (
    compile_assertion,
    json_text,
)
from typed_eval.suites.case_files.difficulty import (
    Difficulty,
    context_level,
    difficulty_of,
)
from typed_eval.suites.case_files.documents import (
    dereferenced,
)
from typed_eval.suites.case_files.grader import CaseFileGrader, Posed, with_judge
from typed_eval.suites.case_files.outputs import (
    output_schema_of,
    schema_output,
    tool_name_of,
)
from typed_eval.suites.case_files.reader import CASE_FILE_SUFFIXES, REFUSED_OPTIONS, Reader
from typed_eval.suites.case_files.templates import (
    prompt_vars,
    render,
)
from typed_eval.suites.judge import judge_name, judged

__all__ = [
    "CASE_FILE",
    "CASE_FILE_SUFFIXES",
    "CaseFileGrader",
    "Difficulty",
    "context_level",
    "judge_name",
    "judged",
    "load_case_file",
    "render",
    "show_assertions",
    "with_judge",
]


def _merged(default: Mapping[str, Any], test: Mapping[str, Any]) -> dict[str, Any]:
    """A test with `defaultTest` under it: vars, options and metadata merged, default assertions first."""
    merged = {**default, **test}
    for key in ("vars", "options", "metadata"):
        if isinstance(default.get(key), Mapping) or isinstance(test.get(key), Mapping):
            merged[key] = {**(default.get(key) or {}), **(test.get(key) or {})}
    merged["assert"] = [*(default.get("assert") or []), *(test.get("assert") or [])]
    return merged


def load_case_file(path: Path) -> tuple[Task[Any], Dataset]:
    """The file's task (posing, assertions, difficulty weights) and cases; anything wrong is a one-line error
    naming the test, before any request is sent."""
    if not path.exists():
        raise InputError(f"no case file {path}")
    reader = Reader(path)  # a folder, a FIFO or a device is said so as it is read
    document = dereferenced(reader.load(path), reader.where())
    if not isinstance(document, Mapping):
        raise TaskError(reader.where("it must be a mapping with prompts and tests (promptfoo's format)"))
    prompts = reader.prompts(document.get("prompts"))
    default = document.get("defaultTest") or {}
    if not isinstance(default, Mapping):
        raise TaskError(reader.where("defaultTest must be a mapping"))
    tests = reader.tests(document.get("tests"))
    cases: list[Case] = []
    posed: dict[str, Posed] = {}
    for number, raw in enumerate(tests, 1):
        ids = [
            f"test-{number:0{max(3, len(str(len(tests))))}d}" + (f".p{k}" if len(prompts) > 1 else "")
            for k in range(1, len(prompts) + 1)
        ]
        for case, graded in _test_cases(reader, number, raw, default, prompts, ids):
            cases.append(case)
            posed[case.id] = graded
    task = _task(path.stem, CaseFileGrader(path.stem, posed))
    return task, dataset_from_cases(cases, suite=path.stem, source="file", path=str(path))


def _test_cases(
    reader: Reader, number: int, raw: Any, default: Mapping[str, Any], prompts: list[str], ids: list[str]
) -> list[tuple[Case, Posed]]:
    """One test, read and checked, as a case per prompt."""
    where = reader.where(f"test {number}")
    if not isinstance(raw, Mapping):
        raise TaskError(f"{where}: a test is a mapping with vars and assert")
    test = _merged(default, raw)
    options = test.get("options") or {}
    if not isinstance(options, Mapping):
        raise TaskError(f"{where}: options must be a mapping")
    for key in REFUSED_OPTIONS:
        if key in options:
            raise TaskError(f"{where}: options.{key} is not supported (it changes what is scored)")
    variables = reader.variables(test.get("vars"), where)
    schema = output_schema_of(options, reader.base, where)
    if schema is not None:
        schema_output(schema[0], where)  # a bad schema is refused now, not when the case is posed
    specs = test.get("assert")
    if not isinstance(specs, list) or not specs:
        raise TaskError(f"{where}: it has no assertions (assert: a list of type / value / weight)")

    def fill(text: str) -> str:
        return render(text, variables, where)

    assertions = tuple(
        compile_assertion(spec, render=fill, base=reader.base, where=f"{where}, assertion {k}")
        for k, spec in enumerate(specs, 1)
    )
    if not math.isfinite(sum(a.weight for a in assertions)):
        raise TaskError(
            f"{where}: its assertion weights add up to more than a double holds (promptfoo would score "
            "the test 0): make them smaller"
        )
    threshold = test.get("threshold")
    if threshold is not None and (
        isinstance(threshold, bool) or not isinstance(threshold, int | float) or math.isnan(threshold)
    ):
        raise TaskError(f"{where}: threshold must be a number, got {threshold!r}")
    graded = Posed(assertions, variables, _plain(test), None if threshold is None else float(threshold))
    made: list[tuple[Case, Posed]] = []
    filled = prompt_vars(variables, where)
    for k, (template, case_id) in enumerate(zip(prompts, ids, strict=True), 1):
        prompt = render(template, filled, f"{where}, prompt {k}")
        difficulty = difficulty_of(test.get("metadata"), prompt, where)
        metadata: dict[str, Any] = {"difficulty": difficulty.stored()}
        if isinstance(test.get("description"), str):
            metadata["description"] = test["description"]
        if len(prompts) > 1:
            metadata["prompt"] = k
        if schema is not None:
            metadata["output_schema"], metadata["output_name"] = schema
        case = Case(
            id=case_id,
            prompt=prompt,
            expected=[a.spec for a in assertions],
            group=f"format {difficulty.format}",
            metadata=metadata,
            weight=difficulty.total,
        )
        made.append((case, graded))
    return made


def _plain(test: Mapping[str, Any]) -> dict[str, Any]:
    """The test as promptfoo's python context carries it: plain JSON-like data."""
    loaded: dict[str, Any] = json.loads(json.dumps(test, default=str))
    return loaded


def _text_reply(text: str) -> str | None:
    """Every reply is graded as it is, an empty one as "" (as promptfoo grades it)."""
    return text


def _task(name: str, grader: CaseFileGrader) -> Task[Any]:
    """The file's task: each case posed as plain text, or as a JSON object of its schema in the run's mode."""
    text = Task[Any](name=name, output_type=str, score=grader, reader=TextReader(_text_reply), empty_reply=True)
    structured: dict[str, Task[Any]] = {}

    def pose_as(case: Case, mode: AnswerMode) -> tuple[Task[Any], AnswerMode]:
        schema = case.metadata.get("output_schema")
        if not isinstance(schema, dict):
            return text, "text"
        key = json.dumps([schema, case.metadata.get("output_name")], sort_keys=True)
        if key not in structured:
            tool = tool_name_of(str(case.metadata.get("output_name") or "final_result"))
            structured[key] = Task[Any](
                name=name, output_type=schema_output(schema, f"case {case.id}"), score=grader, tool_name=tool
            )
        return structured[key], "text" if mode == "tag" else mode

    return Task[Any](
        name=name, output_type=str, score=grader, instructions=_no_instructions, pose_as=pose_as, bounded_scores=False
    )


def _no_instructions(_: AnswerMode) -> str | None:
    return None


# --- the case viewer -------------------------------------------------------------------------------------------


def show_assertions(record: SampleRecord) -> list[AnswerLine]:
    """The reply as the assertions read it (a structured one as JSON.stringify writes it), then each assertion's type
    and reason, passed or failed: why the test scored what it did. Details of another shape: the default view."""
    results = (record.score_details or {}).get("assertions")
    if not isinstance(results, list):
        return answer_lines(None, record)
    lines: list[AnswerLine] = []
    for result in results:
        if not isinstance(result, dict):
            return answer_lines(None, record)
        kind, passed, reason = result.get("type"), result.get("pass"), result.get("reason")
        if not (isinstance(kind, str) and isinstance(passed, bool) and isinstance(reason, str)):
            return answer_lines(None, record)
        lines.append(AnswerLine(f"{kind}: {reason}", "pass" if passed else "fail"))
    try:
        text = record.output if isinstance(record.output, str) else json_text(record.output)
    except ValueError:  # NaN or an infinity: JSON.stringify would write null, JSON text has no way to say it
        return answer_lines(None, record)
    return [AnswerLine(text), *lines]


CASE_FILE = file_suite(
    "case-file",
    load_case_file,
    "a case file in promptfoo's format, scored by difficulty-weighted assertions (--suite FILE.yaml)",
    CASE_FILE_SUFFIXES,
    show_answer=show_assertions,
)
