"""Published lineage-bench results in, runs out: one run per (model, problem size, reasoning effort) of a result CSV,
each response replayed through tag mode, so a run's scores are what `compute_metrics.py` prints for that file.

A result CSV has no header; its columns are `RESULT_COLUMNS`. `compute_metrics.py` reads it with pandas, so the
values pandas takes for missing (an empty field, `NA`, `None`...) count as missing here too: a missing reasoning
effort is "N/A", a missing model name is refused (pandas would drop the row). A response is kept as written: none
of those values holds an answer, so it reads as no answer either way. A model name loses a `:free` or `:exacto`
suffix and gains the reasoning effort, as `compute_metrics.py` names its rows: `openai/gpt-5.2 (high)`.
"""

from __future__ import annotations

import hashlib
import re
from collections import deque
from collections.abc import AsyncIterator, Iterable
from dataclasses import dataclass, field
from pathlib import Path

from typed_eval.contracts import Case, DatasetInfo, RunSummary
from typed_eval.core.datasets import Dataset, survey
from typed_eval.core.errors import InputError
from typed_eval.core.run_config import RunConfig
from typed_eval.core.sources import files_named
from typed_eval.engine.runs import Imported, run
from typed_eval.providers.prepared_model import PreparedModel
from typed_eval.providers.replay import replay_model
from typed_eval.providers.resolve import ResolvedModel
from typed_eval.store.storage import imported_run_dir, model_slug
from typed_eval.suites.lineage.answers import LINEAGE_TASK
from typed_eval.suites.lineage.generator import SUITE, csv_line, numbered
from typed_eval.suites.lineage.quiz_files import case_from_row, csv_rows

__all__ = [
    "NO_EFFORT",
    "RESULT_COLUMNS",
    "ResultImport",
    "ResultRun",
    "import_result_file",
    "import_result_run",
    "read_results",
    "result_files",
]

RESULT_COLUMNS = (
    "problem_size", "relation_name", "correct_answer", "quiz", "model_name", "provider_name", "reasoning_effort",
    "system_prompt", "model_response",
)  # fmt: skip

_PANDAS_MISSING = frozenset(
    {"", "#N/A", "#N/A N/A", "#NA", "-1.#IND", "-1.#QNAN", "-NaN", "-nan", "1.#IND", "1.#QNAN", "<NA>", "N/A", "NA",
     "NULL", "NaN", "None", "n/a", "nan", "null"}
)  # fmt: skip
"""The strings pandas' `read_csv` reads as missing by default."""

NO_EFFORT = "N/A"
_FREE_SUFFIX = re.compile(r":(free|exacto)$")


def _value(text: str) -> str | None:
    return None if text in _PANDAS_MISSING else text


@dataclass
class ResultRun:
    """The rows of one (model, problem size, reasoning effort) of a result file, in file order."""

    model: str
    """As `compute_metrics.py` names the row: suffix dropped, ` (effort)` added."""
    problem_size: int
    reasoning_effort: str
    source: Path
    source_sha1: str
    """Of the file's bytes: importing the same file again finds the runs it made."""
    cases: list[Case] = field(default_factory=list)
    responses: list[str] = field(default_factory=list)
    system_prompt: str | None = None

    @property
    def run_id(self) -> str:
        effort = "" if self.reasoning_effort == NO_EFFORT else "-" + model_slug(self.reasoning_effort)
        return f"imported-{self.source_sha1[:12]}-{self.problem_size}{effort}"

    def run_dir(self, results_dir: Path) -> tuple[Path, bool]:
        """Where the run is stored, and whether it is there already (`storage.imported_run_dir`)."""
        return imported_run_dir(results_dir, self.model, self.run_id)


def result_files(paths: Iterable[str]) -> list[Path]:
    """The files named, and the `.csv` files found recursively in the folders named."""
    return files_named(paths, ".csv", "result")


