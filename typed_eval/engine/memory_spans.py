"""The spans of each sample kept in memory (see `typed_eval.engine.recording`): a span processor that keeps a finished
span in the list of the sample being asked in the context it ended in (a context variable: samples asked together
keep their own spans), as pydantic_evals' `context_subtree` keeps a task's.

Imported only when a task's scorer reads spans. Without a traced run, the provider is this recording's own and
pydantic-ai's instrumentation records message content (its default, as pydantic_evals' users have it); in a traced
run, the run's provider and content settings (`--trace-content`) are used, so each request's span is made once.
"""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from contextvars import ContextVar
from typing import Any

from opentelemetry.context import Context
from opentelemetry.metrics import NoOpMeterProvider
from opentelemetry.sdk.trace import ReadableSpan, Span, SpanProcessor, TracerProvider
from pydantic_ai.models import Model
from pydantic_ai.models.instrumented import InstrumentationSettings, InstrumentedModel

from typed_eval.engine.recording import SpanRecording

__all__ = ["MemorySpans"]


class _Kept:
    """A sample's spans, each once (a traced run's provider may hold the processor of each poser of the run)."""

    def __init__(self) -> None:
        self.spans: list[ReadableSpan] = []
        self._seen: set[int] = set()

    def add(self, span: ReadableSpan) -> None:
        found = span.context.span_id if span.context is not None else id(span)
        if found not in self._seen:
            self._seen.add(found)
            self.spans.append(span)


_SAMPLE: ContextVar[_Kept | None] = ContextVar("typed_eval_sample_spans", default=None)


class _Keep(SpanProcessor):
    """Keeps each finished span with its sample's (none outside a sample)."""

    def on_start(self, span: Span, parent_context: Context | None = None) -> None:
        return None

    def on_end(self, span: ReadableSpan) -> None:
        kept = _SAMPLE.get()
        if kept is not None:
            kept.add(span)

    def shutdown(self) -> None:
        return None

    def force_flush(self, timeout_millis: int = 30000) -> bool:
        return True


class MemorySpans(SpanRecording):
    """A poser's recording: its spans made by `provider` (a traced run's, whose model is already instrumented), or
    by a provider of its own that keeps them only in memory."""

    def __init__(self, provider: Any | None) -> None:
        self._provider: TracerProvider = TracerProvider(shutdown_on_exit=False) if provider is None else provider
        self._provider.add_span_processor(_Keep())
        self._settings = InstrumentationSettings(tracer_provider=self._provider, meter_provider=NoOpMeterProvider())

    def instrumented(self, model: Model) -> Model:
        if isinstance(model, InstrumentedModel):  # the traced run's, or a poser's model already recorded
            return model
        return InstrumentedModel(model, self._settings)

    @contextmanager
    def sample(self) -> Iterator[Sequence[Any] | None]:
        kept = _Kept()
        token = _SAMPLE.set(kept)
        try:
            yield kept.spans
        finally:
            _SAMPLE.reset(token)
