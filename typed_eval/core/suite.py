"""Suites as plug-ins: `Suite(name, params, build, ...)` objects found through the entry-point group
`typed_eval.suites`, so a benchmark published as its own package is a suite like the built-in ones.

A suite's parameters are a pydantic model (its defaults are the suite's); `build(params)` gives the task and its
cases. The command line sets parameters as `-S key=value`, validated here; the stored run keeps the suite, its
package's version and its parameters, and a resume must keep them. Nothing here names a suite.
"""

from __future__ import annotations

import inspect
import json
import typing
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from importlib.metadata import EntryPoint
from pathlib import Path
from typing import Any, Generic, Literal, TypeVar

from pydantic import BaseModel, ConfigDict, Field, ValidationError

from typed_eval.contracts import AnswerMode, Case, RunSummary, SampleRecord, Scores
from typed_eval.core.datasets import Dataset, dataset_from_cases
from typed_eval.core.errors import EvaluatorError, InputError, TaskError
from typed_eval.core.plugins import plugin_points
from typed_eval.core.secrets import Redactor
from typed_eval.core.tasks import Task

__all__ = [
    "ENTRY_POINT_GROUP",
    "AnswerLine",
    "CaseFacets",
    "FileParams",
    "FoundSuite",
    "StoredFormat",
    "Suite",
    "SuiteCommand",
    "SuiteContext",
    "SuiteFlag",
    "answer_lines",
    "file_suite",
    "find_suites",
    "open_suite",
    "registered",
    "same_named",
    "suite_named",
]

ENTRY_POINT_GROUP = "typed_eval.suites"
STRUCTURED_AND_TEXT: tuple[AnswerMode, ...] = ("tool", "native", "prompted", "text")

ParamsT = TypeVar("ParamsT", bound=BaseModel)


@dataclass(frozen=True)
class SuiteContext:
    """What a suite may need besides its parameters to make its task, never stored with the run: where the run
    caches responses, its request timeout, the model's server and keys given on the command line."""

    cache_path: Path | None = None
    request_timeout: float | None = None
    base_url: str | None = None
    api_key: str | None = None
    keys: Mapping[str, str] = field(default_factory=dict)
    """Other secrets by name (`embedding_api_key`)."""


AnswerMark = Literal["right", "wrong", "valid", "invalid", "missing", "pass", "fail"]


@dataclass(frozen=True)
class AnswerLine:
    """One line of an answer as the case viewer and the HTML report show it: plain text (always shown as text,
    never as markup), and what it was judged (an edge `valid`, `invalid` or `missing`; an assertion `pass` or
    `fail`; an option `right` or `wrong`), which colours it."""

    text: str
    mark: AnswerMark | None = None


@dataclass(frozen=True)
class CaseFacets:
    """What a case is made of, as binary features the reports break its score down by (`Suite.facets`): `names`
    are the features it has (it lacks the others seen in the run); `placed` True sets the case beside that
    breakdown instead of counting it in (the user's own case, read against the benchmark's)."""

    names: tuple[str, ...]
    placed: bool = False


@dataclass(frozen=True)
class SuiteFlag:
    """A flag of `run` that is another spelling of one of the suite's `-S` parameters, kept where the docs promised
    it: `--people 12` is `-S people=12`. `run --help` leaves it out; `suites NAME` shows it.

    `type` reads the flag's text (raising `ValueError` with the reason; default: the text as it is, for the parameter
    to validate); with `value`, the flag takes no argument and sets the parameter to it (`--no-shuffle`:
    `shuffle=False`). `key=True`: the flag gives a secret the suite reads from `SuiteContext.keys` under `param`,
    never a parameter and never stored. Suites that declare the same flag spell it alike (the first one's `type`)."""

    flag: str
    param: str
    type: Callable[[str], object] | None = None
    value: bool | None = None
    metavar: str | None = None
    help: str = ""
    """Default: the parameter's description."""
    key: bool = False

    def __post_init__(self) -> None:
        if not self.flag.startswith("--") or len(self.flag) < 3:
            raise TaskError(f"a suite's flag is spelled --name, got {self.flag!r}")


@dataclass(frozen=True)
class SuiteCommand:
    """A command line of the suite's own, such as its importer of published results (`main.py import NAME ...`):
    `run(argv, prog)` reads `argv` itself and gives the exit code; `help` is its line in the program's help;
    `aliases` are commands of the program that run it too (`main.py ALIAS ...`)."""

    run: Callable[[Sequence[str], str], int]
    help: str
    aliases: tuple[str, ...] = ()


