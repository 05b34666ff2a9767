"""A stored run's whole life: create or continue it, pose what is left, append every record, write the summary.

`result/<model-slug>/<run-id>/` holds `samples.jsonl` (one record a line, appended and flushed as each sample
finishes) and `summary.json` (written as `partial` when the run starts, and again at its end). Resume, the
retry of failed calls and the summary live here, so a library user gets them as the command line does.
"""

from __future__ import annotations

import contextlib
import itertools
import time
from collections.abc import Callable, Iterable, Iterator
from contextlib import AsyncExitStack
from dataclasses import dataclass, replace
from datetime import UTC, datetime
from importlib.metadata import PackageNotFoundError, version
from pathlib import Path
from typing import Any

from pydantic_ai.models import Model

from typed_eval.contracts import Case, Pacing, RunSettings, RunStatus, RunSummary, SampleRecord, Scores, SourceLog
from typed_eval.core.datasets import Dataset, dataset_from_cases
from typed_eval.core.errors import EvaluatorError, InputError, ResultFileError
from typed_eval.core.run_config import BatchOptions, RunConfig, config_with
from typed_eval.core.scoring import ScoreBook
from typed_eval.core.secrets import Redactor
from typed_eval.core.tasks import Task
from typed_eval.engine.control import Budget, RunControl, StopForced, StopState, control_of
from typed_eval.engine.evaluation import EvaluationResult, Sample, pose_samples
from typed_eval.engine.resume import THIS_SEGMENT, NothingToResume, differences, run_to_continue
from typed_eval.engine.settings import batch_options, model_name, prepared_model, resolve_settings
from typed_eval.engine.traces import Traces, run_traces
from typed_eval.engine.workers import WorkerProcesses, WorkerShare, claimed_samples, pose_in_workers
from typed_eval.providers.batches import PENDING_FILE, PendingRequests
from typed_eval.providers.flow import Pacer, PaceReport
from typed_eval.providers.prepared_model import PreparedModel
from typed_eval.providers.prices import updated_prices
from typed_eval.providers.transport import TrafficMeter
from typed_eval.store.storage import (
    RECORDS_FILE,
    RUNNING,
    SUMMARY_FILE,
    RunWriter,
    StoredRun,
    drop_torn_line,
    imported_run_dir,
    latest_records,
    load_runs,
    model_slug,
    new_run_id,
    read_records,
    rewrite_records,
)

__all__ = [
    "INTERRUPTED",
    "RUNNING",
    "Imported",
    "NothingToResume",
    "RunOutcome",
    "model_name",
    "program_version",
    "run",
]

INTERRUPTED = "interrupted by the user"


def program_version() -> str:
    try:
        return version("typed-eval")
    except PackageNotFoundError:
        return "0+unknown"


@dataclass(frozen=True)
class RunOutcome:
    """A stored run after this call: where it is, its summary, and what this call posed (None: nothing)."""

    run_dir: Path
    summary: RunSummary
    result: EvaluationResult | None
    posed: int
    """Samples posed by this call (a resumed run poses only what is left)."""


@dataclass(frozen=True)
class Imported:
    """Makes `run()` store an import of published results (a replay of what a model answered elsewhere): under a run
    id made from the source's bytes, so importing it again finds the run stored and stores nothing; marked
    `imported`, with no latency (replay time is not the model's), no pacing and no wall time."""

    run_id: str
    source_log: Callable[[Scores], SourceLog] | None = None
    """The source, checked against the run's scores (a published log's own summary lines)."""
    lacking: str | None = None
    """Why the run is partial although every case it was given was answered: the source lacks some of the dataset's
    cases (the cases given to `run()` are those it has)."""


