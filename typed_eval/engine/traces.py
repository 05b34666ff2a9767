"""A run's OpenTelemetry traces, when asked for (`RunConfig.trace`): spans named as pydantic_evals names its own.

`evaluate {name}` is the run, `case: {case_name}` each sample, `execute {task}` the asking of it (its agent runs, a
session's requests); pydantic-ai's instrumentation makes the model calls' spans (`chat {model}`, with the `gen_ai.*`
attributes: model, tokens, cost) under it. A run that does not trace gets `NO_TRACES`, which does nothing and imports
no OpenTelemetry SDK; one that does gets an exporter of its own (`typed_eval.engine.otlp`), never a process-wide
provider, so a worker process makes its own after the fork and parents its spans to its owner's run span
(`Traces.parent`, a W3C `traceparent`).
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping
from contextlib import contextmanager
from typing import Any

from pydantic_ai.models import Model

from typed_eval.contracts import Case, RunSettings, SampleRecord
from typed_eval.core.errors import InputError
from typed_eval.core.run_config import RunConfig

__all__ = ["NO_TRACES", "CaseSpan", "Traces", "case_attributes", "case_name", "run_traces"]


class CaseSpan:
    """A sample's span, told the sample's record once it is made (a span that is not sent ignores it)."""

    def record(self, record: SampleRecord) -> None:
        """Set the record's case id, status, score, corrective retries and invalid kinds on the span."""


class Traces:
    """How a run traces: this base traces nothing (`NO_TRACES`); `typed_eval.engine.otlp.OtlpTraces` sends spans."""

    @property
    def parent(self) -> str | None:
        """The run span's W3C `traceparent`, for the worker processes posing parts of the run (None: no span)."""
        return None

    @property
    def provider(self) -> Any | None:
        """The run's OpenTelemetry tracer provider (None: no spans are made)."""
        return None

    def instrumented(self, model: Model) -> Model:
        """`model`, its requests traced (here: as it is)."""
        return model

    @contextmanager
    def case(self, task_name: str, case: Case, repeat: int, repeats: int) -> Iterator[CaseSpan]:
        """A sample's span, around its asking and its grading."""
        yield CaseSpan()

    @contextmanager
    def execute(self, task_name: str) -> Iterator[None]:
        """The span of a sample's asking (not its grading), under its case span."""
        yield

    def finish(self, status: str, score: float | None, samples: int) -> None:
        """The run's end, set on its span."""


NO_TRACES = Traces()


def case_name(case: Case, repeat: int, repeats: int) -> str:
    """A sample's name as pydantic_evals names a case's run when it repeats cases: `id [k/n]`, else the case id."""
    return f"{case.id} [{repeat + 1}/{repeats}]" if repeats > 1 else case.id


def case_attributes(record: SampleRecord) -> Mapping[str, Any]:
    """What a sample's span says of its record: the case id, repeat, status, score, the corrective retries, the
    invalid kinds of its attempts in order, and its tokens and cost."""
    attributes: dict[str, Any] = {
        "typed_eval.case_id": record.case_id,
        "typed_eval.repeat": record.repeat,
        "typed_eval.status": record.status,
        "typed_eval.corrective_retries": record.corrective_retries,
        "typed_eval.invalid_kinds": [a.invalid_kind for a in record.attempts if a.invalid_kind is not None],
        "typed_eval.attempts": len(record.attempts),
    }
    optional = {
        "typed_eval.score": record.score,
        "typed_eval.group": record.group,
        "typed_eval.cost_usd": record.cost.usd,
        "gen_ai.usage.input_tokens": record.usage.input_tokens,
        "gen_ai.usage.output_tokens": record.usage.output_tokens,
    }
    attributes.update({key: value for key, value in optional.items() if value is not None})
    return attributes


@contextmanager
def run_traces(
    config: RunConfig,
    name: str,
    settings: RunSettings,
    model: Model,
    *,
    dataset_name: str,
    cases: int | None = None,
    parent: str | None = None,
) -> Iterator[Traces]:
    """The traces of a run of the task `name` with `settings` as `config` asks: `NO_TRACES`, or spans sent to the
    OTLP endpoint that the standard `OTEL_EXPORTER_OTLP_*` variables name, under a run span `evaluate {name}` (or,
    given `parent`, a worker's part: under its owner's run span); every text of a span redacted of the secrets the
    run knows (`model`'s key, the URLs' credentials, the exporter's headers). An endpoint that is down or slow drops
    the spans with one warning, never slowing the run by more than a bounded wait at its end."""
    if not config.trace:
        yield NO_TRACES
        return
    try:
        from typed_eval.engine.otlp import traced_run
    except ImportError as exc:
        raise InputError(
            f"traces need the otel extra (pip install 'typed-eval[otel]'): {exc}", parameter="trace"
        ) from None
    content = config.trace_content
    with traced_run(
        name, settings, model, content=content, dataset_name=dataset_name, cases=cases, parent=parent
    ) as traces:
        yield traces
