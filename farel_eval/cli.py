#!/usr/bin/env python3
"""Command line: `python main.py run --model M ...` evaluates a model on a suite's cases and stores the run;
`generate` writes a suite's quizzes as its original generator does, `import` stores published results as runs.

Every expected failure (bad input, unknown model, missing key, unreachable server, corrupt file) ends
as one line on stderr and a non-zero exit; records already written stay on disk.
"""

from __future__ import annotations

import argparse
import asyncio
import gc
import json
import logging
import math
import os
import signal
import sys
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit

from rich.console import Console

from farel_eval.attempts import UserPrices
from farel_eval.batches import BatchOptions
from farel_eval.datasets import Dataset, dataset_from_cases
from farel_eval.engine import CREDENTIALS_REFUSED, RunControl
from farel_eval.errors import EvaluatorError, InputError, OneLineArgumentParser
from farel_eval.flow import WAITED_TOO_LONG, Pacer
from farel_eval.leaderboard import build_rows, compare_runs, load_run, relaxed_score
from farel_eval.local_server import DEFAULT_LOCAL_MODEL, locate_local_model
from farel_eval.models import open_model
from farel_eval.prices import DEFAULT_UPDATE_URL
from farel_eval.progress import Progress
from farel_eval.runs import INTERRUPTED, NothingToResume, RunOutcome, run
from farel_eval.schemas import RunSettings, RunSummary, is_text_mode
from farel_eval.secrets import Redactor
from farel_eval.storage import latest_records
from farel_eval.suites import lineage
from farel_eval.suites.case_files import CASE_FILE_SUFFIXES, judge_name, judged, load_case_file
from farel_eval.suites.farel import FAREL_TASK, generated_dataset, read_dataset
from farel_eval.suites.farel_import import import_log_file
from farel_eval.suites.farel_logs import log_files
from farel_eval.suites.files import load_suite_file
from farel_eval.suites.lineage_import import import_result_file, result_files
from farel_eval.suites.multiple_choice import DEFAULT_SYSTEM_PROMPT
from farel_eval.tables import render_comparison, render_rich
from farel_eval.tasks import Task
from farel_eval.terminal import printable
from farel_eval.workers import (
    WorkerPool,
    WorkerProcesses,
    WorkerShare,
    budget_share,
    share_result_line,
    stop_when_told,
    write_record_line,
)

PROG = "farel-eval"
CACHE_FILE = Path(".cache") / "responses.sqlite"
BUILT_IN_SUITES = ("farel", "story-graph", "lineage", "novelty")
TAG_SUITES = ("farel", "lineage")
"""Suites whose text mode is the `<ANSWER>` tag, read as their benchmark reads it."""
SHORT_RUN_CASES = 45
"""A local model's default run: 5 quizzes per FaRel-3 class (--full for all 450)."""
EXIT_DNF = 3
EXIT_INTERRUPTED = 130
EXIT_TERMINATED = 143
EXIT_BROKEN_PIPE = 141
EXIT_TRY_LATER = 75
"""The provider gave no capacity, or stayed out of service, past --max-wait: resume later (sysexits' EX_TEMPFAIL)."""
TERMINATED = "terminated (SIGTERM)"


def _positive(text: str) -> int:
    value = int(text)
    if value < 1:
        raise argparse.ArgumentTypeError(f"must be at least 1, got {value}")
    return value


MAX_CONCURRENCY = 100_000
"""More requests in flight than any provider or machine serves: a number past it is a typo."""


def _concurrency(text: str) -> int:
    value = _positive(text)
    if value > MAX_CONCURRENCY:
        raise argparse.ArgumentTypeError(f"must be at most {MAX_CONCURRENCY:,}, got {value:,}")
    return value


def _non_negative(text: str) -> int:
    value = int(text)
    if value < 0:
        raise argparse.ArgumentTypeError(f"must be 0 or more, got {value}")
    return value


def _lengths(text: str) -> list[int]:
    """`3`, or a comma list of sizes (`8,16,32,64`) for lineage."""
    values = [int(part) for part in text.split(",")]
    for value in values:
        if value < 1:
            raise argparse.ArgumentTypeError(f"must be at least 1, got {value}")
    return values


def _finite(text: str) -> float:
    value = float(text)
    if not math.isfinite(value):
        raise argparse.ArgumentTypeError(f"must be a finite number, got {text}")
    return value


def _price(text: str) -> float:
    value = _finite(text)
    if value < 0:
        raise argparse.ArgumentTypeError(f"must be 0 or more, got {text}")
    return value


def _coherence(text: str) -> int:
    value = int(text)
    if not 0 <= value <= 10:
        raise argparse.ArgumentTypeError(f"must be 0 to 10 (the judge scores 1 to 10), got {value}")
    return value


