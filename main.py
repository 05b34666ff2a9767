#!/usr/bin/env python3
"""Command line: `python main.py run --model M ...` evaluates a model on FaRel quizzes and stores the run.

Every expected failure (bad input, unknown model, missing key, unreachable server, corrupt file) ends
as one line on stderr and a non-zero exit; records already written stay on disk.
"""

from __future__ import annotations

import argparse
import asyncio
import shutil
import signal
import sys
import time
from collections.abc import Sequence
from contextlib import ExitStack, closing
from dataclasses import dataclass, replace
from datetime import UTC, datetime
from importlib.metadata import PackageNotFoundError, version
from pathlib import Path
from typing import Any

from pydantic_ai.settings import ModelSettings
from rich.console import Console

import evaluator
from evaluator import ToolChoice
from harness.answers import DEFAULT_SYSTEM_PROMPT, mode_instructions
from harness.attempts import UserPrices
from harness.datasets import Dataset, generated_dataset, read_dataset
from harness.errors import EvaluatorError, InputError, OneLineArgumentParser
from harness.farel_logs import log_files, parse_log, resolve_replay
from harness.importer import import_log, imported_run_id
from harness.local_server import DEFAULT_LOCAL_MODEL, LlamaServer, check_mode, locate_local_model
from harness.progress import Progress
from harness.providers import ResolvedModel, resolve_model
from harness.scoring import ScoreBook
from harness.storage import (
    RECORDS_FILE,
    SUMMARY_FILE,
    RunWriter,
    StoredRun,
    drop_torn_line,
    load_runs,
    model_slug,
    new_run_id,
    read_records,
    rewrite_records,
)
from harness.transport import ResponseCache, http_client
from schemas import RunSettings, RunStatus, RunSummary, SampleRecord

CACHE_FILE = Path(".cache") / "responses.sqlite"
LATEST = "latest"
RUNNING = "running: not finished (continue it with --resume)"
INTERRUPTED = "interrupted by the user"
SHORT_RUN_QUIZZES = 45
"""A local model's default run: 5 quizzes per FaRel-3 class (--full for all 450)."""
EXIT_DNF = 3
EXIT_INTERRUPTED = 130


def program_version() -> str:
    try:
        return version("farel-eval")
    except PackageNotFoundError:
        return "0+unknown"


def _positive(text: str) -> int:
    value = int(text)
    if value < 1:
        raise argparse.ArgumentTypeError(f"must be at least 1, got {value}")
    return value


def _non_negative(text: str) -> int:
    value = int(text)
    if value < 0:
        raise argparse.ArgumentTypeError(f"must be 0 or more, got {value}")
    return value


def _price(text: str) -> float:
    value = float(text)
    if value < 0:
        raise argparse.ArgumentTypeError(f"must be 0 or more, got {value}")
    return value


