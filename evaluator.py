"""Evaluate models on typed tasks: a prompt, a typed output (any pydantic model) and a scorer.

The importable core, on one page: no argument parsing, no printing.

    import asyncio, evaluator
    task = evaluator.Task(name="graph", output_type=Graph, score=grade)     # Graph: any pydantic model
    cases = [evaluator.Case(id="s1", prompt="...", expected=..., group="...")]
    result = asyncio.run(evaluator.evaluate(task, cases, "openai:gpt-4o-mini", mode="tool", retries=5))
    # or: config = evaluator.RunConfig(mode="tool", retries=5); evaluator.evaluate(task, cases, model, config)
    result.records[0].output, result.records[0].score, result.scores.score
    # how this process drives and watches the run (never stored): a RunControl after the config
    evaluator.evaluate(task, cases, model, config, evaluator.RunControl(on_record=print, pacer=evaluator.Pacer(rpm=60)))

`evaluate()` poses and scores; `run()` does the same and stores the run (resumable) under a results folder, its
`summary.json` holding the settings the run resolved from the `RunConfig` (what the run is), never the `RunControl`
(how this process drives it: stop state, callbacks, pacer, worker processes). `read_records(run_dir)` and
`load_runs(folder)` read stored runs. `Suite(name, params, build)` makes a benchmark a plug-in (entry-point group
`typed_eval.suites`), run with `main.py run --suite NAME -S key=value`. `analyse(records)` gives a run's interval
(and its chance baselines, given a suite's `baseline`), `compare(a, b)` pairs two runs case by case:

    a, b = evaluator.analyse(result_a.records), evaluator.analyse(result_b.records)
    a.score_ci95(), evaluator.compare(a, b).p_value

`pass_hat_k(records)` gives pass^1 .. pass^K of a run that posed its cases K times (`repeats=K`): the chance that k
trials of a case all succeed, averaged over the cases, with 95% intervals, overall and per group.

`converse(conversation, environment, user, policy=..., scenario=...)` plays a conversation between the agent under
test (a task session's `Conversation`) and a `SimulatedUser` on any model, on an `Environment` both act on (its tools
per requestor, each call a `ToolResult`), until the user stops or its limits say so: the transcript a final-state
scorer reads (see docs/library.md#agents-that-talk-to-a-simulated-user).

Everything else stays importable from its module (`typed_eval.core`, `typed_eval.engine`, `typed_eval.providers`,
`typed_eval.suites.multiple_choice`...; see docs/library.md).
"""

from __future__ import annotations

from typed_eval.contracts import Case, RunSummary, SampleRecord
from typed_eval.core.dialogue import Environment, ToolResult, converse
from typed_eval.core.errors import EvaluatorError, InputError, TaskError
from typed_eval.core.run_config import RunConfig
from typed_eval.core.simulated_user import SimulatedUser
from typed_eval.core.suite import Suite, SuiteContext
from typed_eval.core.tasks import Score, Task
from typed_eval.engine.control import RunControl
from typed_eval.engine.evaluation import EvaluationResult, evaluate
from typed_eval.engine.runs import RunOutcome, run
from typed_eval.providers.flow import Pacer
from typed_eval.reports.analysis import analyse, compare
from typed_eval.reports.pass_k import pass_hat_k
from typed_eval.store.storage import load_runs, read_records

__all__ = [
    "Case",
    "Environment",
    "EvaluationResult",
    "EvaluatorError",
    "InputError",
    "Pacer",
    "RunConfig",
    "RunControl",
    "RunOutcome",
    "RunSummary",
    "SampleRecord",
    "Score",
    "SimulatedUser",
    "Suite",
    "SuiteContext",
    "Task",
    "TaskError",
    "ToolResult",
    "analyse",
    "compare",
    "converse",
    "evaluate",
    "load_runs",
    "pass_hat_k",
    "read_records",
    "run",
]