async def run(
    task: Task[Any],
    cases: Dataset | Iterable[Case],
    model: str | Model | PreparedModel,
    config: RunConfig | None = None,
    control: RunControl | None = None,
    *,
    results_dir: Path | str = "result",
    resume: bool | str | Path = False,
    retry_errors: bool = False,
    imported: Imported | None = None,
    **changes: Any,
) -> RunOutcome:
    """Evaluate and store: a new run under `results_dir`, or the one `resume` names (True: the latest
    unfinished run with the same model, task, settings and dataset; or a run folder). `config`, `control` and
    `changes` are `evaluate()`'s: what the run is (stored as the settings it resolved from them), and how this process
    drives it (never stored, so a resume needs none of it). `config` adds `judge_model` (the model a task's LLM judge
    grades with: stored, and a resume must keep it) and `update_prices` (a URL, e.g.
    `typed_eval.providers.prices.DEFAULT_UPDATE_URL`: genai-prices' data is refreshed from it before the first
    request, and the run's settings say so); its `model_settings` are refused, as the summary would not say how the
    run asked. A resumed run keeps its finished samples and poses the rest; `retry_errors` poses again only the
    samples whose call failed (`error`; a schema the provider refused, `unsupported`, would be refused again and is
    kept) and keeps one record per sample. Every finished sample is on disk before it counts, so an interrupted run
    (Ctrl-C, kill -9, a reboot) loses nothing: resume it. Returns the final summary; `summary.status` says
    `finished`, `partial` or `dnf`. Resume and the retry of errors work per (case, repeat). A batched run
    (`config.batch`) keeps each request waiting on a batch in the run folder (`batches.jsonl`) as soon as it is
    submitted, so a resume collects it instead of sending it again. `imported` stores an import of published
    results (see `Imported`): if that run is stored already, it is returned as it is (`posed` 0, `result` None).

    `control` as for `evaluate()` (its records are on disk, never kept in memory), and: `on_start(to_pose, run_dir)`
    is called before the first request; what the `pacer` met (429s, waits, outages) is stored in the summary's
    totals; `traffic` gauges the run's transport as it goes. `workers` (`WorkerProcesses`) poses the samples in
    `workers.count` parts, this process and its pool's worker processes sharing one stream of them (see
    `typed_eval.engine.workers`), this process storing every record; a `WorkerShare` is a worker's side: pose its
    part of that work file of a stored run with its share of the budgets, give each record to `on_record` only, and
    store nothing.
    """
    config = config_with(config, **changes)
    control = control_of(control, stores=True)
    workers = control.workers
    if config.model_settings is not None:
        raise InputError(
            "are not stored, so a stored run would not say how it asked: give its settings as RunConfig fields "
            "(temperature, seed, max_tokens...), or use evaluate()",
            parameter="model_settings",
        )
    if imported is not None and (resume is not False or retry_errors or workers is not None):
        raise InputError("an import is stored whole, in one process: it is not resumed or shared", parameter="imported")
    options = batch_options(config)
    budget = Budget.of(config)
    if isinstance(workers, WorkerShare):
        budget = budget.share(workers.parts)
    async with AsyncExitStack() as stack:
        if config.update_prices is not None:
            stack.enter_context(updated_prices(config.update_prices))
        prepared = await prepared_model(model, config, task, stack)
        dataset = cases if isinstance(cases, Dataset) else dataset_from_cases(cases, suite=task.name)
        settings = resolve_settings(
            config,
            prepared,
            task,
            batch=options is not None,
            pacer=control.pacer,
            workers=workers.count if isinstance(workers, WorkerProcesses) else 1,
            imported=imported is not None,
        )
        parent = workers.trace_parent if isinstance(workers, WorkerShare) else None
        traces = run_traces(
            config,
            task.name,
            settings,
            prepared.resolved.model,
            dataset_name=dataset.info.suite,
            cases=dataset.size,
            parent=parent,
        )
        call = _Call(
            task,
            dataset,
            prepared,
            settings,
            budget,
            control.stop or StopState(),
            control.pacer,
            control.traffic or TrafficMeter(),
            control.on_record,
            options,
            stack.enter_context(traces),
        )
        if isinstance(workers, WorkerShare):
            return await _pose_share(call, workers.work)
        return await _run(
            call, Path(results_dir), resume, retry_errors, workers=workers, imported=imported, on_start=control.on_start
        )