def _share(text: str) -> float:
    value = _finite(text)
    if not 0 <= value <= 1:
        raise argparse.ArgumentTypeError(f"must be 0 to 1, got {text}")
    return value


def _rate(text: str) -> float:
    value = _finite(text)
    if value <= 0:
        raise argparse.ArgumentTypeError(f"must be more than 0, got {text}")
    return value


def _seconds(text: str) -> float:
    value = _finite(text)
    if value <= 0:
        raise argparse.ArgumentTypeError(f"must be more than 0 seconds, got {text}")
    return value


def build_parser() -> argparse.ArgumentParser:
    parser = OneLineArgumentParser(
        prog=_prog(), description="Evaluate models on typed tasks (FaRel, lineage, story-graph, your own suite files)."
    )
    commands = parser.add_subparsers(dest="command", required=True)
    run = commands.add_parser("run", help="pose a suite's cases to a model, score the outputs and store the run")
    run.add_argument(
        "--suite",
        default="farel",
        help="farel (default: FaRel quizzes), lineage (lineage-bench quizzes), story-graph (stories to "
        "relationship graphs), a suite file (path/to/file.py defining TASK and CASES or cases()), or a case "
        "file in promptfoo's format (path/to/cases.yaml, scored by difficulty-weighted assertions)",
    )
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
        choices=["tool", "native", "prompted", "text", "tag"],
        default="tool",
        help="answer through a tool call (default), JSON schema output, a schema stated in the prompt, or text "
        "read by the suite's reader (tag: the <ANSWER> tag, read as farel-bench or lineage-bench reads it)",
    )
    model.add_argument(
        "--retries",
        type=_non_negative,
        help="corrective retries after an invalid output (default: 3; 0 in tag mode, as farel-bench and lineage-bench)",
    )
    model.add_argument(
        "--system-prompt",
        nargs="?",
        const=DEFAULT_SYSTEM_PROMPT,
        default=None,
        help="a system prompt; the bare flag uses farel-bench's default one",
    )
    model.add_argument(
        "--temperature", type=_finite, default=0.01, help="sampling temperature (default 0.01, as farel-bench)"
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
    model.add_argument(
        "--judge-model",
        help="case files: the model that grades llm-rubric assertions; novelty: the model that rates each answer's "
        "coherence (default: the run's model)",
    )
    data = run.add_argument_group("cases")
    data.add_argument(
        "--quizzes", metavar="FILE", help="farel, lineage: a quiz CSV file, or - for standard input (default: generate)"
    )
    data.add_argument(
        "--length",
        type=_lengths,
        help="farel: generate degrees 1..LENGTH (default 3); lineage: people per quiz, sizes 4 to 2048 separated "
        f"by commas (default {','.join(map(str, lineage.DEFAULT_LENGTHS))})",
    )
    data.add_argument("--number", type=_positive, default=50, help="farel, lineage: quizzes per class (default 50)")
    data.add_argument("--people", type=_positive, default=8, help="story-graph: named people per story (default 8)")
    data.add_argument("--count", type=_positive, default=20, help="story-graph: number of stories (default 20)")
    data.add_argument("--seed", type=int, default=42, help="generator seed (default 42)")
    data.add_argument(
        "--questions", type=Path, metavar="FILE", help="novelty: one question a line (default: the shipped ones)"
    )
    data.add_argument(
        "--max-answers", type=_positive, help="novelty: accepted answers per question at most (default 20)"
    )
    data.add_argument(
        "--coherence-threshold",
        type=_coherence,
        help="novelty: an answer the judge scores at or below this (1-10) ends the loop (default 3, Aidan Bench's)",
    )
    data.add_argument(
        "--novelty-threshold",
        type=_share,
        help="novelty: an answer whose novelty (1 - its highest cosine similarity to an accepted answer) is below "
        "this ends the loop (default 0.1, Aidan Bench's)",
    )
    model.add_argument(
        "--embedding-model",
        help="novelty: a model at an OpenAI-compatible embeddings endpoint (with --embedding-base-url), or "
        "openai:NAME (default: all-MiniLM-L6-v2 on this machine, the novelty extra)",
    )
    model.add_argument("--embedding-base-url", help="novelty: the embeddings endpoint, e.g. http://127.0.0.1:8080/v1")
    model.add_argument(
        "--embedding-api-key",
        help="novelty: the embeddings endpoint's key (default: --api-key when it is --base-url's host, else "
        "OPENAI_API_KEY; never written to results)",
    )
    data.add_argument("--no-shuffle", action="store_true", help="keep statement and option order (default: shuffled)")
    data.add_argument(
        "--unambiguous",
        action="store_true",
        help="name the two 'cousin Nx removed' classes of degree >= 5 apart (not farel-bench parity)",
    )
    data.add_argument("--limit", type=_positive, help="pose only N quizzes, spread evenly over the classes")
    data.add_argument(
        "--repeats", type=_positive, default=1, help="pose every case K times (scores are means; default 1)"
    )
    out = run.add_argument_group("run")
    model.add_argument(
        "--chat-format", help="local models: llama-cpp-python chat handler (default chatml-function-calling)"
    )
    model.add_argument("--pull", action="store_true", help="ollama: pull the model first if Ollama does not have it")
    data.add_argument(
        "--full", action="store_true", help="local models: all quizzes (default with a local: model: 45, 5 per class)"
    )
    out.add_argument(
        "--concurrency",
        type=_concurrency,
        help=f"requests in flight (default 8; 1 for local models; at most {MAX_CONCURRENCY:,})",
    )
    out.add_argument(
        "--workers",
        type=_positive,
        default=1,
        help="pose the samples in N processes (each with --concurrency requests in flight) into one run: "
        "for servers faster than one core can drive (default 1)",
    )
    out.add_argument("--results-dir", type=Path, default=Path("result"), help="where runs are stored (default result)")
    out.add_argument("--quiet", action="store_true", help="no progress display")
    faults = run.add_argument_group("faults, budgets and cache")
    faults.add_argument(
        "--rpm", type=_rate, help="cap the run at N requests a minute from the start (the provider's stated limits "
        "are kept besides, and read as they come)",
    )  # fmt: skip
    faults.add_argument("--tpm", type=_rate, help="cap the run at N tokens a minute from the start")
    faults.add_argument(
        "--max-wait", type=_seconds, default=600.0, metavar="SECONDS",
        help="stop the run as partial (resumable) once requests have waited this long for capacity, or for an "
        "outage to end, with nothing answered (default 600)",
    )  # fmt: skip
    faults.add_argument(
        "--max-transport-retries",
        type=_non_negative,
        help="resend a request after HTTP 429/5xx, a timeout or a dropped connection, with "
        "exponential backoff and jitter, honouring Retry-After (default 2, for every provider)",
    )
    faults.add_argument(
        "--request-timeout",
        type=_seconds,
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
        type=_seconds,
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
    generate = commands.add_parser(
        "generate", help="write a suite's quizzes as CSV on stdout, the bytes its original generator writes"
    )
    generate.add_argument(
        "suite", choices=TAG_SUITES, help="farel (farel_bench.py's flags) or lineage (lineage_bench.py's)"
    )
    generate.add_argument("arguments", nargs=argparse.REMAINDER, help="the generator's flags (-h lists them)")
    sources = commands.add_parser("import", help="store published results as runs, re-scored").add_subparsers(
        dest="source", required=True
    )
    _farel_import_arguments(sources.add_parser("farel", help="farel-bench log files, re-scored and checked"))
    results = sources.add_parser(
        "lineage", help="lineage-bench result CSVs: a run per model, problem size and reasoning effort"
    )
    results.add_argument("paths", nargs="+", metavar="PATH", help="result CSV files, or folders searched for *.csv")
    results.add_argument(
        "--results-dir", type=Path, default=Path("result"), help="where runs are stored (default result)"
    )
    _farel_import_arguments(commands.add_parser("import-farel", help="the same as `import farel`"))
    models = commands.add_parser("models", help="list the models a provider has on this machine")
    models.add_argument("--provider", choices=["ollama", "local"], default="ollama")
    models.add_argument("--base-url", help="the Ollama server (default: OLLAMA_BASE_URL or http://localhost:11434)")
    return parser


def _farel_import_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("paths", nargs="+", metavar="PATH", help="log files, or folders searched for *.log")
    parser.add_argument(
        "--quizzes", metavar="FILE", help="the FaRel CSV the logs were run on (default: the published FaRel-3 dataset)"
    )
    parser.add_argument(
        "--results-dir", type=Path, default=Path("result"), help="where runs are stored (default result)"
    )


_NOVELTY_FLAGS = (
    "questions", "max_answers", "coherence_threshold", "novelty_threshold", "embedding_model", "embedding_base_url",
)  # fmt: skip
_QUIZ_FLAGS = {
    "quizzes": TAG_SUITES,
    "no_shuffle": TAG_SUITES,
    "unambiguous": ("farel",),
    **dict.fromkeys(_NOVELTY_FLAGS, ("novelty",)),
}
"""Flags that only some suites take."""


def _suites(names: Sequence[str]) -> str:
    return f"the {names[0]} suite" if len(names) == 1 else f"the {' and '.join(names)} suites"


def _suite(args: argparse.Namespace) -> tuple[Task[Any], Dataset]:
    """The task and cases of `--suite`: a built-in one, or a suite file defining TASK and CASES."""
    name = args.suite
    for flag, suites in _QUIZ_FLAGS.items():
        if name not in suites and getattr(args, flag) not in (None, False):
            raise InputError(f"--{flag.replace('_', '-')} belongs to {_suites(suites)}, not {name}")
    if name not in TAG_SUITES and args.mode == "tag":
        raise InputError(f"tag mode is the <ANSWER> tag of {_suites(TAG_SUITES)}: use --mode text with {name}")
    if name == "farel":
        if args.quizzes is not None:
            return FAREL_TASK, read_dataset(args.quizzes)
        length = args.length or [3]
        if len(length) > 1:
            raise InputError(f"--length takes one degree for the farel suite, got {','.join(map(str, length))}")
        dataset = generated_dataset(
            length[0], args.number, args.seed, shuffle=not args.no_shuffle, unambiguous=args.unambiguous
        )
        return FAREL_TASK, dataset
    if name == "lineage":
        if args.quizzes is not None:
            return lineage.LINEAGE_TASK, lineage.read_dataset(args.quizzes)
        sizes = args.length or list(lineage.DEFAULT_LENGTHS)
        shuffle = not args.no_shuffle
        return lineage.LINEAGE_TASK, lineage.generated_dataset(sizes, args.number, args.seed, shuffle=shuffle)
    if name == "novelty":
        return _novelty_suite(args)
    if name == "story-graph":
        from farel_eval.suites import story_graph

        people, count, seed = args.people, args.count, args.seed
        try:
            story_graph.generate_cases(people, 1, seed)
        except ValueError as exc:
            raise InputError(str(exc)) from None
        dataset = dataset_from_cases(
            lambda: story_graph.generate_cases(people, count, seed), suite="story-graph", source="generated",
            params={"people": people, "count": count, "seed": seed},
        )  # fmt: skip
        return story_graph.TASK, dataset
    if name.endswith(CASE_FILE_SUFFIXES):
        return load_case_file(Path(name))
    if not name.endswith(".py"):
        names = f"{', '.join(BUILT_IN_SUITES[:-1])} or {BUILT_IN_SUITES[-1]}"
        raise InputError(f"unknown suite {name!r}: use {names}, a suite file (.py) or a case file (.yaml)")
    return load_suite_file(Path(name))


def _novelty_suite(args: argparse.Namespace) -> tuple[Task[Any], Dataset]:
    """The questions, read first; then the embedder (loading the local model takes seconds)."""
    from farel_eval.embeddings import open_embedder
    from farel_eval.suites import novelty

    coherence, similar = args.coherence_threshold, args.novelty_threshold
    settings = novelty.NoveltySettings(
        max_answers=args.max_answers or novelty.MAX_ANSWERS,
        coherence_threshold=novelty.COHERENCE_THRESHOLD if coherence is None else coherence,
        novelty_threshold=novelty.NOVELTY_THRESHOLD if similar is None else similar,
    )
    questions = novelty.read_questions(args.questions)
    embedder = open_embedder(
        args.embedding_model, args.embedding_base_url, embedding_api_key=_embedding_key(args),
        request_timeout=args.request_timeout, cache_path=args.results_dir / CACHE_FILE if args.cache else None,
    )  # fmt: skip
    dataset = novelty.novelty_dataset(questions, embedder.name, settings, path=args.questions)
    return novelty.novelty_task(embedder, settings=settings), dataset


def _embedding_key(args: argparse.Namespace) -> str | None:
    """`--embedding-api-key`; `--api-key` only when the embeddings are served by the `--base-url` host (a key is
    never sent to another server), else OPENAI_API_KEY as the embedder reads it."""
    if args.embedding_api_key is not None:
        return str(args.embedding_api_key)
    same_host = args.base_url and args.embedding_base_url
    if same_host and urlsplit(args.base_url).netloc == urlsplit(args.embedding_base_url).netloc:
        return str(args.api_key) if args.api_key else None
    return None


def _count(value: int | None) -> str:
    return "unknown" if value is None else str(value)


def _report(summary: RunSummary, run_dir: Path) -> None:
    """Per-group lines (farel-bench's for FaRel), the headline score, format compliance and totals."""
    scores = summary.scores
    for g in scores.groups:
        score = f"{g.score:.2f}" if g.score is not None else "n/a"
        extra = "".join(f", {label}: {n}" for label, n in (("P", g.partial), ("E", g.errors)) if n)
        extra += f", {'ambiguous' if summary.suite == 'farel' else 'excluded'}: {g.excluded}" if g.excluded else ""
        print(printable(f"{g.group}: {score} (C: {g.correct}, I: {g.incorrect}, M: {g.missing} A: {g.scored}{extra})"))
    headline = f"{scores.score:.2f}" if scores.score is not None else "n/a"
    if summary.suite == "farel":
        length = summary.dataset.params.get("length")
        title = f"FaRel{'-' + str(length) if length else ''}"
    else:
        title = "lineage" if summary.suite == "lineage" else f"{summary.suite} score"
    print(printable(f"{title}: {headline}  ({summary.model}, {summary.mode} mode)"))
    if summary.suite == "lineage":
        sizes = lineage.size_scores(scores.groups)
        print("problem sizes: " + ", ".join(f"{name} {value:.2f}" for name, value in sizes.items()))
    if scores.metrics:
        print("metrics: " + ", ".join(f"{name} {_score(value)}" for name, value in scores.metrics.items()))
    comp, totals = scores.compliance, scores.totals
    first = f"{comp.valid_first_try:.1f}%" if comp.valid_first_try is not None else "n/a"
    after = f"{comp.valid_after_retries:.1f}%" if comp.valid_after_retries is not None else "n/a"
    kinds = ", ".join(f"{k} {n}" for k, n in comp.invalid_by_kind.items()) or "none"
    print(
        f"format: valid first try {first}, after retries {after}, corrective retries {comp.corrective_retries}, "
        f"invalid outputs {comp.invalid_outputs} ({kinds}), missing {scores.missing}, errors {scores.errors}"
    )
    if is_text_mode(summary.mode) and comp.relaxed_recoverable:
        relaxed = relaxed_score(latest_records(run_dir), scores.aggregate)
        print(
            f"relaxed reading: {comp.relaxed_recoverable} missing replies state an answer without the tag "
            f"({comp.relaxed_recoverable_correct} of them correct); not counted"
            + (f", the score with them: {relaxed:.2f}" if relaxed is not None else "")
        )
    if scores.excluded and summary.suite == "farel":
        print(
            f"ambiguous: {len(summary.excluded_case_ids)} quizzes repeat the correct option's name; recorded but not "
            "scored (use --unambiguous to name the classes apart)"
        )
    elif scores.excluded:
        print(f"excluded: {scores.excluded} cases recorded but not scored")
    cost = (
        "unknown"
        if totals.cost_usd is None
        else f"${totals.cost_usd:.6f}{'' if totals.cost_complete else ' (lower bound)'}"
    )
    print(
        f"totals: {totals.requests} requests, {_count(totals.input_tokens)} input / {_count(totals.output_tokens)} "
        f"output tokens, cost {cost}, {summary.wall_s:.1f} s"
    )
    pacing = totals.pacing
    if pacing is not None and (pacing.rate_limited or pacing.waits or pacing.outages):
        stated = ", ".join(f"{value:.0f} {unit}" for value, unit in ((pacing.stated_rpm, "rpm"),
                                                                    (pacing.stated_tpm, "tpm")) if value)  # fmt: skip
        print(
            f"pacing: {pacing.rate_limited} answers 429 (waited out, none an error), {pacing.waits} requests waited "
            f"{pacing.wait_s:.1f} s in all, {pacing.outages} outages ({pacing.outage_s:.1f} s, "
            f"{pacing.sent_into_outage} requests sent into them)"
            + (f"; the provider states {stated}" if stated else "")
        )
    print(f"stored in {run_dir}")


def command_run(args: argparse.Namespace) -> int:
    task, dataset = _suite(args)
    if (args.price_in is None) != (args.price_out is None):
        raise InputError("give both --price-in and --price-out (USD per million tokens), or neither")
    if args.batch and args.cache:
        raise InputError("--batch with --cache: a batch's status changes while the cache would answer the same")
    if args.workers > 1 and args.batch:
        raise InputError("--workers with --batch: a batch run waits on the provider, not on this machine's cores")
    if args.workers > 1 and any(name.startswith("local:") for name in args.model or [DEFAULT_LOCAL_MODEL]):
        raise InputError("--workers with a local: model: its server answers one request at a time; use --workers 1")
    if args.batch and (args.max_cost is not None or args.max_requests is not None):
        raise InputError(
            "--batch sends every sample at once and a batch is priced when it ends, so --max-cost and "
            "--max-requests cannot stop it in time: use --limit"
        )
    pacer = Pacer(rpm=args.rpm, tpm=args.tpm, max_wait_s=args.max_wait, shared=args.workers > 1)
    if args.workers == 1:
        return asyncio.run(_run(args, task, dataset, pacer))
    with WorkerPool(args.workers, _serving(args, task, dataset, pacer)) as pool:
        return asyncio.run(_run(args, task, dataset, pacer, pool=pool))


def _serving(args: argparse.Namespace, task: Task[Any], dataset: Dataset, pacer: Pacer) -> Callable[[str], int]:
    """A forked worker's side of `--workers`: this very command, posing its part of the work file its owner names
    for one of the command's models, quietly (its records go to its owner)."""

    def serve(order: str) -> int:
        name, work = json.loads(order)
        share = _Share(name, Path(work))
        return _reported(args, lambda: asyncio.run(_run(args, task, dataset, pacer, share=share)))

    return serve


@dataclass(frozen=True)
class _Share:
    """What a worker is ordered to pose: `model`'s part of a run's work file."""

    model: str
    work: Path


async def _run(
    args: argparse.Namespace, task: Task[Any], dataset: Dataset, pacer: Pacer, *, pool: WorkerPool | None = None,
    share: _Share | None = None,
) -> int:  # fmt: skip
    """Each `--model` in turn on the identical cases, under one progress display; then the comparison. With `pool`,
    each run is posed by it and this process; `share` is a worker's side of such a run. Every run keeps `pacer`'s
    pace, started afresh for each model (shared with the workers, which never reset it)."""
    models: list[str] = list(dict.fromkeys(args.model or [DEFAULT_LOCAL_MODEL]))
    if share is not None:
        models = [share.model]
    if args.resume not in (None, LATEST) and len(models) > 1:
        raise InputError("--resume RUN_DIR continues one run: give one --model, or --resume alone for each model's")
    short = any(name.startswith("local:") for name in models)  # the embedded model is slow: a short default
    limit = args.limit if args.limit is not None or args.full or not short else SHORT_RUN_CASES
    if limit is not None:
        dataset = dataset.limited(limit)
    current = RunControl()
    stopped: list[str] = []
    loop = asyncio.get_running_loop()

    def stop(reason: str) -> None:
        stopped.append(reason)
        current.stop(reason)

    def first_interrupt() -> None:  # stop sending, let requests in flight finish; a second Ctrl-C stops at once
        stop(INTERRUPTED)
        loop.remove_signal_handler(signal.SIGINT)

    loop.add_signal_handler(signal.SIGINT, first_interrupt)
    loop.add_signal_handler(signal.SIGTERM, lambda: stop(TERMINATED))  # a service manager: as the first Ctrl-C
    loop.add_signal_handler(signal.SIGHUP, lambda: stop(TERMINATED))  # the terminal or ssh session closed: likewise
    outcomes: list[RunOutcome] = []
    code = 0
    try:
        with Progress(quiet=args.quiet or share is not None) as progress:
            for name in models:
                if stopped:
                    break
                current = RunControl(max_cost=args.max_cost, max_requests=args.max_requests, pacer=pacer)  # per run
                if share is not None:
                    current = _share_of_budgets(args, pacer)
                    with stop_when_told(lambda: stop(TERMINATED)):
                        outcome = await _run_model(args, name, task, dataset, current, progress, share=share)
                    share_result_line(outcome.result)
                    return 0
                pacer.reset()
                try:
                    outcome = await _run_model(args, name, task, dataset, current, progress, pool=pool)
                except NothingToResume as exc:
                    if len(models) == 1:
                        raise
                    print(f"{_prog()}: {name}: nothing to resume ({exc})", file=sys.stderr)
                    continue
                outcomes.append(outcome)
                progress.finish()  # its last figures before its report, not after
                reported = _outcome_code(outcome)  # every model's report, whichever failed before
                code = code or reported
    finally:
        for handled in (signal.SIGINT, signal.SIGTERM, signal.SIGHUP):
            loop.remove_signal_handler(handled)
    if not outcomes and not stopped:
        raise NothingToResume("none of the models has an unfinished run with these settings")
    if len(outcomes) > 1:
        _print_comparison([o.run_dir for o in outcomes])
    return code


def _share_of_budgets(args: argparse.Namespace, pacer: Pacer) -> RunControl:
    """A worker's part of the run's budgets; its owner checks the whole, and stops every worker once it is spent."""
    whole = RunControl(max_cost=args.max_cost, max_requests=args.max_requests, pacer=pacer)
    return budget_share(whole, args.workers)


def _print_comparison(run_dirs: Sequence[Path]) -> None:
    """The runs of one command side by side, and with two models their paired comparison."""
    runs = [load_run(run_dir) for run_dir in run_dirs]
    print()
    render_rich(build_rows(runs), Console())
    if len(runs) == 2:
        try:
            comparison, a, b = compare_runs(*runs)
        except EvaluatorError as exc:
            print(f"paired comparison: none ({exc})")
            return
        print(render_comparison(comparison, a, b), end="")


async def _run_model(
    args: argparse.Namespace, name: str, task: Task[Any], dataset: Dataset, control: RunControl, progress: Progress,
    *, pool: WorkerPool | None = None, share: _Share | None = None,
) -> RunOutcome:  # fmt: skip
    prices = UserPrices(args.price_in, args.price_out) if args.price_in is not None else None
    settings = RunSettings(
        base_url=args.base_url,
        mode=args.mode,
        retries=args.retries,
        temperature=args.temperature,
        seed=args.model_seed,
        max_tokens=args.max_tokens,
        system_prompt=args.system_prompt,
        repeats=args.repeats,
        tool_choice=args.tool_choice,
        concurrency=args.concurrency,
        price_in=args.price_in,
        price_out=args.price_out,
        chat_format=args.chat_format,
        batch=args.batch,
        update_prices=args.update_prices,
        request_timeout=args.request_timeout,
        max_transport_retries=args.max_transport_retries,
    )

    def status(text: str) -> None:
        if not args.quiet:
            print(text, file=sys.stderr)

    cache_path = args.results_dir / CACHE_FILE if args.cache else None
    async with open_model(
        name, settings, api_key=args.api_key, cache_path=cache_path, pull=args.pull, console=Console(stderr=True),
        on_status=status, task=task,
    ) as prepared, judged(
        task, args.judge_model, prepared, cache_path=cache_path, request_timeout=args.request_timeout, prices=prices,
        temperature=args.temperature,
    ) as task:  # fmt: skip
        workers = WorkerProcesses(pool, lambda work: json.dumps([name, str(work)])) if pool is not None else None
        return await run(
            task,
            dataset,
            prepared,
            settings,
            results_dir=args.results_dir,
            resume=True if args.resume == LATEST else (args.resume or False),
            retry_errors=args.retry_errors,
            control=control,
            on_record=progress.advance if share is None else write_record_line,
            on_start=lambda total, _: progress.start(total, prepared.resolved.name, control.traffic),
            batch=BatchOptions(poll_interval_s=args.batch_poll) if args.batch else None,
            workers=WorkerShare(share.work) if share is not None else workers,
            judge_model=judge_name(task),
        )


def _outcome_code(outcome: RunOutcome) -> int:
    """Report one model's run; its exit code (0, or why it stopped)."""
    final, run_dir = outcome.summary, outcome.run_dir
    if final.status == "dnf":
        where = f" at {final.settings.base_url}" if final.settings.base_url else ""
        print(printable(f"{_prog()}: error: model {final.model}{where} could not be reached: {final.reason} "
                        f"(run stored as DNF in {run_dir})"), file=sys.stderr)  # fmt: skip
        return EXIT_DNF
    _report(final, run_dir)
    if final.reason is not None and final.reason.startswith(CREDENTIALS_REFUSED):
        print(printable(f"{_prog()}: error: {final.reason} (run stored as partial in {run_dir})"), file=sys.stderr)
        return EXIT_DNF
    if final.reason is not None and final.reason.startswith(WAITED_TOO_LONG):
        print(f"{_prog()}: {final.reason} (run stored as partial in {run_dir})", file=sys.stderr)
        return EXIT_TRY_LATER
    if final.reason in (INTERRUPTED, TERMINATED):
        kept = f"finished samples are kept in {run_dir} (--resume continues)"
        print(f"{_prog()}: {final.reason}; {kept}", file=sys.stderr)
        return EXIT_INTERRUPTED if final.reason == INTERRUPTED else EXIT_TERMINATED
    return 0


LATEST = "latest"


def command_models(args: argparse.Namespace) -> int:
    """List the models a provider has here: Ollama's pulled models, or the local GGUF models installed."""
    if args.provider == "ollama":
        from farel_eval.ollama_models import list_ollama_models, ollama_host

        host = ollama_host(args.base_url)
        models = list_ollama_models(host)
        for m in models:
            size = f"{m.size_bytes / 1e9:.1f} GB" if m.size_bytes else "?"
            tools = "tools" if m.capabilities and "tools" in m.capabilities else "no tools"
            if m.capabilities is None:
                tools = "capabilities unknown"
            print(printable(f"ollama:{m.name}\t{size}\t{m.parameters or '?'}\t{m.quantization or '?'}\t{tools}"))
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


def command_generate(args: argparse.Namespace) -> int:
    """The original generator's command line, writing the same bytes: `farel_bench.py`'s or `lineage_bench.py`'s."""
    if args.suite == "farel":
        import farel_bench

        return farel_bench.main(args.arguments)
    return lineage.main(args.arguments, prog=f"{_prog()} generate lineage")


def command_import_lineage(args: argparse.Namespace) -> int:
    """Each (model, problem size, reasoning effort) of each result file as an imported run; importing a file again
    stores nothing new. A file that cannot be imported is one line and makes the exit 2; the others are imported."""
    code = 0
    for path in result_files(args.paths):
        try:
            asyncio.run(_import_results(path, args.results_dir))
        except EvaluatorError as exc:
            print(f"{_prog()}: error: {printable(_one_line(exc))}", file=sys.stderr)
            code = max(code, exc.exit_code)
    return code


async def _import_results(path: Path, results_dir: Path) -> None:
    """One result file's runs, each stored unless the same content is already (a line each, as it goes)."""
    async for done in import_result_file(path, results_dir):
        head = f"{path}: {done.run.model}, lineage-{done.run.problem_size}"
        if done.already:
            print(printable(f"{head}: already imported in {done.run_dir}"))
            continue
        scores = done.summary.scores
        strict, relaxed = scores.score, relaxed_score(latest_records(done.run_dir), scores.aggregate)
        print(printable(f"{head}: {scores.samples} responses, score {_score(strict)}, relaxed {_score(relaxed)} "
                        f"(missing {scores.missing}); stored in {done.run_dir}"))  # fmt: skip


def _score(value: float | None) -> str:
    return "n/a" if value is None else f"{value:.2f}"


def command_import(args: argparse.Namespace) -> int:
    """Import each log as a run, whatever the others hold; the exit is 2 when a log cannot be imported (bad input),
    else 1 when one's counts differ from its summary lines."""
    dataset = read_dataset(args.quizzes) if args.quizzes else generated_dataset(3, 50, 42, shuffle=True)
    code = 0
    for path in log_files(args.paths):
        try:
            code = max(code, 0 if _import_one(path, dataset, args.results_dir) else 1)
        except EvaluatorError as exc:
            print(f"{_prog()}: error: {printable(_one_line(exc))}", file=sys.stderr)
            code = max(code, exc.exit_code)
    return code


def _import_one(path: Path, dataset: Dataset, results_dir: Path) -> bool:
    done = asyncio.run(import_log_file(path, dataset, results_dir))
    if done.already:
        print(printable(f"{path}: already imported in {done.run_dir}"))
        return True
    run_dir, source, farel = done.run_dir, done.summary.source_log, done.summary.scores.score
    assert source is not None
    head = f"{path}: {source.replies} replies, FaRel {farel:.2f}" if farel is not None else f"{path}:"
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


def _prog() -> str:
    """`main.py` when run as `python main.py`, the console script's name otherwise."""
    name = Path(sys.argv[0]).name if sys.argv and sys.argv[0] else ""
    return name if name in ("main.py", PROG) else PROG


def main(argv: Sequence[str] | None = None) -> int:
    gc.freeze()  # what the imports made lives as long as the process: collections skip it, and so does the exit
    args = build_parser().parse_args(argv)
    logging.getLogger("genai-prices").addHandler(logging.NullHandler())  # its update failures: our one line says it
    logging.getLogger("genai-prices").propagate = False
    commands: dict[str, Callable[[argparse.Namespace], int]] = {
        "run": command_run, "generate": command_generate, "import-farel": command_import, "models": command_models,
        "import": command_import if getattr(args, "source", None) == "farel" else command_import_lineage,
    }  # fmt: skip
    return _reported(args, lambda: commands[args.command](args))


_FLAG_OF = {"seed": "--model-seed", "max_wait_s": "--max-wait", "prices": "--price-in/--price-out"}
"""Library parameters set by a flag of another name (the parser's `--seed` is the generator's)."""


def _flag(parameter: str) -> str:
    """The flag that sets a library parameter, from the parser's actions (`concurrency` -> `--concurrency`); the
    parameter itself when no flag sets it."""
    if parameter in _FLAG_OF:
        return _FLAG_OF[parameter]
    flags: dict[str, str] = {}
    parsers = [build_parser()]
    while parsers:
        for action in parsers.pop()._actions:
            if isinstance(action, argparse._SubParsersAction):
                parsers.extend(action.choices.values())
            elif action.option_strings:
                flags.setdefault(action.dest, max(action.option_strings, key=len))
    return flags.get(parameter, parameter)


def _one_line(exc: EvaluatorError) -> str:
    """An error as the command line says it: the flag of the parameter it is about, then what is wrong."""
    parameter = getattr(exc, "parameter", None)
    return f"{_flag(parameter)}: {exc.message}" if parameter else str(exc)


def _reported(args: argparse.Namespace, command: Callable[[], int]) -> int:
    """A command's exit code, its expected failures said in one line (no key or URL credentials in it)."""
    urls = [getattr(args, name, None) for name in ("base_url", "embedding_base_url", "update_prices")]
    keys = [getattr(args, "api_key", None), getattr(args, "embedding_api_key", None)]
    try:
        return command()
    except EvaluatorError as exc:
        redact = Redactor.for_run(keys=keys, urls=urls)
        print(f"{_prog()}: error: {printable(redact(_one_line(exc)))}", file=sys.stderr)
        return exc.exit_code
    except KeyboardInterrupt:  # a second Ctrl-C while shutting down: records written so far are kept
        print(f"{_prog()}: interrupted; finished samples are kept (--resume continues)", file=sys.stderr)
        return EXIT_INTERRUPTED
    except BrokenPipeError:  # the reader of the output left (`| head`, a worker's owner that died): say no more
        os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
        return EXIT_BROKEN_PIPE


if __name__ == "__main__":
    sys.exit(main())
