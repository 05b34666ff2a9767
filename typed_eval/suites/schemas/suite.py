"""The `schemas` suite: JSONSchemaBench (Geng et al. 2025), real-world JSON Schemas each posed as the output type, an
instance valid when `jsonschema` finds it so against the original schema; and the user's own schemas, posed alike.

Each case is posed as the benchmark poses it (its system message, its two few-shot pairs for the case's set, the
schema as the last user message) in the run's mode: a tool's parameters, a response format, the schema in the
prompt, or a plain reply read as JSON. A valid instance scores 1, anything else 0; the report adds the benchmark's
declared coverage, empirical coverage and compliance per set.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Iterable, Iterator, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Literal

from jsonschema.protocols import Validator
from pydantic import BaseModel, ConfigDict, Field

from typed_eval.contracts import AnswerMode, Case, DatasetInfo, SampleRecord, is_text_mode
from typed_eval.core.datasets import Dataset, survey
from typed_eval.core.errors import InputError, TaskError
from typed_eval.core.suite import AnswerLine, Suite
from typed_eval.core.tasks import Score, Task
from typed_eval.suites.schemas.data import (
    MAX_BYTES,
    PROBLEM,
    SAMPLE_DIR,
    file_case,
    files_digest,
    load_model,
    load_sample,
    path_files,
)
from typed_eval.suites.schemas.features import KEY, record_facets, schema_features
from typed_eval.suites.schemas.hub import REVISION, load_hub
from typed_eval.suites.schemas.metrics import schemas_metrics, schemas_report_lines
from typed_eval.suites.schemas.outputs import Sent, schema_output, sent_schema
from typed_eval.suites.schemas.prompts import MAX_SHOTS, SYSTEM, Shots, load_shots, request_messages
from typed_eval.suites.schemas.sampling import SETS
from typed_eval.suites.schemas.schemastore import load_schemastore
from typed_eval.suites.schemas.validation import SchemaProblem, Validators, problems

__all__ = ["SCHEMAS", "SchemaTasks", "SchemasParams"]

SUITE = "schemas"
NOTES = "posed_as"
"""Metadata key of what had to change in the schema to pose it (a wrapped root, a recursion cut)."""
WRAPPED = 'the root is not an object: posed as {"response": <schema>} and unwrapped (structured modes)'


class SchemasParams(BaseModel):
    """Which schemas to pose, and how the request reads."""

    model_config = ConfigDict(extra="forbid")

    source: Literal["sample", "jsonschemabench", "schemastore"] | None = Field(
        None,
        description="sample: the shipped 300 (the default); jsonschemabench: the whole benchmark, downloaded once "
        "from its Hugging Face dataset; schemastore: the SchemaStore schemas inside check-jsonschema",
    )
    revision: str = Field(REVISION, description="source=jsonschemabench: the dataset's commit to read")
    path: str | None = Field(
        None,
        description="a folder laid out as JSONSchemaBench's data/ (DIR/<set>/<file>.json), or your own schema file "
        "or folder",
    )
    model: str | None = Field(None, description="a pydantic model, module:Class, posed as a schema of its own")
    sets: str | None = Field(None, description="comma-separated sets (groups) to pose, e.g. Glaiveai2K,Kubernetes")
    shots: int = Field(
        MAX_SHOTS, ge=0, le=MAX_SHOTS, description="few-shot pairs before the schema (the benchmark's 2)"
    )
    system: str = Field(SYSTEM, description="the system message (the benchmark's by default)")
    max_bytes: int = Field(MAX_BYTES, gt=0, description="a schema file larger than this is its case's error")


def _problem_task(reason: str) -> Task[Any]:
    """A case that cannot be posed: asking for it fails with the reason, so the case is an error and the run goes on."""

    def refuse(case: Case, mode: AnswerMode) -> list[dict[str, Any]]:
        raise SchemaProblem(reason)

    return Task(name=SUITE, output_type=dict[str, Any], score=lambda case, output: 0.0, messages=refuse)


@dataclass
class SchemaTasks:
    """The task posing each case with its own schema as the output type, made when the case is posed (met once, the
    engine lets it go with its sample; this keeps none), and the scorer checking an instance against the original
    schema. A task holds the case and its validator (so `validators` finds it until the case is scored, however many
    cases are in flight), not its schema as posed: pydantic-ai keeps that, one copy of each schema, not two."""

    shots: Shots
    count: int = MAX_SHOTS
    system: str = SYSTEM
    validators: Validators = field(default_factory=Validators)

    def messages(self, case: Case, mode: AnswerMode) -> list[dict[str, Any]]:
        return request_messages(case.prompt, self.shots.get(case.group or "", [])[: self.count], self.system)

    def _validator(self, case: Case) -> Validator:
        """The case's validator; SchemaProblem when its schema cannot be posed or checked."""
        if case.metadata.get(PROBLEM):
            raise SchemaProblem(str(case.metadata[PROBLEM]))
        return self.validators.for_text(case.prompt)

    def check(self, case: Case) -> Sent:
        """What is posed for the case; SchemaProblem when it cannot be posed or checked. What is posed shares what it
        does not rewrite with the schema the validator holds (read, never changed): one parse of it, not two."""
        return sent_schema(self._validator(case).schema)

    def task_for(self, case: Case, mode: AnswerMode) -> Task[Any]:
        try:
            validator = self._validator(case)
            sent = sent_schema(validator.schema)
        except SchemaProblem as exc:
            return _problem_task(str(exc))

        def check(value: Any) -> list[str]:
            return problems(validator, value)

        return Task(  # a schema pydantic-ai cannot take is this case's error, when the engine makes its agent
            name=SUITE,
            output_type=schema_output(sent, check, wrap=not is_text_mode(mode), again=lambda: self.check(case)),
            score=self.score,
            messages=self.messages,
        )

    def score(self, case: Case, output: Any) -> Score:
        """1 for an instance valid against the original schema, else 0 with the validator's messages (a check out of
        time here, after the output's own passed, is 0 with its reason, never the scorer's failure)."""
        try:
            found = problems(self.validators.for_text(case.prompt), output)
        except SchemaProblem as exc:
            found = [str(exc)]
        return Score(0.0, {"errors": found}) if found else Score(1.0)


