"""`run`: pose a suite's cases to each `--model`, score the outputs, store each run, and report them; with
`--workers`, the samples are posed by forked processes that call the library, each storing nothing itself."""

from __future__ import annotations

import argparse
import asyncio
import json
import sys
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

from rich.console import Console

from typed_eval.cli import common
from typed_eval.cli.common import (
    EXIT_DNF,
    EXIT_INTERRUPTED,
    EXIT_TERMINATED,
    EXIT_TRY_LATER,
    MAX_CONCURRENCY,
    RESULTS_DIR,
    prog,
)
from typed_eval.cli.config import CACHE_FILE, LATEST, RunCommand, run_command
from typed_eval.cli.stop_signals import TERMINATED, StopSignals
from typed_eval.cli.suite_flags import add_suite_flags, given_keys
from typed_eval.cli.suites import answer_modes, default_suite, suite_from_args
from typed_eval.contracts import AnswerMode
from typed_eval.core.datasets import Dataset
from typed_eval.core.errors import EvaluatorError, InputError
from typed_eval.core.run_config import user_prices
from typed_eval.core.suite import Suite, SuiteContext, find_suites
from typed_eval.core.tasks import Task
from typed_eval.core.terminal import printable
from typed_eval.engine.collector import COST_UNENFORCEABLE, CREDENTIALS_REFUSED, NOTHING_POSABLE
from typed_eval.engine.control import RunControl, StopState
from typed_eval.engine.progress import Progress
from typed_eval.engine.runs import INTERRUPTED, NothingToResume, RunOutcome, run
from typed_eval.engine.workers import (
    WorkerPool,
    WorkerProcesses,
    WorkerShare,
    share_result_line,
    stop_when_told,
    write_record_line,
)
from typed_eval.providers.flow import DEFAULT_MAX_WAIT_S, WAITED_TOO_LONG, Pacer
from typed_eval.providers.prepared_model import open_model
from typed_eval.providers.prices import DEFAULT_UPDATE_URL
from typed_eval.providers.transport import TrafficMeter
from typed_eval.suites.judge import judge_name, judged
from typed_eval.suites.multiple_choice import DEFAULT_SYSTEM_PROMPT
from typed_eval.suites.simulators import simulated

SHORT_RUN_CASES = 45
"""A local model's default run: 45 cases spread evenly over the groups (--full for all)."""