@dataclass(frozen=True)
class _Call:
    """What a `run()` call poses, and how: its task, dataset, model, resolved settings, budget, stop state, pacer
    (None: the run's own), traffic gauges, the callback that hears each record, its batching
    and its traces."""

    task: Task[Any]
    dataset: Dataset
    prepared: PreparedModel
    settings: RunSettings
    budget: Budget
    stop: StopState
    pacer: Pacer | None
    traffic: TrafficMeter
    on_record: Callable[[SampleRecord], None] | None
    batch: BatchOptions | None
    traces: Traces


def _samples(dataset: Dataset, repeats: int, wanted: Callable[[str, int], bool]) -> Iterator[Sample]:
    """The (case, repeat) pairs still to pose, one whole pass over the dataset per repeat (streamed)."""
    for repeat in range(repeats):
        for case in dataset.cases():
            if wanted(case.id, repeat):
                yield case, repeat


async def _run(
    call: _Call,
    results_dir: Path,
    resume: bool | str | Path,
    retry_errors: bool,
    *,
    workers: WorkerProcesses | None,
    imported: Imported | None,
    on_start: Callable[[int, Path], None] | None,
) -> RunOutcome:
    dataset, settings, name = call.dataset, call.settings, call.prepared.resolved.name
    continued = run_to_continue(resume, retry_errors, results_dir, settings, call.task, dataset)
    posed, to_pose = _samples(dataset, settings.repeats, lambda _, __: True), dataset.size * settings.repeats
    started_at = datetime.now(UTC)
    if imported is not None:
        run_dir, stored = imported_run_dir(results_dir, name, imported.run_id)
        if stored:
            (found,) = load_runs(run_dir / SUMMARY_FILE)
            return RunOutcome(run_dir, found.summary, None, 0)
    elif continued is None:
        run_dir = results_dir / model_slug(name) / new_run_id(settings.mode, started_at)
    else:
        run_dir = continued.path
        if continued.summary.settings.tool_choice == "auto" and settings.tool_choice is None:
            kept = {key: getattr(settings, key) for key in THIS_SEGMENT}
            call = replace(call, settings=continued.summary.settings.model_copy(update=kept))
    with RunWriter(run_dir, resume=continued is not None) as writer:  # the lock: one process writes a run
        if continued is not None:
            drop_torn_line(run_dir)
            kept_status = {(r.case_id, r.repeat): r.status for r in read_records(run_dir)}
            if retry_errors:
                redo = {key for key, status in kept_status.items() if status == "error"}
                posed, to_pose = _samples(dataset, settings.repeats, lambda *key: key in redo), len(redo)
            else:
                posed = _samples(dataset, settings.repeats, lambda *key: key not in kept_status)
                to_pose = dataset.size * settings.repeats - len(kept_status)
        return await _pose_and_store(
            call,
            writer,
            posed,
            to_pose,
            started_at,
            continued,
            retry_errors=retry_errors,
            workers=workers,
            imported=imported,
            on_start=on_start,
        )


async def _pose_share(call: _Call, share: Path) -> RunOutcome:
    """A worker's part of a stored run: the chunks of its work file it takes, with the run's settings (a resumed run's
    tool choice included), each record given to `on_record`; the run folder is left to its owner."""
    (stored,) = load_runs(share.parent / SUMMARY_FILE)
    if changed := differences(stored.summary, call.settings, call.task, call.dataset):
        raise InputError(f"a worker's settings differ from its run's: {'; '.join(changed)}")
    if call.settings.mode == "tool" and stored.summary.settings.tool_choice == "auto":
        call = replace(call, settings=call.settings.model_copy(update={"tool_choice": "auto"}))
    result = await _pose_part(call, share, reached=True)
    return RunOutcome(share.parent, stored.summary, result, 0 if result is None else result.scores.samples)