def build_parser() -> argparse.ArgumentParser:
    parser = OneLineArgumentParser(prog="main.py", description="Evaluate models on FaRel quizzes with typed answers.")
    commands = parser.add_subparsers(dest="command", required=True)
    run = commands.add_parser("run", help="pose quizzes to a model, score the answers and store the run")
    model = run.add_argument_group("model")
    model.add_argument(
        "--model",
        help="pydantic-ai model string (openai:gpt-4o-mini, openrouter:..., anthropic:..., google:..., ollama:NAME, "
        "test), any model name with --base-url, local:smollm2-135m | local:gemma3-270m | local:/path/x.gguf "
        "(served here by llama-cpp-python), or replay:LOGFILE (default: local:smollm2-135m)",
    )
    model.add_argument(
        "--base-url", help="an OpenAI-compatible server, e.g. http://127.0.0.1:8080/v1 (llama.cpp, vLLM)"
    )
    model.add_argument(
        "--api-key", help="API key (never written to results); default: the provider's environment variable"
    )
    model.add_argument(
        "--mode",
        choices=["tool", "tag", "native", "prompted"],
        default="tool",
        help="answer through a tool call (default), farel-bench's <ANSWER> tag, JSON schema output, "
        "or a schema stated in the prompt",
    )
    model.add_argument(
        "--retries",
        type=_non_negative,
        help="corrective retries after an invalid output (default: 3; 0 in tag mode, as farel-bench)",
    )
    model.add_argument(
        "--system-prompt",
        nargs="?",
        const=DEFAULT_SYSTEM_PROMPT,
        default=None,
        help="a system prompt; the bare flag uses farel-bench's default one",
    )
    model.add_argument(
        "--temperature", type=float, default=0.01, help="sampling temperature (default 0.01, as farel-bench)"
    )
    model.add_argument(
        "--model-seed", type=int, default=42, help="sampling seed where the provider takes one (default 42)"
    )
    model.add_argument(
        "--max-tokens", type=_positive, help="maximum output tokens per request (default: the provider's)"
    )
    model.add_argument(
        "--tool-choice",
        choices=["required", "auto"],
        help="force the answer tool call or leave it to the model (default: force, and fall back to "
        "auto if the server refuses)",
    )
    model.add_argument("--price-in", type=_price, help="USD per million input tokens, for models with no known price")
    model.add_argument("--price-out", type=_price, help="USD per million output tokens, for models with no known price")
    data = run.add_argument_group("quizzes")
    data.add_argument("--quizzes", metavar="FILE", help="a FaRel CSV file, or - for standard input (default: generate)")
    data.add_argument("--length", type=_positive, default=3, help="generate degrees 1..LENGTH (default 3)")
    data.add_argument("--number", type=_positive, default=50, help="quizzes per class (default 50)")
    data.add_argument("--seed", type=int, default=42, help="generator seed (default 42)")
    data.add_argument("--no-shuffle", action="store_true", help="keep statement and option order (default: shuffled)")
    data.add_argument(
        "--unambiguous",
        action="store_true",
        help="name the two 'cousin Nx removed' classes of degree >= 5 apart (not farel-bench parity)",
    )
    data.add_argument("--limit", type=_positive, help="pose only N quizzes, spread evenly over the classes")
    out = run.add_argument_group("run")
    model.add_argument(
        "--chat-format", help="local models: llama-cpp-python chat handler (default chatml-function-calling)"
    )
    model.add_argument("--pull", action="store_true", help="ollama: pull the model first if Ollama does not have it")
    data.add_argument("--full", action="store_true", help="local models: all quizzes (default there: 45, 5 per class)")
    out.add_argument("--concurrency", type=_positive, help="requests in flight (default 8; 1 for local models)")
    out.add_argument("--results-dir", type=Path, default=Path("result"), help="where runs are stored (default result)")
    out.add_argument("--quiet", action="store_true", help="no progress display")
    faults = run.add_argument_group("faults, budgets and cache")
    faults.add_argument(
        "--max-transport-retries",
        type=_non_negative,
        help="resend a request after HTTP 429/5xx, a timeout or a dropped connection, with "
        "exponential backoff and jitter, honouring Retry-After (default: the provider SDK's, 2)",
    )
    faults.add_argument(
        "--request-timeout",
        type=float,
        help="seconds one request may take before it counts as failed (default: the provider SDK's, 600)",
    )
    faults.add_argument("--max-cost", type=_price, help="stop starting samples once this many USD are spent")
    faults.add_argument("--max-requests", type=_positive, help="stop starting samples after this many requests")
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
        help="pose again only the samples recorded as error (failed calls) of that run, keeping one record each",
    )
    imports = commands.add_parser("import-farel", help="store farel-bench log files as runs, re-scored and checked")
    imports.add_argument("paths", nargs="+", metavar="PATH", help="log files, or folders searched for *.log")
    imports.add_argument(
        "--quizzes", metavar="FILE", help="the FaRel CSV the logs were run on (default: the published FaRel-3 dataset)"
    )
    imports.add_argument(
        "--results-dir", type=Path, default=Path("result"), help="where runs are stored (default result)"
    )
    models = commands.add_parser("models", help="list the models a provider has on this machine")
    models.add_argument("--provider", choices=["ollama", "local"], default="ollama")
    models.add_argument("--base-url", help="the Ollama server (default: OLLAMA_BASE_URL or http://localhost:11434)")
    return parser


def _dataset(args: argparse.Namespace) -> Dataset:
    if args.quizzes is not None:
        return read_dataset(args.quizzes)
    return generated_dataset(
        args.length, args.number, args.seed, shuffle=not args.no_shuffle, unambiguous=args.unambiguous
    )


