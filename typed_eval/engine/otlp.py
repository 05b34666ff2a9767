"""A traced run's spans, sent over OTLP/HTTP (protobuf) to the endpoint the standard `OTEL_EXPORTER_OTLP_*` variables
name: a tracer provider of the run's own (never the process-wide one), pydantic-ai's instrumentation given it.

Imported only when a run traces (the `otel` extra). The spans leave through a batch processor's thread, so a slow
endpoint never holds a request; one that fails drops every later span with one warning (the exporter's own retry
messages are kept quiet until it is done), and the run waits for what is left at most `FLUSH_WAIT_S` at its end.
Every text of a span (attributes, events, status) passes through the run's `Redactor` before it leaves; without
`--trace-content`, the texts of errors (a status's description, an exception's message and stack) are withheld too,
since a server's error may quote the request: its prompt, system prompt and the case's variables.
"""

from __future__ import annotations

import json
import logging
import os
import threading
from collections.abc import Iterator, Mapping, Sequence
from contextlib import contextmanager
from typing import Any
from urllib.parse import unquote, urlsplit

from opentelemetry import context as otel_context
from opentelemetry import trace
from opentelemetry.exporter.otlp.proto.http.trace_exporter import OTLPSpanExporter
from opentelemetry.metrics import NoOpMeterProvider
from opentelemetry.sdk.resources import SERVICE_NAME, OTELResourceDetector, Resource
from opentelemetry.sdk.trace import Event, ReadableSpan, TracerProvider
from opentelemetry.sdk.trace.export import BatchSpanProcessor, SpanExporter, SpanExportResult
from opentelemetry.trace import Span, Status, StatusCode
from opentelemetry.trace.propagation.tracecontext import TraceContextTextMapPropagator
from pydantic_ai.models import Model
from pydantic_ai.models.instrumented import InstrumentationSettings, InstrumentedModel

from typed_eval.contracts import Case, RunSettings, SampleRecord
from typed_eval.core.errors import InputError
from typed_eval.core.secrets import Redactor
from typed_eval.engine.traces import CaseSpan, Traces, case_attributes, case_name

__all__ = ["FLUSH_WAIT_S", "OtlpTraces", "run_resource", "traced_run"]

FLUSH_WAIT_S = 5.0
"""How long the end of a run waits for the spans still queued to be taken; then they are dropped."""
SCOPE = "typed_eval"
_QUIETED = ("opentelemetry.exporter.otlp.proto.http.trace_exporter", "opentelemetry.sdk._shared_internal")
"""The exporter's and the batch processor's loggers: a retry or a failure of theirs is said once, by `_Exporter`."""
WITHHELD = "(withheld: the run was traced without --trace-content)"
"""An error's text in a span of a run traced without content (the exception's type is kept)."""
_EXCEPTION_KEPT = ("exception.type", "exception.escaped")
"""What an exception event keeps without content: its message and stack may quote the request."""
_log = logging.getLogger("typed_eval.traces")


class _Quiet(logging.Filter):
    """Drops every message of the loggers it is added to (`_QUIETED`, while a run's exporter works)."""

    def filter(self, record: logging.LogRecord) -> bool:
        return False