def _noted(case: Case, tasks: SchemaTasks) -> Case:
    """The case with what posing its schema changes (or why it cannot be posed) and the features its schema uses in
    its metadata, said in the record."""
    try:
        sent = tasks.check(case)
    except SchemaProblem as exc:
        return case.model_copy(update={"metadata": {**case.metadata, PROBLEM: str(exc)}})
    notes = ([] if sent.object_root else [WRAPPED]) + sent.notes
    features = {KEY: schema_features(tasks.validators.for_text(case.prompt).schema)}
    return case.model_copy(update={"metadata": {**case.metadata, **features, **({NOTES: notes} if notes else {})}})


def _chosen(groups: Iterable[str | None], wanted: list[str] | None) -> None:
    """InputError for a set asked for that the source does not have."""
    present = set(groups)
    unknown = [name for name in wanted or [] if name not in present]
    if unknown:
        known = ", ".join(sorted(map(str, present)))
        raise InputError(f"no schemas of set {unknown[0]!r}; the sets here are {known}")


def _files(params: SchemasParams, path: Path, wanted: list[str] | None) -> Source:
    """A folder's or file's schemas, listed and hashed, each file read and made a case only as it is posed (a run
    of the whole benchmark holds no more of it than the cases in flight)."""
    files = path_files(path)
    if wanted is not None:
        _chosen((file.group for file in files), wanted)
        files = [file for file in files if file.group in wanted]
    sizes: dict[str, int] = {}
    for file in files:
        sizes[file.group] = sizes.get(file.group, 0) + 1

    def cases() -> Iterator[Case]:
        return (file_case(file.case_id, file.group, file.path, params.max_bytes) for file in files)

    return Source(cases, sizes, files_digest(files, params.max_bytes), str(path), {})