def _report(summary: RunSummary, run_dir: Path) -> None:
    """farel-bench's per-class lines, then the macro score, format compliance and totals."""
    scores = summary.scores
    for c in scores.classes:
        accuracy = f"{c.accuracy:.2f}" if c.accuracy is not None else "n/a"
        extra = "".join(f", {label}: {n}" for label, n in (("E", c.errors), ("ambiguous", c.ambiguous)) if n)
        print(
            f"{c.class_name}: {accuracy} (C: {c.correct}, I: {c.incorrect}, M: {c.missing} "
            f"A: {c.correct + c.incorrect + c.missing}{extra})"
        )
    farel = f"{scores.macro_accuracy:.2f}" if scores.macro_accuracy is not None else "n/a"
    length = summary.dataset.length
    print(f"FaRel{'-' + str(length) if length else ''}: {farel}  ({summary.model}, {summary.mode} mode)")
    comp, totals = scores.compliance, scores.totals
    first = f"{comp.valid_first_try:.1f}%" if comp.valid_first_try is not None else "n/a"
    after = f"{comp.valid_after_retries:.1f}%" if comp.valid_after_retries is not None else "n/a"
    kinds = ", ".join(f"{k} {n}" for k, n in comp.invalid_by_kind.items()) or "none"
    print(
        f"format: valid first try {first}, after retries {after}, corrective retries {comp.corrective_retries}, "
        f"invalid outputs {comp.invalid_outputs} ({kinds}), missing {scores.missing}, errors {scores.errors}"
    )
    if summary.mode == "tag" and comp.relaxed_recoverable:
        print(
            f"relaxed reading: {comp.relaxed_recoverable} missing replies state an answer without the tag "
            f"({comp.relaxed_recoverable_correct} of them correct); not counted"
        )
    if scores.ambiguous:
        print(
            f"ambiguous: {scores.ambiguous} quizzes repeat the correct option's name; recorded but not scored "
            "(use --unambiguous to name the classes apart)"
        )
    cost = (
        "unknown"
        if totals.cost_usd is None
        else f"${totals.cost_usd:.6f}{'' if totals.cost_complete else ' (lower bound)'}"
    )
    print(
        f"totals: {totals.requests} requests, {totals.input_tokens} input / {totals.output_tokens} output tokens, "
        f"cost {cost}, {summary.wall_s:.1f} s"
    )
    print(f"stored in {run_dir}")


@dataclass(frozen=True)
class PreparedModel:
    """A model ready to be asked, with the defaults that suit where it runs."""

    resolved: ResolvedModel
    tool_choice: ToolChoice | None
    tool_choice_reason: str | None = None
    concurrency: int = 8
    max_tokens: int | None = None
    short_run: bool = False
    """Local models: 5 quizzes per class unless --full or --limit."""
    model_file: str | None = None
    chat_format: str | None = None


def _prepare_model(args: argparse.Namespace, dataset: Dataset, stack: ExitStack) -> PreparedModel:
    """Resolve `--model` (default: the embedded local model), starting or checking its server first."""
    spec = args.model or DEFAULT_LOCAL_MODEL
    cache = stack.enter_context(closing(ResponseCache(args.results_dir / CACHE_FILE))) if args.cache else None
    http = http_client(cache=cache, timeout=args.request_timeout)
    if spec.startswith("replay:"):
        return PreparedModel(resolve_replay(spec.removeprefix("replay:"), dataset.load()), args.tool_choice)
    if spec.startswith("local:"):
        local = locate_local_model(spec, chat_format=args.chat_format)
        check_mode(local, args.mode)
        if not args.quiet:
            print(f"starting llama-cpp-python's server for {spec} ({local.path.name})", file=sys.stderr)
        server = stack.enter_context(LlamaServer(local))
        resolved = replace(resolve_model(local.path.stem, base_url=server.url, http_client=http), name=spec)
        return PreparedModel(
            resolved, args.tool_choice or "auto",
            None if args.tool_choice else "llama-cpp-python's server accepts only tool_choice auto",
            concurrency=1, max_tokens=512, short_run=True, model_file=str(local.path), chat_format=local.chat_format,
        )  # fmt: skip
    if spec.startswith("ollama:"):
        from harness.ollama_models import ensure_ollama_model, ollama_host  # only here: 0.1 s of start-up

        host = ollama_host(args.base_url)
        ensure_ollama_model(
            host, spec.removeprefix("ollama:"), mode=args.mode, pull=args.pull, console=Console(stderr=True)
        )
        return PreparedModel(
            resolve_model(spec, mode=args.mode, base_url=f"{host}/v1", api_key=args.api_key, http_client=http),
            args.tool_choice,
        )
    return PreparedModel(
        resolve_model(spec, mode=args.mode, base_url=args.base_url, api_key=args.api_key, http_client=http),
        args.tool_choice,
    )


