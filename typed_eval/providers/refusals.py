"""A provider refusing the schema it was sent: an HTTP 400 whose body says the output type's schema (a response
format, a tool's parameters) is what it will not take. Such a sample is `unsupported`, not an error: the same request
is refused every time, so it is neither retried nor posed again, and it says what the provider supports.

The rule reads the provider's own error fields, never a guess from a bare status:

- OpenAI and compatible APIs (`{"error": {"code", "type", "param", "message"}}`, or that object alone as the openai
  client hands it on): `code` `invalid_json_schema` or `invalid_function_parameters`; or `type`
  `invalid_request_error` with a `param` of `response_format` (or below it) or of `tools` (or below it:
  `tools[0].function.parameters`). A `tool_choice` refused is not the schema's refusal.
- Anthropic (`{"type": "error", "error": {"type": "invalid_request_error", "message"}}`): a message whose field path
  is below `tools.` (`tools.0.custom.input_schema: JSON schema is invalid...`), `output_format` or `output_config`,
  or that says the schema is too complex to compile.
- Google (`{"error": {"status": "INVALID_ARGUMENT", "message"}}`): a message naming a schema (`response_schema`,
  "The specified schema produces a constraint...") or the function declarations.

Anything else (another 400, a 422, a 429, a timeout, a 5xx) is not a refusal of the schema.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from typing import Any, TypeGuard

from pydantic_ai import ModelHTTPError

from typed_eval.contracts import Case
from typed_eval.core.errors import failure_line
from typed_eval.core.tasks import Score, Task

__all__ = ["cannot_change", "refuses_schema", "scored_rejection"]

_TRANSIENT_4XX = frozenset({408, 409, 429})
"""4xx statuses a resend may pass (a timeout, a conflict, a rate limit)."""
_UNREACHABLE_4XX = frozenset({401, 403, 404})
"""4xx statuses that say the model cannot be reached at all (credentials, no such model): the run's, not a case's."""


def cannot_change(exc: BaseException | None) -> TypeGuard[ModelHTTPError]:
    """Whether `exc` is a provider's rejection of this request that no resend can change: a 4xx other than the
    transient ones and those that say the model cannot be reached (a context length exceeded, a parameter refused)."""
    if not isinstance(exc, ModelHTTPError):
        return False
    status = exc.status_code
    return 400 <= status < 500 and status not in _TRANSIENT_4XX | _UNREACHABLE_4XX


_OPENAI_CODES = frozenset({"invalid_json_schema", "invalid_function_parameters"})
_PARAM = re.compile(r"^(response_format|tools)([.\[]|$)")
_ANTHROPIC_PATH = re.compile(r"^(tools\.|output_format\b|output_config\b)")
_TOO_COMPLEX = ("schema is too complex", "compiled grammar is too large")
_GOOGLE_WORDS = ("schema", "function_declarations", "functiondeclarations")


def refuses_schema(exc: BaseException | None) -> bool:
    """Whether `exc` is a provider's HTTP 400 refusing the schema sent (see the module's rule)."""
    if not isinstance(exc, ModelHTTPError) or exc.status_code != 400 or not isinstance(exc.body, Mapping):
        return False
    body: Mapping[str, Any] = exc.body
    nested = body.get("error")
    error: Mapping[str, Any] = nested if isinstance(nested, Mapping) else body
    code, kind, param, message = (error.get(key) for key in ("code", "type", "param", "message"))
    text = message if isinstance(message, str) else ""
    if code in _OPENAI_CODES:
        return True
    if kind == "invalid_request_error" and isinstance(param, str):
        return _PARAM.match(param) is not None
    if kind == "invalid_request_error":  # Anthropic's: the field path leads the message
        return _ANTHROPIC_PATH.match(text) is not None or any(words in text.lower() for words in _TOO_COMPLEX)
    if error.get("status") == "INVALID_ARGUMENT":
        return any(word in text.lower() for word in _GOOGLE_WORDS)
    return False


def scored_rejection(task: Task[Any], case: Case, exc: BaseException | None) -> Score | None:
    """The task's score for a case whose request was rejected as no resend can change (`Task.rejected`: a benchmark
    may score a failed call as its reply), or None: no such rejection (a refused schema is `unsupported`), or no
    such rule."""
    if task.rejected is None or not cannot_change(exc) or refuses_schema(exc):
        return None
    return task.rejected(case, failure_line(exc))