def add_parser(commands: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    run = commands.add_parser("run", help="pose a suite's cases to a model, score the outputs and store the run")
    installed = find_suites(on_error=lambda _: None)  # a broken plug-in is said by `suites`, and by its own name
    default = default_suite(installed)
    run.add_argument(
        "--suite",
        default=None,  # the default suite, or the one the suite flags given belong to (`--dataset FILE`)
        help=f"an installed suite (`suites` lists them, `suites NAME` shows one's parameters; default {default}), a "
        "suite file (path/to/file.py defining TASK and CASES or cases()), or a file a suite opens by its suffix "
        "(path/to/cases.yaml)",
    )
    run.add_argument(
        "-S",
        dest="suite_param",
        action="append",
        metavar="KEY=VALUE",
        help="a suite parameter (repeatable; `suites NAME` lists a suite's): -S length=4 -S seed=7",
    )
    add_suite_flags(run, installed)
    model = run.add_argument_group("model")
    model.add_argument(
        "--model",
        action="append",
        help="a pydantic-ai model string (openai:gpt-4o-mini, openrouter:..., anthropic:..., google:..., ollama:NAME, "
        "test), any model name with --base-url, local:smollm2-135m | local:gemma3-270m | local:/path/x.gguf "
        "(served here by llama-cpp-python), or replay:LOGFILE (default: local:smollm2-135m); repeat --model to "
        "compare models on the identical cases, one stored run each",
    )
    model.add_argument(
        "--base-url", help="an OpenAI-compatible server, e.g. http://127.0.0.1:8080/v1 (llama.cpp, vLLM)"
    )
    model.add_argument(
        "--api-key", help="API key (never written to results); default: the provider's environment variable"
    )
    model.add_argument(
        "--mode",
        action="append",
        choices=["tool", "native", "prompted", "text", "tag", "all"],
        help="answer through a tool call (default), JSON schema output, a schema stated in the prompt, or text "
        "read by the suite's reader (tag: the suite's own answer tag, read as its original benchmark reads it); repeat "
        "--mode (or --mode all: every mode the suite poses) to compare modes on the identical cases, one stored run "
        "each; with no --model and no --mode, the embedded model in tool and tag mode",
    )
    model.add_argument(
        "--retries",
        type=common.non_negative,
        help="corrective retries after an invalid output (default: 3; 0 in tag mode, as the original benchmarks)",
    )
    model.add_argument(
        "--system-prompt",
        nargs="?",
        const=DEFAULT_SYSTEM_PROMPT,
        default=None,
        help="a system prompt; the bare flag uses the multiple-choice suites' default one",
    )
    model.add_argument(
        "--temperature", type=common.finite, help="sampling temperature (default: the suite's, 0.01 for most)"
    )
    model.add_argument(
        "--model-seed", type=int, help="sampling seed where the provider takes one (default: the suite's, 42 for most)"
    )
    model.add_argument(
        "--max-tokens", type=common.positive, help="maximum output tokens per request (default: the provider's)"
    )
    model.add_argument(
        "--tool-choice",
        choices=["required", "auto"],
        help="force the answer tool call or leave it to the model (default: force, and fall back to "
        "auto if the server refuses)",
    )
    model.add_argument(
        "--price-in", type=common.price, help="USD per million input tokens, for models with no known price"
    )
    model.add_argument(
        "--price-out", type=common.price, help="USD per million output tokens, for models with no known price"
    )
    model.add_argument(
        "--judge-model",
        help="the model a suite's LLM judge grades with, for the suites that judge (default: the run's model)",
    )
    data = run.add_argument_group("cases")
    data.add_argument("--limit", type=common.positive, help="pose only N cases, spread evenly over the groups")
    data.add_argument(
        "--repeats", type=common.positive, default=1, help="pose every case K times (scores are means; default 1)"
    )
    out = run.add_argument_group("run")
    model.add_argument(
        "--chat-format", help="local models: llama-cpp-python chat handler (default chatml-function-calling)"
    )
    model.add_argument("--pull", action="store_true", help="ollama: pull the model first if Ollama does not have it")
    data.add_argument(
        "--full",
        action="store_true",
        help="local models: all cases (default with a local: model: 45, spread over the groups)",
    )
    out.add_argument(
        "--concurrency",
        type=common.concurrency,
        help=f"requests in flight (default 8; 1 for local models; at most {MAX_CONCURRENCY:,})",
    )
    out.add_argument(
        "--workers",
        type=common.positive,
        default=1,
        help="pose the samples in N processes (each with --concurrency requests in flight) into one run: "
        "for servers faster than one core can drive (default 1)",
    )
    out.add_argument("--results-dir", type=Path, default=RESULTS_DIR, help="where runs are stored (default result)")
    out.add_argument("--quiet", action="store_true", help="no progress display")
    out.add_argument(
        "--trace",
        action="store_true",
        help="send OpenTelemetry traces to the OTLP endpoint the OTEL_EXPORTER_OTLP_* variables name (the otel "
        "extra; docs/traces.md)",
    )
    out.add_argument(
        "--trace-content", action="store_true", help="--trace: the prompts, replies and outputs in the spans too"
    )
    faults = run.add_argument_group("faults, budgets and cache")
    faults.add_argument(
        "--rpm",
        type=common.rate,
        help="cap the run at N requests a minute from the start (the provider's stated limits are kept besides, "
        "and read as they come)",
    )
    faults.add_argument("--tpm", type=common.rate, help="cap the run at N tokens a minute from the start")
    faults.add_argument(
        "--max-wait",
        type=common.seconds,
        default=600.0,
        metavar="SECONDS",
        help="stop the run as partial (resumable) once requests have waited this long for capacity, or for an "
        "outage to end, with nothing answered (default 600)",
    )
    faults.add_argument(
        "--grace",
        type=common.grace,
        default=10.0,
        metavar="SECONDS",
        help="on a stop (Ctrl-C, SIGTERM, SIGHUP, a budget spent), how long requests in flight may take to finish "
        "and be recorded before they are cancelled, to be posed again by --resume (default 10)",
    )
    faults.add_argument(
        "--max-transport-retries",
        type=common.non_negative,
        help="resend a request after HTTP 429/5xx, a timeout or a dropped connection, with "
        "exponential backoff and jitter, honouring Retry-After (default 2, for every provider)",
    )
    faults.add_argument(
        "--request-timeout",
        type=common.seconds,
        help="seconds one request may take before it counts as failed (default: the provider SDK's, 600)",
    )
    faults.add_argument(
        "--batch",
        action="store_true",
        help="send every request through the provider's batch API (OpenAI, Anthropic, Google): batch prices "
        "(about half), results within 24 h; pending batches are kept in the run, and --resume collects them",
    )
    faults.add_argument(
        "--batch-poll",
        type=common.seconds,
        default=30.0,
        metavar="SECONDS",
        help="--batch: first check of a batch after this many seconds, then 1.5x longer each time, up to 10 min",
    )
    faults.add_argument(
        "--update-prices",
        nargs="?",
        const=DEFAULT_UPDATE_URL,
        metavar="URL",
        help="price with genai-prices' latest data (downloaded from its repository, or URL) for models released "
        "after install; default: the installed data, for reproducible costs (recorded in the run)",
    )
    faults.add_argument("--max-cost", type=common.price, help="stop starting samples once this many USD are spent")
    faults.add_argument("--max-requests", type=common.positive, help="stop starting samples after this many requests")
    faults.add_argument(
        "--cache",
        action=argparse.BooleanOptionalAction,
        default=False,
        help="reuse responses to identical requests, kept in RESULTS_DIR/.cache (default: no cache)",
    )
    faults.add_argument(
        "--resume",
        nargs="?",
        const=LATEST,
        metavar="RUN_DIR",
        help="continue the latest unfinished run with the same model, mode, settings and dataset "
        "(or the run in RUN_DIR): finished samples are kept, the rest are posed",
    )
    faults.add_argument(
        "--retry-errors",
        action="store_true",
        help="pose again only the samples recorded as error (failed calls) of that run, keeping one record each "
        "(a schema the provider refused, unsupported, is not posed again)",
    )
    run.set_defaults(command=command_run)


def command_run(args: argparse.Namespace) -> int:
    context = SuiteContext(
        cache_path=args.results_dir / CACHE_FILE if args.cache else None,
        request_timeout=args.request_timeout,
        base_url=args.base_url,
        api_key=args.api_key,
        keys=given_keys(args),
    )
    found, task, dataset = suite_from_args(args, context)
    modes = answer_modes(args.mode, found.suite, default_run=args.model is None)
    command = run_command(args, found.suite)
    if isinstance(command.resume, Path) and len(command.models) * len(modes) > 1:
        one = "one --model" if len(modes) == 1 else "one --model and one --mode"
        raise InputError(f"--resume RUN_DIR continues one run: give {one}, or --resume alone for each model's")
    short = any(name.startswith("local:") for name in command.models)  # the embedded model is slow: a short default
    limit = command.limit if command.limit is not None or command.full or not short else SHORT_RUN_CASES
    if limit is not None:
        dataset = dataset.limited(limit)
    config = command.config
    max_wait_s = config.max_wait_s or DEFAULT_MAX_WAIT_S
    pacer = Pacer(rpm=config.rpm, tpm=config.tpm, max_wait_s=max_wait_s, shared=command.workers > 1)
    if command.workers == 1:
        with StopSignals() as signals:
            return asyncio.run(_run(command, modes, found.suite, task, dataset, pacer, signals))
    serve = _serving(command, task, dataset, pacer, lambda pose: common.reported(args, pose))
    with WorkerPool(command.workers, serve) as pool, StopSignals() as signals:
        return asyncio.run(_run(command, modes, found.suite, task, dataset, pacer, signals, pool=pool))


def _serving(
    command: RunCommand, task: Task[Any], dataset: Dataset, pacer: Pacer, reported: Callable[[Callable[[], int]], int]
) -> Callable[[str], int]:
    """A forked worker's side of `--workers`: the library posing its part of the work file its owner names for one of
    the command's models, with its share of the budgets, quietly (its records go to its owner)."""

    def serve(order: str) -> int:
        name, mode, work, parent = json.loads(order)

        async def pose(signals: StopSignals) -> int:
            stop = StopState(grace_s=command.grace_s)
            with stop_when_told(lambda: stop.stop(TERMINATED)), signals.heard(stop.stop):
                outcome = await _run_model(
                    command, name, mode, task, dataset, stop, pacer, None, share=(Path(work), parent)
                )
            share_result_line(outcome.result)
            return 0

        def posed() -> int:
            with StopSignals() as signals:
                return asyncio.run(pose(signals))

        return reported(posed)

    return serve


async def _run(
    command: RunCommand,
    modes: Sequence[AnswerMode],
    suite: Suite[Any],
    task: Task[Any],
    dataset: Dataset,
    pacer: Pacer,
    signals: StopSignals,
    *,
    pool: WorkerPool | None = None,
) -> int:
    """Each of the command's models in each of `modes` in turn on the identical cases, a stored run each, under one
    progress display; then the comparison. With `pool`, each run is posed by it and this process. Every run keeps
    `pacer`'s pace, started afresh for each run (shared with the workers, which never reset it)."""
    current = StopState(grace_s=command.grace_s)
    stopped: list[str] = []

    def stop(reason: str) -> None:
        stopped.append(reason)
        current.stop(reason)

    models = command.models
    outcomes: list[RunOutcome] = []
    code = 0
    with signals.heard(stop), Progress(quiet=command.quiet) as progress:
        for name, mode in ((name, mode) for name in models for mode in modes):
            if stopped:
                break
            current = StopState(grace_s=command.grace_s)  # per run
            pacer.reset()
            try:
                outcome = await _run_model(command, name, mode, task, dataset, current, pacer, progress, pool=pool)
            except NothingToResume as exc:
                if len(models) * len(modes) == 1:
                    raise
                which = name if len(modes) == 1 else f"{name} in {mode} mode"
                print(f"{prog()}: {which}: nothing to resume ({exc})", file=sys.stderr)
                continue
            except EvaluatorError as exc:
                if exc.parameter != "mode" or len(modes) == 1:
                    raise
                print(f"{prog()}: {name} skipped in {mode} mode: {printable(exc.message)}", file=sys.stderr)
                continue  # `--mode all`: a mode this model cannot answer in is left out, the others are run
            outcomes.append(outcome)
            progress.finish()  # its last figures before its report, not after
            reported = _outcome_code(outcome, suite)  # every run's report, whichever failed before
            code = code or reported
    if not outcomes and not stopped:
        raise NothingToResume("none of the models has an unfinished run with these settings")
    if len(outcomes) > 1:
        from typed_eval.cli.run_report import print_comparison  # the reports' modules: imported once a run is done

        print_comparison([o.run_dir for o in outcomes], modes)
    return code


async def _run_model(
    command: RunCommand,
    name: str,
    mode: AnswerMode,
    task: Task[Any],
    dataset: Dataset,
    stop: StopState,
    pacer: Pacer,
    progress: Progress | None,
    *,
    pool: WorkerPool | None = None,
    share: tuple[Path, str | None] | None = None,
) -> RunOutcome:
    """One model's run in one mode through the library; `share`: a worker's part of it, its work file and the run
    span its traces go under (no progress, records to its owner)."""
    config = command.config.model_copy(update={"mode": mode})
    traffic = TrafficMeter()

    def status(text: str) -> None:
        if not command.quiet:
            print(text, file=sys.stderr)

    async with (
        open_model(
            name,
            config,
            api_key=command.api_key,
            cache_path=command.cache_path,
            pull=command.pull,
            console=Console(stderr=True),
            on_status=status,
            task=task,
        ) as prepared,
        judged(
            task,
            command.judge_model,
            prepared,
            cache_path=command.cache_path,
            request_timeout=config.request_timeout,
            prices=user_prices(config),
            temperature=config.temperature,
        ) as task,
        simulated(
            task,
            prepared,
            cache_path=command.cache_path,
            request_timeout=config.request_timeout,
            prices=user_prices(config),
            temperature=config.temperature,
        ) as task,
    ):
        workers: WorkerProcesses | WorkerShare | None = None
        if share is not None:
            workers = WorkerShare(share[0], parts=command.workers, trace_parent=share[1])
        elif pool is not None:
            workers = WorkerProcesses(pool, lambda work, parent: json.dumps([name, mode, str(work), parent]))
        return await run(
            task,
            dataset,
            prepared,
            config,
            RunControl(
                stop=stop,
                on_record=progress.advance if progress is not None else write_record_line,
                on_start=(lambda total, _: progress.start(total, prepared.resolved.name, traffic))
                if progress is not None
                else None,
                pacer=pacer,
                traffic=traffic,
                workers=workers,
            ),
            results_dir=command.results_dir,
            resume=command.resume,
            retry_errors=command.retry_errors,
            judge_model=judge_name(task),
        )


def _outcome_code(outcome: RunOutcome, suite: Suite[Any]) -> int:
    """Report one model's run; its exit code (0, or why it stopped)."""
    final, run_dir = outcome.summary, outcome.run_dir
    if final.status == "dnf" and (final.reason or "").startswith(NOTHING_POSABLE):  # the data, not the model
        print(printable(f"{prog()}: error: {final.reason} (run stored as DNF in {run_dir})"), file=sys.stderr)
        return 2
    if final.status == "dnf":
        where = f" at {final.settings.base_url}" if final.settings.base_url else ""
        answered = (final.reason or "").startswith("HTTP ") and (final.reason or "")[5:8] not in ("401", "403", "404")
        what = "answered every request with an error" if answered else "could not be reached"
        print(
            printable(
                f"{prog()}: error: model {final.model}{where} {what}: {final.reason} (run stored as DNF in {run_dir})"
            ),
            file=sys.stderr,
        )
        return EXIT_DNF
    from typed_eval.cli.run_report import print_report  # the reports' modules: imported once a run is done

    print_report(final, run_dir, suite)
    if final.reason is not None and final.reason.startswith(CREDENTIALS_REFUSED):
        print(printable(f"{prog()}: error: {final.reason} (run stored as partial in {run_dir})"), file=sys.stderr)
        return EXIT_DNF
    if final.reason is not None and final.reason.startswith(COST_UNENFORCEABLE):
        print(printable(f"{prog()}: {final.reason} (run stored as partial in {run_dir})"), file=sys.stderr)
    if final.reason is not None and final.reason.startswith(WAITED_TOO_LONG):
        print(f"{prog()}: {final.reason} (run stored as partial in {run_dir})", file=sys.stderr)
        return EXIT_TRY_LATER
    if final.reason in (INTERRUPTED, TERMINATED):
        kept = f"finished samples are kept in {run_dir} (--resume continues)"
        print(f"{prog()}: {final.reason}; {kept}", file=sys.stderr)
        return EXIT_INTERRUPTED if final.reason == INTERRUPTED else EXIT_TERMINATED
    return 0