def command_run(args: argparse.Namespace) -> int:
    dataset = _dataset(args)
    if (args.price_in is None) != (args.price_out is None):
        raise InputError("give both --price-in and --price-out (USD per million tokens), or neither")
    with ExitStack() as stack:
        prepared = _prepare_model(args, dataset, stack)
        limit = args.limit if args.limit is not None or args.full or not prepared.short_run else SHORT_RUN_QUIZZES
        if limit is not None:
            dataset = dataset.limited(limit)
        return _run_and_store(args, dataset, prepared)


_SAME_RUN_SETTINGS = ("model", "mode", "retries", "temperature", "seed", "max_tokens", "system_prompt")
"""Settings that must match for `--resume` to continue a run (the dataset's MD5 and limit too)."""


def _differences(summary: RunSummary, settings: RunSettings, dataset: Dataset) -> list[str]:
    mine = settings.model_dump()
    theirs = summary.settings.model_dump()
    changed = [f"{k} {theirs[k]!r} != {mine[k]!r}" for k in _SAME_RUN_SETTINGS if theirs[k] != mine[k]]
    if (summary.dataset.md5, summary.dataset.limit) != (dataset.info.md5, dataset.info.limit):
        changed.append("the dataset (MD5 or --limit) differs")
    return changed


def _run_to_continue(args: argparse.Namespace, settings: RunSettings, dataset: Dataset) -> StoredRun | None:
    """`--resume [RUN_DIR]` or `--retry-errors`: the stored run to continue, checked against this command."""
    if args.resume is None and not args.retry_errors:
        return None
    if args.resume not in (None, LATEST):
        (run,) = load_runs(Path(args.resume) / SUMMARY_FILE)
        if changed := _differences(run.summary, settings, dataset):
            raise InputError(f"cannot resume {args.resume} with other settings: {'; '.join(changed)}")
        return run
    folder = args.results_dir / model_slug(settings.model)
    runs = load_runs(folder) if folder.exists() else []
    wanted = {"finished", "partial", "dnf"} if args.retry_errors else {"partial", "dnf"}
    matching = [r for r in runs if r.summary.status in wanted and not _differences(r.summary, settings, dataset)]
    if not matching:
        raise InputError(
            f"no {'stored' if args.retry_errors else 'unfinished'} run of {settings.model} in {settings.mode} mode "
            f"with these settings and dataset under {folder}"
        )
    return matching[-1]


async def _evaluate_interruptibly(control: evaluator.RunControl, **options: Any) -> evaluator.EvaluationResult:
    """The first Ctrl-C stops sending and lets requests in flight finish; a second one interrupts at once."""
    loop = asyncio.get_running_loop()

    def first_interrupt() -> None:
        control.stop(INTERRUPTED)
        loop.remove_signal_handler(signal.SIGINT)

    loop.add_signal_handler(signal.SIGINT, first_interrupt)
    try:
        return await evaluator.evaluate(control=control, **options)
    finally:
        loop.remove_signal_handler(signal.SIGINT)