JsonObject = dict[str, Any]


@dataclass(frozen=True)
class StoredFormat:
    """How runs stored in an earlier schema version that only this suite wrote read as the next version's JSON:
    `summary` and `record` each take one object of `version` to version + 1; `record_start` is how each record
    line of that version begins (a run resumed after an upgrade holds newer lines after them)."""

    version: int
    summary: Callable[[JsonObject], JsonObject]
    record: Callable[[JsonObject], JsonObject]
    record_start: str


@dataclass(frozen=True)
class Suite(Generic[ParamsT]):
    """A benchmark: its parameters (a pydantic model whose defaults are the suite's), and `build(params)` (or
    `build(params, context)`) giving its `Task` and cases (any iterable of `Case`, lazy allowed, or a `Dataset`).

    `columns` names numeric task metrics (`Task.metrics`, or `row_metrics`) the leaderboard tables show as columns;
    a name ending in `*` takes every metric it starts. The other fields are optional presentation: `title` heads the
    score column, `modes` are the answer modes the suite poses, `group_columns` False leaves the per-group columns
    out of the tables, `relaxed_column` shows the score with the relaxed text reading, `row_metrics(scores)` adds
    figures made from a stored run's scores, `report_lines(summary)` adds lines under the run report's headline,
    `headline(summary)` names the headline score, `paths` are file suffixes `--suite FILE` opens with this suite
    (the file going to the `path` parameter), `generate(argv, prog)` is the suite's generator command line, and
    `show_answer(record)` is a record's answer as the case viewer shows it (default: the output's JSON).

    What the command line and the store read of it: `flags` are `run`'s other spellings of its parameters,
    `importer` its command storing published results as runs (`main.py import NAME ...`), `board_flags` the
    leaderboard's flags that mean `--suite NAME` (older spellings), `formats` how runs it stored in an earlier
    schema version read today, and `default` True makes it the suite `run` poses when no `--suite` is given.
    """

    name: str
    params: type[ParamsT]
    build: Callable[..., tuple[Task[Any], Iterable[Case] | Dataset]]
    description: str = ""
    columns: Sequence[str] = ()
    title: str | None = None
    modes: tuple[AnswerMode, ...] = STRUCTURED_AND_TEXT
    group_columns: bool = True
    relaxed_column: bool = False
    row_metrics: Callable[[Scores], dict[str, float | None]] | None = None
    report_lines: Callable[[RunSummary], list[str]] | None = None
    headline: Callable[[RunSummary], str] | None = None
    paths: tuple[str, ...] = ()
    generate: Callable[[Sequence[str], str], int] | None = None
    show_answer: Callable[[SampleRecord], Sequence[AnswerLine]] | None = None
    flags: tuple[SuiteFlag, ...] = ()
    importer: SuiteCommand | None = None
    board_flags: tuple[str, ...] = ()
    formats: tuple[StoredFormat, ...] = ()
    default: bool = False
    baseline: Callable[[SampleRecord], tuple[int, int] | None] | None = None
    """A record's options as the chance and favourite-position baselines count them: (options offered, the right
    option's number from 1), or None for a case with no options to guess among. No declaration: no baselines."""
    group_header: Callable[[str], str] | None = None
    """A group's name as the tables head its column (a public table's spelling); default: the name itself."""
    temperature: float | None = 0.01
    """The sampling temperature `run` sends when `--temperature` is not given (default 0.01; None: none)."""
    seed: int | None = 42
    """The sampling seed `run` sends when `--model-seed` is not given (default 42; None: none)."""
    pair_groups: bool = False
    """True: the model x mode table also compares each pair of modes within each group (a benchmark's categories),
    Holm-corrected over the pair's groups."""
    facets: Callable[[SampleRecord], CaseFacets | None] | None = None
    """A record's case's features (None: it has no profile): the reports show the score of the cases with and
    without each feature, and each pair of runs on the same cases compared on the cases with it."""

    def __post_init__(self) -> None:
        if not self.name.strip():
            raise TaskError("a suite needs a name")
        if not (isinstance(self.params, type) and issubclass(self.params, BaseModel)):
            raise TaskError(f"suite {self.name!r}: params must be a pydantic model class, got {self.params!r}")
        fields = self.params.model_fields
        for flag in self.flags:
            if not flag.key and flag.param not in fields:
                raise TaskError(f"suite {self.name!r}: flag {flag.flag} spells no parameter ({flag.param!r})")

    def parse(self, values: Mapping[str, object]) -> ParamsT:
        """The parameters from `key=value` texts (or values): an unknown key or a bad value is one line naming it."""
        fields = self.params.model_fields
        for key in values:
            if key not in fields:
                known = ", ".join(fields) or "none"
                raise InputError(f"suite {self.name} has no parameter {key!r} (its parameters: {known})")
        given = {key: _listed(fields[key].annotation, value) for key, value in values.items()}
        try:
            return self.params.model_validate(given)
        except ValidationError as exc:
            error = exc.errors()[0]
            key = str(error["loc"][0]) if error["loc"] else ""
            value = values.get(key, "(missing)")
            raise InputError(f"suite {self.name}: {key}={value}: {error['msg']}") from None

    def defaults(self) -> dict[str, object]:
        """Each parameter's default (None for a required one)."""
        return {
            name: None if info.is_required() else info.get_default(call_default_factory=True)
            for name, info in self.params.model_fields.items()
        }