async def _pose_part(call: _Call, work: Path, *, reached: bool = False) -> EvaluationResult | None:
    """One part's samples of a shared work stream (see `typed_eval.engine.workers`), posed; None if the other parts
    took them all. `reached`: a worker's part, begun once the owner's first sample was recorded, so its own first
    sample failing is that sample's error, not a model that cannot be reached (its chunk is posed all the same)."""
    stream = claimed_samples(_samples(call.dataset, call.settings.repeats, lambda *_: True), work)
    first = next(stream, None)
    if first is None:
        return None
    return await pose_samples(
        call.task,
        itertools.chain([first], stream),
        call.prepared,
        call.settings,
        on_record=call.on_record,
        budget=call.budget,
        stop=call.stop,
        pacer=call.pacer,
        traffic=call.traffic,
        keep_records=False,
        reached=reached,
        traces=call.traces,
    )


async def _pose_and_store(
    call: _Call,
    writer: RunWriter,
    posed: Iterator[Sample],
    to_pose: int,
    started_at: datetime,
    continued: StoredRun | None,
    *,
    retry_errors: bool,
    workers: WorkerProcesses | None,
    imported: Imported | None,
    on_start: Callable[[int, Path], None] | None,
) -> RunOutcome:
    task, dataset, settings = call.task, call.dataset, call.settings
    run_dir, resolved = writer.run_dir, call.prepared.resolved
    earlier_s, earlier_pacing, earlier_end = 0.0, None, None
    if continued is not None:
        started_at, earlier_s = continued.summary.started_at, continued.summary.wall_s
        earlier_pacing = continued.summary.scores.totals.pacing
        earlier_end = (continued.summary.status, continued.summary.reason)
    segment_started = time.perf_counter()
    paced_before = call.pacer.report() if call.pacer is not None else None

    def summary(result: EvaluationResult | None, status: RunStatus, reason: str | None) -> RunSummary:
        used: dict[str, Any] = {"tool_choice": result.tool_choice if result is not None else settings.tool_choice}
        if result is not None and result.tool_choice_reason and not settings.tool_choice_reason:
            used["tool_choice_reason"] = result.tool_choice_reason
        book, excluded = ScoreBook(dataset.group_sizes, aggregate=task.aggregate, metrics=task.metrics), []
        for record in latest_records(run_dir):
            book.add(record)
            if record.excluded:
                excluded.append(record.case_id)
        scores = book.scores()
        wall_s = round(earlier_s + time.perf_counter() - segment_started, 3)
        scores.totals.pacing = _pacing(earlier_pacing, call.traffic.pacer, paced_before)
        if imported is not None:  # replay time and pace are not the model's
            wall_s, scores.totals.pacing = 0.0, None
        return RunSummary(
            program_version=program_version(),
            run_id=run_dir.name,
            suite=dataset.info.suite,
            task=task.name,
            model=resolved.name,
            mode=settings.mode,
            status=status,
            reason=reason,
            imported=imported is not None,
            source_log=imported.source_log(scores) if imported is not None and imported.source_log else None,
            started_at=started_at,
            finished_at=datetime.now(UTC),
            wall_s=wall_s,
            settings=settings.model_copy(update=used),
            dataset=dataset.info,
            scores=scores,
            excluded_case_ids=sorted(set(excluded)),  # a case posed with repeats is listed once
        )

    result: EvaluationResult | None = None
    writer.write_summary(summary(None, "partial", RUNNING))

    def on_each(record: SampleRecord) -> None:
        if imported is not None:
            record = record.model_copy(update={"latency_s": None})
        writer.append(record)
        if call.on_record is not None:
            call.on_record(record)

    if on_start is not None:
        on_start(to_pose, run_dir)
    try:
        if to_pose > 0 and workers is not None:

            async def pose_here(
                work: Path, take: Callable[[SampleRecord], None], budget: Budget, stop: StopState
            ) -> EvaluationResult | None:
                return await _pose_part(replace(call, budget=budget, stop=stop, on_record=take), work)

            result = await pose_in_workers(
                task,
                workers,
                run_dir,
                posed,
                pose_here=pose_here,
                on_record=on_each,
                budget=call.budget,
                stop=call.stop,
                trace_parent=call.traces.parent,
            )
        elif to_pose > 0:
            result = await pose_samples(
                task,
                posed,
                call.prepared,
                settings,
                on_record=on_each,
                budget=call.budget,
                stop=call.stop,
                pacer=call.pacer,
                traffic=call.traffic,
                keep_records=False,
                batch=call.batch,
                batch_store=PendingRequests(run_dir / PENDING_FILE) if call.batch is not None else None,
                traces=call.traces,
            )
    except EvaluatorError as exc:
        if (
            earlier_end is None
            and not (run_dir / RECORDS_FILE).stat().st_size
            and not (run_dir / PENDING_FILE).exists()
        ):
            writer.discard()
        else:
            with contextlib.suppress(ResultFileError):  # the disk may be as full for the summary: keep the cause
                why = Redactor.for_run(model=resolved.model)(f"stopped by an error: {exc}")
                writer.write_summary(summary(None, "partial", why))
        raise
    except BaseException as exc:  # Ctrl-C, a forced stop, cancellation: what is written is kept, to resume
        forced = exc.reason if isinstance(exc, StopForced) else call.stop.reason if call.stop.stopping else None
        writer.write_summary(summary(None, "partial", forced or INTERRUPTED))
        raise
    status: RunStatus = "finished" if result is None else result.status
    reason = None if result is None else result.reason
    if retry_errors and status == "dnf" and earlier_end is not None:  # the retry failed: the run stays as it was
        status, reason = earlier_end
    final = summary(result, status, reason)
    if final.status == "finished" and final.scores.samples < dataset.size * settings.repeats:
        final = final.model_copy(update={"status": "partial", "reason": "some cases have no record yet"})
    if final.status == "finished" and imported is not None and imported.lacking is not None:
        final = final.model_copy(update={"status": "partial", "reason": imported.lacking})
    if earlier_end is not None and final.status == "finished":  # one line per sample, for pandas or jq
        latest = {(r.case_id, r.repeat): r for r in read_records(run_dir)}
        in_order = (latest[c.id, r] for c, r in _samples(dataset, settings.repeats, lambda *key: key in latest))
        rewrite_records(run_dir, in_order)
    writer.write_summary(final)
    call.traces.finish(final.status, final.scores.score, final.scores.samples)
    return RunOutcome(run_dir, final, result, to_pose)


def _pacing(earlier: Pacing | None, pacer: Pacer | None, before: PaceReport | None) -> Pacing | None:
    """What flow control met in this segment of the run, added to the earlier segments' (None: nothing was paced)."""
    if pacer is None:
        return earlier
    now = pacer.report()
    segment = now.since(before) if before is not None else now
    earlier = earlier or Pacing()
    return Pacing(
        rate_limited=earlier.rate_limited + segment.rate_limited,
        waits=earlier.waits + segment.waits,
        wait_s=round(earlier.wait_s + segment.wait_s, 3),
        outages=earlier.outages + segment.outages,
        outage_s=round(earlier.outage_s + segment.outage_s, 3),
        sent_into_outage=earlier.sent_into_outage + segment.sent_into_outage,
        stated_rpm=segment.stated_rpm or earlier.stated_rpm,
        stated_tpm=segment.stated_tpm or earlier.stated_tpm,
        notes=list(dict.fromkeys([*earlier.notes, *segment.notes])),
    )