def _run_and_store(args: argparse.Namespace, dataset: Dataset, prepared: PreparedModel) -> int:
    resolved = prepared.resolved
    prices = UserPrices(args.price_in, args.price_out) if args.price_in is not None else None
    retries = evaluator.default_retries(args.mode) if args.retries is None else args.retries
    concurrency = args.concurrency or prepared.concurrency
    max_tokens = args.max_tokens or prepared.max_tokens
    settings = ModelSettings(temperature=args.temperature, seed=args.model_seed)
    if args.max_transport_retries is not None:  # else the SDK's default, with no client copy per request
        settings["max_retries"] = args.max_transport_retries
    if args.request_timeout is not None:
        settings["timeout"] = args.request_timeout
    if max_tokens is not None:
        settings["max_tokens"] = max_tokens
    run_settings = RunSettings(
        model=resolved.name, base_url=resolved.base_url, mode=args.mode, retries=retries,
        temperature=args.temperature, seed=args.model_seed, max_tokens=max_tokens, system_prompt=args.system_prompt,
        instructions=mode_instructions(args.mode), tool_choice=prepared.tool_choice,
        tool_choice_reason=prepared.tool_choice_reason, concurrency=concurrency, price_in=args.price_in,
        price_out=args.price_out, local=resolved.local, model_file=prepared.model_file,
        chat_format=prepared.chat_format,
    )  # fmt: skip
    continued = _run_to_continue(args, run_settings, dataset)
    posed, to_pose = dataset, dataset.size
    earlier_s = 0.0
    if continued is None:
        started_at = datetime.now(UTC)
        run_dir = args.results_dir / model_slug(resolved.name) / new_run_id(args.mode, started_at)
    else:
        run_dir, started_at, earlier_s = continued.path, continued.summary.started_at, continued.summary.wall_s
        if drop_torn_line(run_dir) and not args.quiet:
            print("main.py: dropped a half-written last record; that quiz is posed again", file=sys.stderr)
        if continued.summary.settings.tool_choice == "auto" and prepared.tool_choice is None:
            run_settings = continued.summary.settings.model_copy(update={"concurrency": concurrency})
        kept = {r.quiz_id: r.status for r in read_records(run_dir)}
        if args.retry_errors:
            redo = [quiz_id for quiz_id, status in kept.items() if status == "error"]
            posed, to_pose = dataset.only(redo), len(redo)
        else:
            posed, to_pose = dataset.without(kept), dataset.size - len(kept)
    progress = Progress(to_pose, quiet=args.quiet)
    control = evaluator.RunControl(max_cost=args.max_cost, max_requests=args.max_requests)
    segment_started = time.perf_counter()

    def summary(result: evaluator.EvaluationResult | None, status: RunStatus, reason: str | None) -> RunSummary:
        used: dict[str, Any] = {"tool_choice": result.tool_choice if result is not None else run_settings.tool_choice}
        if result is not None and result.tool_choice_reason and not run_settings.tool_choice_reason:
            used["tool_choice_reason"] = result.tool_choice_reason
        book, ambiguous = ScoreBook(dataset.class_sizes), []
        for record in read_records(run_dir):
            book.add(record)
            if record.ambiguous:
                ambiguous.append(record.quiz_id)
        return RunSummary(
            program_version=program_version(), run_id=run_dir.name, model=resolved.name, mode=args.mode,
            status=status, reason=reason, started_at=started_at, finished_at=datetime.now(UTC),
            wall_s=round(earlier_s + time.perf_counter() - segment_started, 3),
            settings=run_settings.model_copy(update=used), dataset=dataset.info,
            scores=book.scores(), ambiguous_quiz_ids=sorted(ambiguous),
        )  # fmt: skip

    with RunWriter(run_dir, resume=continued is not None) as writer:
        writer.write_summary(summary(None, "partial", RUNNING))

        def on_record(record: SampleRecord) -> None:
            writer.append(record)
            progress.advance(record)

        try:
            if to_pose <= 0:
                result = None
            else:
                with progress:
                    result = asyncio.run(_evaluate_interruptibly(
                        control, quizzes=posed.quizzes(), model=resolved.model, mode=args.mode, retries=retries,
                        system_prompt=args.system_prompt, model_settings=settings, concurrency=concurrency,
                        local=resolved.local, prices=prices, tool_choice=run_settings.tool_choice,
                        on_record=on_record, keep_records=False,
                    ))  # fmt: skip
        except KeyboardInterrupt:
            writer.write_summary(summary(None, "partial", INTERRUPTED))
            print(f"main.py: interrupted; finished samples are kept in {run_dir} (--resume continues)", file=sys.stderr)
            return EXIT_INTERRUPTED
        except EvaluatorError:
            if continued is None and not (run_dir / RECORDS_FILE).stat().st_size:
                writer.close()
                shutil.rmtree(run_dir, ignore_errors=True)
            else:
                writer.write_summary(summary(None, "partial", "stopped by an error"))
            raise
        if args.retry_errors:
            latest = {r.quiz_id: r for r in read_records(run_dir)}
            rewrite_records(run_dir, (latest[q.id] for q in dataset.quizzes() if q.id in latest))
        status: RunStatus = "finished" if result is None else result.status
        reason = None if result is None else result.reason
        final = summary(result, status, reason)
        if final.status == "finished" and final.scores.samples < dataset.size:
            final = final.model_copy(update={"status": "partial", "reason": "some quizzes have no record yet"})
        writer.write_summary(final)
    if final.status == "dnf":
        where = f" at {resolved.base_url}" if resolved.base_url else ""
        print(f"main.py: error: model {resolved.name}{where} could not be reached: {final.reason} "
              f"(run stored as DNF in {run_dir})", file=sys.stderr)  # fmt: skip
        return EXIT_DNF
    _report(final, run_dir)
    if final.reason == INTERRUPTED:
        print(f"main.py: interrupted; finished samples are kept in {run_dir} (--resume continues)", file=sys.stderr)
        return EXIT_INTERRUPTED
    return 0


