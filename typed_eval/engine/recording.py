"""Each sample's OpenTelemetry spans recorded in memory, for a scorer that reads them (`Task.spans`: a
pydantic_evals dataset's span-based evaluators): pydantic-ai's instrumentation of every request the sample sends,
its agent runs' and its direct first request's alike.

A task that does not ask for spans gets `NO_RECORDING`, which does nothing and imports no OpenTelemetry SDK. One
that does gets a recording of its poser's own (`typed_eval.engine.memory_spans`, made in the process that poses the
sample, after a worker's fork): a tracer provider of its own, never the process-wide one, or the traced run's
provider when the run sends traces, so its spans are made once.
"""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from typing import Any

from pydantic_ai.models import Model

from typed_eval.core.tasks import Task
from typed_eval.engine.traces import Traces

__all__ = ["NO_RECORDING", "SpanRecording", "span_recording"]


class SpanRecording:
    """How a poser records its samples' spans: this base records none (`NO_RECORDING`)."""

    def instrumented(self, model: Model) -> Model:
        """`model`, its requests recorded (here: as it is)."""
        return model

    @contextmanager
    def sample(self) -> Iterator[Sequence[Any] | None]:
        """The spans finished while a sample is asked, filled in when the context ends (None: not recorded)."""
        yield None


NO_RECORDING = SpanRecording()


def span_recording(task: Task[Any], traces: Traces) -> SpanRecording:
    """The recording a poser of `task` makes: `NO_RECORDING` unless its scorer reads spans (`Task.spans`) and the
    OpenTelemetry SDK is installed (without it the scorer is given no spans, as pydantic_evals' evaluators are
    given no span tree)."""
    if not task.spans:
        return NO_RECORDING
    try:
        from typed_eval.engine.memory_spans import MemorySpans
    except ImportError:
        return NO_RECORDING
    return MemorySpans(traces.provider)