def _read(params: SchemasParams, wanted: list[str] | None) -> Source:
    """The cases, where they came from, and what tells two runs' sources apart (a version, a hash)."""
    given = [name for name in ("source", "path", "model") if getattr(params, name) is not None]
    if len(given) > 1:
        raise InputError(f"give one of source, path and model, not {' and '.join(given)}")
    if params.revision != REVISION and params.source != "jsonschemabench":
        raise InputError("revision is the Hugging Face dataset's commit: give it with source=jsonschemabench")
    info: dict[str, Any] = {}
    if params.path is not None:
        return _files(params, Path(params.path), wanted)
    if params.model is not None:
        cases, where = [load_model(params.model)], params.model
    elif params.source == "jsonschemabench":
        unknown = [name for name in wanted or [] if name not in SETS]
        if unknown:
            raise InputError(f"no schemas of set {unknown[0]!r}; the sets here are {', '.join(sorted(SETS))}")
        hub = load_hub(wanted or SETS, params.revision, max_bytes=params.max_bytes)
        cases, where, info = hub.cases, hub.source, {"revision": hub.revision, "dataset_hash": hub.dataset_hash}
    elif params.source == "schemastore":
        store = load_schemastore(params.max_bytes)
        cases, where = store.cases, str(store.folder)
        info = {"check_jsonschema_version": store.version, "dataset_hash": store.dataset_hash}
    else:
        cases, where = load_sample(), str(SAMPLE_DIR)
    if wanted is not None:
        _chosen((case.group for case in cases), wanted)
        cases = [case for case in cases if case.group in wanted]
    sizes, md5, _ = survey(lambda: iter(cases))
    return Source(lambda: iter(cases), sizes, md5, where, info)


@dataclass(frozen=True)
class Source:
    """The cases as read (made afresh on each pass), their count per group, the MD5 telling two runs' cases apart
    (over the cases as read, before the suite notes them), where they came from, and what else tells sources
    apart."""

    cases: Callable[[], Iterator[Case]]
    sizes: dict[str, int]
    md5: str
    where: str
    info: dict[str, Any]


def _build(params: SchemasParams) -> tuple[Task[Any], Dataset]:
    """The task and the cases, each case noted (its features, how it is posed, or why it cannot be) as it is taken to
    be posed: its schema is compiled then, just before its request, and nothing is compiled before the first."""
    wanted = [name.strip() for name in params.sets.split(",") if name.strip()] if params.sets is not None else None
    source = _read(params, wanted)
    if not source.sizes:
        raise TaskError(f"suite {SUITE!r} has no cases")
    tasks = SchemaTasks(load_shots(), params.shots, params.system)

    def noted() -> Iterator[Case]:
        return (_noted(case, tasks) for case in source.cases())

    task: Task[Any] = Task(
        name=SUITE,
        output_type=Any,
        score=tasks.score,
        messages=tasks.messages,
        pose_as=lambda case, mode: (tasks.task_for(case, mode), mode),
    )
    count = sum(source.sizes.values())
    info = DatasetInfo(suite=SUITE, source="file", md5=source.md5, cases=count, path=source.where, params=source.info)
    return task, Dataset(info, source.sizes, noted)


def show_instance(record: SampleRecord) -> Sequence[AnswerLine]:
    """The instance, valid or not as the validator found it, its errors, and what posing changed in the schema."""
    mark: Literal["valid", "invalid"] = "valid" if record.score == 1.0 else "invalid"
    lines = [AnswerLine(json.dumps(record.output, ensure_ascii=False), mark)]
    errors = (record.score_details or {}).get("errors")
    lines += [AnswerLine(f"validator: {error}") for error in errors] if isinstance(errors, list) else []
    notes = record.metadata.get(NOTES)
    lines += [AnswerLine(f"posed: {note}") for note in notes] if isinstance(notes, list) else []
    return lines


SCHEMAS = Suite(
    name=SUITE,
    params=SchemasParams,
    build=_build,
    description="JSONSchemaBench: real-world JSON Schemas (or your own) posed as the output type, an instance valid "
    "when jsonschema finds it so; declared and empirical coverage and compliance per set",
    columns=["schemas-*"],
    title="Compliance",
    modes=("tool", "native", "prompted", "text"),
    row_metrics=schemas_metrics,
    report_lines=schemas_report_lines,
    show_answer=show_instance,
    pair_groups=True,
    facets=record_facets,
)