def command_models(args: argparse.Namespace) -> int:
    """List the models a provider has here: Ollama's pulled models, or the local GGUF models installed."""
    if args.provider == "ollama":
        from harness.ollama_models import list_ollama_models, ollama_host

        host = ollama_host(args.base_url)
        models = list_ollama_models(host)
        for m in models:
            size = f"{m.size_bytes / 1e9:.1f} GB" if m.size_bytes else "?"
            tools = "tools" if m.capabilities and "tools" in m.capabilities else "no tools"
            if m.capabilities is None:
                tools = "capabilities unknown"
            print(f"ollama:{m.name}\t{size}\t{m.parameters or '?'}\t{m.quantization or '?'}\t{tools}")
        if not models:
            print(
                f"no models in Ollama at {host}: pull one with `ollama pull NAME` or `main.py run --pull`",
                file=sys.stderr,
            )
        return 0
    for name in ("local:smollm2-135m", "local:gemma3-270m"):
        try:
            model = locate_local_model(name)
        except EvaluatorError as exc:
            print(f"{name}\tnot installed: {exc}")
            continue
        tools = "tools" if model.tool_calls else "no tools"
        print(f"{name}\t{model.path}\t{model.path.stat().st_size / 1e6:.0f} MB\t{model.chat_format}\t{tools}")
    return 0


def command_import(args: argparse.Namespace) -> int:
    """Import each log as a run; a log that cannot be imported, or whose counts differ, makes the exit 1."""
    dataset = read_dataset(args.quizzes) if args.quizzes else generated_dataset(3, 50, 42, shuffle=True)
    failed = 0
    for path in log_files(args.paths):
        try:
            failed += not _import_one(path, dataset, args.results_dir)
        except EvaluatorError as exc:
            print(f"main.py: error: {exc}", file=sys.stderr)
            failed += 1
    return 1 if failed else 0


def _import_one(path: Path, dataset: Dataset, results_dir: Path) -> bool:
    log = parse_log(path)
    model = path.stem
    run_dir = results_dir / model_slug(model) / imported_run_id(log)
    if (run_dir / SUMMARY_FILE).exists():
        print(f"{path}: already imported in {run_dir}")
        return True
    started_at = datetime.now(UTC)
    quizzes = dataset.load()
    imported = asyncio.run(import_log(log, quizzes))
    complete = len(imported.records) == len(quizzes)
    summary = RunSummary(
        program_version=program_version(),
        run_id=run_dir.name,
        model=model,
        mode="tag",
        status="finished" if complete else "partial",
        reason=None if complete else f"the log has {len(imported.records)} of the dataset's {len(quizzes)} quizzes",
        imported=True,
        source_log=imported.source,
        started_at=started_at,
        finished_at=datetime.now(UTC),
        wall_s=0.0,
        settings=RunSettings(
            model=model,
            mode="tag",
            retries=0,
            temperature=None,
            seed=None,
            max_tokens=None,
            system_prompt=imported.system_prompt,
            instructions=None,
            concurrency=1,
        ),
        dataset=dataset.info,
        scores=imported.scores,
        ambiguous_quiz_ids=[r.quiz_id for r in imported.records if r.ambiguous],
    )
    with RunWriter(run_dir) as writer:
        for record in imported.records:
            writer.append(record)
        writer.write_summary(summary)
    farel = summary.scores.macro_accuracy
    head = f"{path}: {imported.source.replies} replies, FaRel {farel:.2f}" if farel is not None else f"{path}:"
    source = imported.source
    if source.matches_log_summary is None:
        print(f"{head}; no summary lines in the log to check against ({'; '.join(source.notes)}); stored in {run_dir}")
        return True
    if source.matches_log_summary:
        print(f"{head}; re-scored counts match the log's summary lines; stored in {run_dir}")
        return True
    print(f"{head}; re-scored counts DIFFER from the log's summary lines (stored in {run_dir}):")
    for line in source.mismatches:
        print(f"  {line}")
    return False


def main(argv: Sequence[str] | None = None) -> int:
    args = build_parser().parse_args(argv)
    try:
        if args.command == "run":
            return command_run(args)
        if args.command == "import-farel":
            return command_import(args)
        if args.command == "models":
            return command_models(args)
    except EvaluatorError as exc:
        print(f"main.py: error: {exc}", file=sys.stderr)
        return exc.exit_code
    except KeyboardInterrupt:  # a second Ctrl-C while shutting down: records written so far are kept
        print("main.py: interrupted", file=sys.stderr)
        return EXIT_INTERRUPTED
    return 2


if __name__ == "__main__":
    sys.exit(main())