def answer_lines(suite: Suite[Any] | None, record: SampleRecord) -> list[AnswerLine]:
    """A record's answer as lines of text: the suite's own view of it, or the output as JSON (the last attempt's
    raw reply when there is no valid output). A plug-in's view that fails on a record is not a reason to hide it:
    the JSON is shown instead."""
    if suite is not None and suite.show_answer is not None and record.output is not None:
        try:
            return [line for line in suite.show_answer(record) if isinstance(line, AnswerLine)]
        except Exception:  # someone else's code, shown a stored record it may not expect
            pass
    if record.output is not None:
        text = record.output if isinstance(record.output, str) else json.dumps(record.output, ensure_ascii=False)
        return [AnswerLine(text)]
    if record.attempts:
        return [AnswerLine(record.attempts[-1].raw, "invalid" if not record.attempts[-1].valid else None)]
    return [AnswerLine(record.error or "", None)] if record.error else []


def _listed(annotation: Any, value: object) -> object:
    """`8,16,32` for a list parameter is its items (`-S length=8,16`); other texts go to pydantic as they are."""
    if isinstance(value, str):
        kinds = {typing.get_origin(a) for a in (annotation, *typing.get_args(annotation))}
        if kinds & {list, tuple, Sequence}:
            return [part.strip() for part in value.split(",")]
    return value


class FileParams(BaseModel):
    """A suite made of one file: its path (`--suite FILE` sets it)."""

    model_config = ConfigDict(extra="forbid")

    path: Path = Field(description="the file (--suite FILE)")


def file_suite(
    name: str,
    load: Callable[[Path], tuple[Task[Any], Dataset]],
    description: str,
    paths: tuple[str, ...],
    *,
    show_answer: Callable[[SampleRecord], Sequence[AnswerLine]] | None = None,
) -> Suite[FileParams]:
    """A suite whose cases are a file that `load` reads, opened by `--suite FILE` for the suffixes in `paths`."""
    return Suite(
        name=name,
        params=FileParams,
        build=lambda params: load(params.path),
        description=description,
        paths=paths,
        show_answer=show_answer,
    )


@dataclass(frozen=True)
class FoundSuite:
    """A suite with the package that registered it (None for a suite made in code)."""

    suite: Suite[Any]
    package: str | None = None
    version: str | None = None
    entry_point: str | None = None
    """Where the package registered it, `module:object`: what `--suite` takes to pick one of two of a name."""


def _load(point: EntryPoint, packages: dict[int, tuple[str, str]]) -> FoundSuite:
    """The suite `point` names; `packages` holds the name and version of each distribution already read (reading
    them parses its metadata: most suites come from one distribution)."""
    try:
        suite = point.load()
    except Exception as exc:
        raise TaskError(f"suite {point.name!r} ({point.value}) failed to load: {type(exc).__name__}: {exc}") from None
    if not isinstance(suite, Suite):
        raise TaskError(f"suite {point.name!r} ({point.value}) is a {type(suite).__name__}, not an evaluator.Suite")
    dist = point.dist
    if dist is None:
        return FoundSuite(suite, None, None, point.value)
    if id(dist) not in packages:
        packages[id(dist)] = (dist.name, dist.version)
    package, version = packages[id(dist)]
    return FoundSuite(suite, package, version, point.value)