class _Exporter(SpanExporter):
    """The OTLP exporter, each span redacted first (and without `content`, its errors' texts withheld); after its
    first failure every span is dropped, with one warning (`quiet`: none, a worker process's, whose owner says it for
    the run)."""

    def __init__(self, exporter: SpanExporter, where: str, redact: Redactor, *, content: bool, quiet: bool) -> None:
        self._exporter, self._where, self._redact, self._quiet = exporter, where, redact, quiet
        self._content = content
        self._warned = threading.Event()
        self._lock, self._closed = threading.Lock(), False

    def warn_once(self, why: str) -> None:
        if not self._warned.is_set():
            self._warned.set()
            if not self._quiet:
                _log.warning("typed-eval: traces: the OTLP endpoint %s %s; spans are dropped", self._where, why)

    @property
    def failed(self) -> bool:
        """An export failed: every span is dropped from now on, so nothing is left worth waiting for."""
        return self._warned.is_set()

    def export(self, spans: Sequence[ReadableSpan]) -> SpanExportResult:
        if self._warned.is_set():
            return SpanExportResult.FAILURE
        try:
            result = self._exporter.export([self._redacted(span) for span in spans])
        except Exception as exc:  # the exporter's own fault: the run goes on without traces
            result, why = SpanExportResult.FAILURE, f"failed ({type(exc).__name__})"
        else:
            why = "did not take the spans (down, refusing or too slow)"
        if result is not SpanExportResult.SUCCESS:
            self.warn_once(why)
        return result

    def _redacted(self, span: ReadableSpan) -> ReadableSpan:
        if self._content and not self._redact.active:
            return span
        status = span.status
        if status.description:
            status = Status(status.status_code, self._redact(status.description) if self._content else WITHHELD)
        return ReadableSpan(
            name=self._redact(span.name),
            context=span.context,
            parent=span.parent,
            resource=span.resource,
            attributes=self._attributes(span.attributes),
            events=[Event(e.name, self._attributes(self._event_attributes(e)), e.timestamp) for e in span.events],
            links=span.links,
            kind=span.kind,
            status=status,
            start_time=span.start_time,
            end_time=span.end_time,
            instrumentation_scope=span.instrumentation_scope,
        )

    def _event_attributes(self, event: Event) -> Mapping[str, Any] | None:
        if self._content or event.name != "exception" or event.attributes is None:
            return event.attributes
        return {key: value for key, value in event.attributes.items() if key in _EXCEPTION_KEPT}

    def _attributes(self, attributes: Mapping[str, Any] | None) -> dict[str, Any]:
        def redacted(value: Any) -> Any:
            if isinstance(value, str):
                return self._redact(value)
            if isinstance(value, tuple | list):
                return [self._redact(item) if isinstance(item, str) else item for item in value]
            return value

        return {key: redacted(value) for key, value in (attributes or {}).items()}

    def abort(self) -> None:
        """Drop every span from now on and end the exporter's retries (its backoff waits on its shutdown)."""
        self._warned.set()
        self.shutdown()

    def shutdown(self) -> None:
        with self._lock:
            closed, self._closed = self._closed, True
        if not closed:
            self._exporter.shutdown()

    def force_flush(self, timeout_millis: int = 30000) -> bool:
        return self._exporter.force_flush(timeout_millis)


class _CaseSpan(CaseSpan):
    def __init__(self, span: Span, content: bool) -> None:
        self._span, self._content = span, content

    def record(self, record: SampleRecord) -> None:
        self._span.set_attributes(dict(case_attributes(record)))
        if self._content and record.output is not None:
            self._span.set_attribute("output", json.dumps(record.output, ensure_ascii=False))
        if record.status == "error":
            self._span.set_status(Status(StatusCode.ERROR, record.error))


class OtlpTraces(Traces):
    """Spans made with the run's own tracer provider; `run_span` is the run's (None in a worker process)."""

    def __init__(self, provider: TracerProvider, content: bool, run_span: Span | None) -> None:
        self._provider, self._tracer = provider, provider.get_tracer(SCOPE)
        self._content, self._run_span = content, run_span
        self._instrumentation = InstrumentationSettings(
            tracer_provider=provider,
            meter_provider=NoOpMeterProvider(),
            include_content=content,
            include_binary_content=content,
        )

    @property
    def parent(self) -> str | None:
        if self._run_span is None:
            return None
        carrier: dict[str, str] = {}
        TraceContextTextMapPropagator().inject(carrier, trace.set_span_in_context(self._run_span))
        return carrier.get("traceparent")

    @property
    def provider(self) -> TracerProvider:
        return self._provider

    def instrumented(self, model: Model) -> Model:
        return InstrumentedModel(model, self._instrumentation)

    @contextmanager
    def case(self, task_name: str, case: Case, repeat: int, repeats: int) -> Iterator[CaseSpan]:
        name = case_name(case, repeat, repeats)
        attributes: dict[str, Any] = {"task_name": task_name, "case_name": name, **_logfire("case: {case_name}", name)}
        attributes |= {"typed_eval.case_id": case.id, "typed_eval.repeat": repeat}
        if self._content:
            attributes["inputs"] = case.prompt
            attributes["expected_output"] = json.dumps(case.expected, ensure_ascii=False, default=str)
            attributes["metadata"] = json.dumps(case.metadata, ensure_ascii=False, default=str)
        with self._tracer.start_as_current_span("case: {case_name}", attributes=attributes) as span:
            yield _CaseSpan(span, self._content)

    @contextmanager
    def execute(self, task_name: str) -> Iterator[None]:
        attributes = {"task": task_name, **_logfire("execute {task}", task_name)}
        with self._tracer.start_as_current_span("execute {task}", attributes=attributes):
            yield

    def finish(self, status: str, score: float | None, samples: int) -> None:
        if self._run_span is not None:
            self._run_span.set_attributes({"typed_eval.status": status, "typed_eval.samples": samples})
            if score is not None:
                self._run_span.set_attribute("typed_eval.score", score)


def _logfire(template: str, value: str) -> dict[str, str]:
    """The attributes Logfire shows a span's message by, as pydantic_evals' spans carry them."""
    name = template[template.index("{") : template.index("}") + 1]
    return {"logfire.msg_template": template, "logfire.msg": template.replace(name, value), "logfire.span_type": "span"}


