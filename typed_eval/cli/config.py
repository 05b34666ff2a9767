"""The `run` command's arguments made, once, into what the library takes: the `RunConfig` every run of the command
is given, and the few things of the command itself (where runs are stored, the key, resume...). Nothing past this
module reads the argument namespace."""

from __future__ import annotations

import argparse
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from typed_eval.core.errors import InputError
from typed_eval.core.run_config import BatchOptions, RunConfig, config_with
from typed_eval.core.suite import Suite
from typed_eval.providers.local_server import DEFAULT_LOCAL_MODEL

__all__ = ["CACHE_FILE", "LATEST", "RunCommand", "run_command"]

CACHE_FILE = Path(".cache") / "responses.sqlite"
LATEST = "latest"


@dataclass(frozen=True)
class RunCommand:
    """What `run` was asked: the config of each of its runs (the mode set per run), and how the command runs them."""

    config: RunConfig
    models: list[str]
    """Each `--model` once, in order (default: the embedded model)."""
    results_dir: Path
    api_key: str | None
    """Never stored."""
    cache_path: Path | None
    """The response cache, with `--cache`."""
    pull: bool
    quiet: bool
    grace_s: float
    """`--grace`: the seconds a stop leaves requests in flight."""
    resume: bool | Path
    """True: each model's latest unfinished run; a path: that run; False: a new run."""
    retry_errors: bool
    judge_model: str | None
    workers: int
    limit: int | None
    """`--limit`; with `--full`, None."""
    full: bool


def run_command(args: argparse.Namespace, suite: Suite[Any]) -> RunCommand:
    """`args` of `run`, checked together (a flag that another rules out is a one-line `InputError`); the sampling
    settings not given are the `suite`'s."""
    if (args.price_in is None) != (args.price_out is None):
        raise InputError("give both --price-in and --price-out (USD per million tokens), or neither")
    if args.batch and args.cache:
        raise InputError("--batch with --cache: a batch's status changes while the cache would answer the same")
    if args.workers > 1 and args.batch:
        raise InputError("--workers with --batch: a batch run waits on the provider, not on this machine's cores")
    models: list[str] = list(dict.fromkeys(args.model or [DEFAULT_LOCAL_MODEL]))
    if args.workers > 1 and any(name.startswith("local:") for name in models):
        raise InputError("--workers with a local: model: its server answers one request at a time; use --workers 1")
    if args.batch and (args.max_cost is not None or args.max_requests is not None):
        raise InputError(
            "--batch sends every sample at once and a batch is priced when it ends, so --max-cost and "
            "--max-requests cannot stop it in time: use --limit"
        )
    config = config_with(
        base_url=args.base_url,
        retries=args.retries,
        temperature=args.temperature if args.temperature is not None else suite.temperature,
        seed=args.model_seed if args.model_seed is not None else suite.seed,
        max_tokens=args.max_tokens,
        system_prompt=args.system_prompt,
        repeats=args.repeats,
        tool_choice=args.tool_choice,
        concurrency=args.concurrency,
        price_in=args.price_in,
        price_out=args.price_out,
        chat_format=args.chat_format,
        batch=args.batch,
        batch_options=BatchOptions(poll_interval_s=args.batch_poll) if args.batch else None,
        update_prices=args.update_prices,
        rpm=args.rpm,
        tpm=args.tpm,
        max_wait_s=args.max_wait,
        request_timeout=args.request_timeout,
        max_transport_retries=args.max_transport_retries,
        max_cost=args.max_cost,
        max_requests=args.max_requests,
        trace=args.trace or args.trace_content,
        trace_content=args.trace_content,
    )
    return RunCommand(
        config=config,
        models=models,
        results_dir=args.results_dir,
        api_key=args.api_key,
        cache_path=args.results_dir / CACHE_FILE if args.cache else None,
        pull=args.pull,
        quiet=args.quiet,
        grace_s=args.grace,
        resume=True if args.resume == LATEST else Path(args.resume) if args.resume else False,
        retry_errors=args.retry_errors,
        judge_model=args.judge_model,
        workers=args.workers,
        limit=args.limit,
        full=args.full,
    )