def _points() -> list[EntryPoint]:
    return plugin_points(ENTRY_POINT_GROUP)


def find_suites(on_error: Callable[[TaskError], None] | None = None) -> list[FoundSuite]:
    """Every suite installed, by name; one that fails to load raises, or with `on_error` is handed to it and left
    out (a broken plug-in does not hide the others)."""
    found: list[FoundSuite] = []
    points = _points()  # held while loading: a distribution's id is not reused among them
    packages: dict[int, tuple[str, str]] = {}
    for point in points:
        try:
            found.append(_load(point, packages))
        except TaskError as exc:
            if on_error is None:
                raise
            on_error(exc)
    return found


def same_named(found: Sequence[FoundSuite]) -> dict[str, list[FoundSuite]]:
    """The suites installed under a name another also has (a suite's name, or the name its package registers)."""
    by_name: dict[str, list[FoundSuite]] = {}
    for one in found:
        by_name.setdefault(one.suite.name, []).append(one)
    return {name: twins for name, twins in by_name.items() if len(twins) > 1}


def registered(found: FoundSuite) -> str:
    """`module:object (package version)`: which of two suites of one name this is."""
    origin = f" ({found.package} {found.version})" if found.package else ""
    return f"{found.entry_point}{origin}"


def suite_named(name: str) -> tuple[FoundSuite, dict[str, object]]:
    """The suite `--suite NAME` means, and the parameters the name itself sets: a registered name, or a file whose
    suffix a suite opens (`cases.yaml`: its `path`)."""
    points = _points()
    for point in points:
        if point.value == name:  # one of two suites of a name, picked by its entry point
            return _load(point, {}), {}
    loaded = find_suites(on_error=lambda _: None)  # a broken plug-in is said by `suites`, and by its own name
    twins = same_named(loaded).get(name)
    if twins is not None:
        raise InputError(f"{len(twins)} installed suites are named {name!r}: {', '.join(map(registered, twins))}: name "
                         f"one by its entry point (--suite {twins[0].entry_point})")  # fmt: skip
    for point in points:
        if point.name == name:
            return _load(point, {}), {}
    for found in loaded:
        if found.suite.paths and name.endswith(found.suite.paths):
            return found, {"path": name}
    if not points:
        raise InputError("no suites are registered: the package's metadata is older than its code (pip install -e .)")
    names = ", ".join(p.name for p in points)
    files = sorted({suffix for found in loaded for suffix in found.suite.paths})
    raise InputError(f"unknown suite {name!r}: use {names}" + (f", or a file ({' '.join(files)})" if files else ""))


def _redacted(params: dict[str, Any]) -> dict[str, Any]:
    """The parameters as stored: a URL's credentials or query, or a value of an environment variable named like a
    key, replaced with `[REDACTED]` (a secret belongs in `SecretStr` or `Field(exclude=True)`, never in a run)."""
    texts = [v for v in params.values() if isinstance(v, str)]
    redact = Redactor.for_run(urls=texts)
    return {key: redact(value) if isinstance(value, str) else value for key, value in params.items()}


def open_suite(found: FoundSuite, params: BaseModel, context: SuiteContext | None = None) -> tuple[Task[Any], Dataset]:
    """The suite's task and dataset for `params`; the dataset records the suite, its package's version and the
    parameters (a resume compares them)."""
    suite = found.suite
    build = suite.build
    positional = [
        p
        for p in inspect.signature(build).parameters.values()
        if p.kind in (p.POSITIONAL_ONLY, p.POSITIONAL_OR_KEYWORD)
    ]
    try:
        made = build(params, context or SuiteContext()) if len(positional) > 1 else build(params)
    except EvaluatorError:
        raise
    except Exception as exc:  # a plug-in's own failure: one line naming the suite
        raise TaskError(f"suite {suite.name!r} failed to build its cases: {type(exc).__name__}: {exc}") from None
    if not (isinstance(made, tuple) and len(made) == 2 and isinstance(made[0], Task)):
        raise TaskError(f"suite {suite.name!r}: build() must return (evaluator.Task, cases), got {type(made).__name__}")
    task, cases = made
    stored = _redacted(params.model_dump(mode="json"))
    if isinstance(cases, Dataset):
        dataset = cases
    else:
        dataset = dataset_from_cases(cases, suite=suite.name, source="generated", params=stored)
    info = dataset.info.model_copy(update={"suite_params": stored, "suite_version": found.version})
    return task, dataset.with_info(info)