@contextmanager
def traced_run(
    name: str,
    settings: RunSettings,
    model: Model,
    *,
    content: bool,
    dataset_name: str,
    cases: int | None,
    parent: str | None,
) -> Iterator[OtlpTraces]:
    """A run's traces (see `typed_eval.engine.traces.run_traces`): its provider made, its run span open (or its
    owner's attached), and at its end the spans left flushed for at most `FLUSH_WAIT_S`."""
    protocol = os.environ.get("OTEL_EXPORTER_OTLP_TRACES_PROTOCOL") or os.environ.get("OTEL_EXPORTER_OTLP_PROTOCOL")
    if protocol not in (None, "", "http/protobuf"):
        raise InputError(f"is {protocol!r}: traces are sent as http/protobuf", parameter="OTEL_EXPORTER_OTLP_PROTOCOL")
    endpoints = [os.environ.get(f"OTEL_EXPORTER_OTLP{signal}_ENDPOINT") for signal in ("", "_TRACES")]
    redact = Redactor.for_run(model=model, urls=[settings.base_url, *endpoints], keys=_header_values())
    provider = TracerProvider(resource=run_resource(), shutdown_on_exit=False)
    exporter = _Exporter(OTLPSpanExporter(), _endpoint(), redact, content=content, quiet=parent is not None)
    provider.add_span_processor(BatchSpanProcessor(exporter))
    quiet = _Quiet()
    for logger in _QUIETED:
        logging.getLogger(logger).addFilter(quiet)
    try:
        if parent is not None:
            token = otel_context.attach(TraceContextTextMapPropagator().extract({"traceparent": parent}))
            try:
                yield OtlpTraces(provider, content, None)
            finally:
                otel_context.detach(token)
        else:
            attributes: dict[str, Any] = {
                "name": name,
                "task_name": name,
                "dataset_name": dataset_name,
                "gen_ai.operation.name": "experiment",
                "typed_eval.model": settings.model,
                "typed_eval.mode": settings.mode,
                **_logfire("evaluate {name}", name),
            }
            if cases is not None:
                attributes["n_cases"] = cases
            if settings.repeats > 1:
                attributes["logfire.experiment.repeat"] = settings.repeats
            tracer = provider.get_tracer(SCOPE)
            with tracer.start_as_current_span("evaluate {name}", attributes=attributes) as span:
                yield OtlpTraces(provider, content, span)
    finally:
        if not _shut_down(provider, quiet, 0.0 if exporter.failed else FLUSH_WAIT_S):
            exporter.warn_once(f"did not take the spans within {FLUSH_WAIT_S:g} s")
            exporter.abort()


def run_resource() -> Resource:
    """The spans' resource: the service the standard variables name (`OTEL_SERVICE_NAME`, `service.name` in
    `OTEL_RESOURCE_ATTRIBUTES`), else `typed-eval` (given to `Resource.create`, a name would override theirs), and
    this process's id (a worker's: its own)."""
    named = SERVICE_NAME in OTELResourceDetector().detect().attributes
    return Resource.create({**({} if named else {SERVICE_NAME: "typed-eval"}), "process.pid": os.getpid()})


def _header_values() -> list[str]:
    """The values of the exporter's headers (`OTEL_EXPORTER_OTLP_HEADERS`: `key=value,...`, URL-encoded), and each
    one's last word (the token of `Bearer TOKEN`): secrets a span must not hold."""
    found: list[str] = []
    for variable in ("OTEL_EXPORTER_OTLP_HEADERS", "OTEL_EXPORTER_OTLP_TRACES_HEADERS"):
        for pair in os.environ.get(variable, "").split(","):
            value = unquote(pair.partition("=")[2]).strip()
            found += [value, value.split()[-1]] if value else []
    return found


def _shut_down(provider: TracerProvider, quiet: logging.Filter, wait_s: float) -> bool:
    """The provider's spans flushed and its exporter closed, waited for at most `wait_s` (False: not in time; its
    thread goes on until the exporter gives up). The exporter's loggers are quiet until it has."""
    done = threading.Event()

    def shut_down() -> None:
        try:
            provider.shutdown()
        finally:
            done.set()
            for logger in _QUIETED:
                logging.getLogger(logger).removeFilter(quiet)

    threading.Thread(target=shut_down, name="typed-eval traces", daemon=True).start()
    return done.wait(wait_s)


def _endpoint() -> str:
    """Where the spans go, as a warning may name it: scheme, host and port only (never a URL's credentials)."""
    url = os.environ.get("OTEL_EXPORTER_OTLP_TRACES_ENDPOINT") or os.environ.get("OTEL_EXPORTER_OTLP_ENDPOINT")
    try:
        parts = urlsplit(url or "http://localhost:4318")
        return f"{parts.scheme}://{parts.hostname}" + (f":{parts.port}" if parts.port else "")
    except ValueError:
        return "(its URL is not valid)"