def read_results(path: Path) -> list[ResultRun]:
    """A lineage-bench result CSV as its runs, in the order each first appears; bad input is one line."""
    try:
        raw = path.read_bytes()
        text = raw.decode("utf-8-sig")
    except OSError as exc:
        raise InputError(f"cannot read {path}: {exc.strerror or exc}") from None
    except UnicodeDecodeError:
        raise InputError(f"malformed result CSV {path}: not UTF-8 text") from None
    sha1 = hashlib.sha1(raw).hexdigest()
    runs: dict[tuple[str, int, str], ResultRun] = {}
    for number, row in csv_rows(text, str(path)):
        where = f"malformed result CSV: {path} row {number}"
        if len(row) != len(RESULT_COLUMNS):
            raise InputError(
                f"{where}: expected {len(RESULT_COLUMNS)} fields ({', '.join(RESULT_COLUMNS)}), got {len(row)}"
            )
        size, relation, correct, quiz, model, _, effort, system, response = row
        name = _value(model)
        if name is None:
            raise InputError(f"{where}: no model name")
        case = case_from_row(size, relation, correct, quiz, where)
        key = (_FREE_SUFFIX.sub("", name), int(case.metadata["problem_size"]), _value(effort) or NO_EFFORT)
        if key not in runs:
            label = key[0] if key[2] == NO_EFFORT else f"{key[0]} ({key[2]})"
            runs[key] = ResultRun(label, key[1], key[2], path, sha1, system_prompt=_value(system))
        runs[key].cases.append(case)
        runs[key].responses.append(response)
    if not runs:
        raise InputError(f"malformed result CSV: {path}: no rows")
    for each in runs.values():
        each.cases = list(numbered(each.cases))
    return list(runs.values())


def _dataset(found: ResultRun) -> Dataset:
    """The run's quizzes; their MD5 is that of the CSV `lineage_bench.py` would write for them, so a run imported
    from `-s -l 8 -n 50 -r 42` quizzes shares its dataset with a run made here on them."""
    cases = found.cases
    groups, md5, source = survey(lambda: iter(cases), lambda case: csv_line(case).encode("utf-8"))
    info = DatasetInfo(
        suite=SUITE,
        source="file",
        path=str(found.source),
        md5=md5,
        cases=len(cases),
        params={"problem_sizes": [found.problem_size]},
    )
    return Dataset(info, groups, source)


def _replay(run: ResultRun) -> ResolvedModel:
    """A model answering each quiz with the response recorded for it (a quiz asked twice: its responses in turn)."""
    replies: dict[str, deque[str]] = {}
    for case, response in zip(run.cases, run.responses, strict=True):
        replies.setdefault(case.prompt, deque()).append(response)

    def reply_to(prompt: str) -> str | None:
        left = replies.get(prompt)
        return left.popleft() if left else None

    return ResolvedModel(replay_model(reply_to, run.model), run.model, None, local=False)


@dataclass(frozen=True)
class ResultImport:
    """One run of a result file, imported: where it is stored and its summary; `already`: it was stored before, and
    nothing was imported."""

    run: ResultRun
    run_dir: Path
    summary: RunSummary
    already: bool = False


async def import_result_file(path: Path, results_dir: Path) -> AsyncIterator[ResultImport]:
    """Each (model, problem size, reasoning effort) of a result file as a stored run, one after another (the file is
    read, and refused if malformed, before the first is stored); a run stored already is found, not stored again."""
    for found in read_results(path):
        yield await import_result_run(found, results_dir)


async def import_result_run(found: ResultRun, results_dir: Path) -> ResultImport:
    """Replay the run's responses in tag mode (no retries, one at a time, so a quiz asked twice gets its responses
    in file order) and store it as an imported run: unknown tokens, cost and latency."""
    settings = RunConfig(mode="tag", retries=0, concurrency=1, system_prompt=found.system_prompt, local=False)
    outcome = await run(
        LINEAGE_TASK,
        _dataset(found),
        PreparedModel(_replay(found)),
        settings,
        results_dir=results_dir,
        imported=Imported(found.run_id),
    )
    return ResultImport(found, outcome.run_dir, outcome.summary, already=outcome.result is None)
