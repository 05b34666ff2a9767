"""Which stored run a resume (or a retry of errors) continues: one of the same model, task, dataset and settings that
decide its answers; the settings of how a segment is posed may change from one resume to the next."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from typed_eval.contracts import RunSettings, RunSummary
from typed_eval.core.datasets import Dataset
from typed_eval.core.errors import InputError
from typed_eval.core.tasks import Task
from typed_eval.store.storage import SUMMARY_FILE, StoredRun, load_runs, model_slug

__all__ = ["SAME_RUN_SETTINGS", "THIS_SEGMENT", "NothingToResume", "differences", "run_to_continue"]

SAME_RUN_SETTINGS = (
    "model", "mode", "retries", "temperature", "seed", "max_tokens", "system_prompt", "repeats", "judge_model",
    "batch",
)  # fmt: skip
"""Settings that must match for a resume to continue a run (the task, the dataset's MD5 and limit too)."""
THIS_SEGMENT = (
    "concurrency", "workers", "rpm", "tpm", "max_wait_s", "request_timeout", "max_transport_retries",
)  # fmt: skip
"""Settings of how a segment of a run is posed, which each resume gives anew."""


class NothingToResume(InputError):
    """A resume (or a retry of errors) found no stored run of these settings to continue."""


def differences(summary: RunSummary, settings: RunSettings, task: Task[Any], dataset: Dataset) -> list[str]:
    mine = settings.model_dump()
    theirs = summary.settings.model_dump()
    changed = [f"{k} {theirs[k]!r} != {mine[k]!r}" for k in SAME_RUN_SETTINGS if theirs[k] != mine[k]]
    if summary.task != task.name:
        changed.append(f"task {summary.task!r} != {task.name!r}")
    if (summary.dataset.md5, summary.dataset.limit) != (dataset.info.md5, dataset.info.limit):
        changed.append("the dataset (its MD5 or limit) differs")
    theirs_params, mine_params = summary.dataset.suite_params, dataset.info.suite_params
    if theirs_params is not None and mine_params is not None and theirs_params != mine_params:
        keys = dict.fromkeys([*theirs_params, *mine_params])
        changed += [
            f"suite parameter {k} {theirs_params.get(k)!r} != {mine_params.get(k)!r}"
            for k in keys
            if theirs_params.get(k) != mine_params.get(k)
        ]
    return changed


def run_to_continue(
    resume: bool | str | Path,
    retry_errors: bool,
    results_dir: Path,
    settings: RunSettings,
    task: Task[Any],
    dataset: Dataset,
) -> StoredRun | None:
    """The stored run a resume (or a retry of errors) continues, checked against this call's settings."""
    if resume is False and not retry_errors:
        return None
    if not isinstance(resume, bool):
        (found,) = load_runs(Path(resume) / SUMMARY_FILE)
        if changed := differences(found.summary, settings, task, dataset):
            raise InputError(f"cannot continue {resume} with other settings: {'; '.join(changed)}", parameter="resume")
        return found
    folder = results_dir / model_slug(settings.model)
    runs = load_runs(folder) if folder.exists() else []
    wanted = {"finished", "partial", "dnf"} if retry_errors else {"partial", "dnf"}
    matching = [r for r in runs if r.summary.status in wanted and not differences(r.summary, settings, task, dataset)]
    if not matching:
        raise NothingToResume(
            f"no {'stored' if retry_errors else 'unfinished'} run of {settings.model} in {settings.mode} mode "
            f"with these settings and dataset under {folder}"
        )
    return matching[-1]
