"""Replay: a model that answers each prompt with a reply recorded elsewhere (a published log, a result file).

Imports of published results and `replay:` model strings are runs of such a model: the reply is sent back as the
model's text, and its usage is unmeasured (nothing is known of the tokens or cost of the recorded call).
"""

from __future__ import annotations

from collections.abc import Callable

from pydantic_ai import ModelAPIError, ModelMessage, ModelRequest, ModelResponse, RequestUsage, TextPart, UserPromptPart
from pydantic_ai.models.function import AgentInfo, FunctionModel

__all__ = ["replay_model"]


def replay_model(
    reply_to: Callable[[str], str | None], name: str, *, none: str = "no reply is recorded for this prompt"
) -> FunctionModel:
    """A model named `name` answering each request with `reply_to(its user prompt)`; a prompt it has no reply for
    (None) fails that request with `none` as the model's error."""

    def respond(messages: list[ModelMessage], _: AgentInfo) -> ModelResponse:
        request = messages[0]
        assert isinstance(request, ModelRequest)
        prompt = next(str(p.content) for p in request.parts if isinstance(p, UserPromptPart))
        reply = reply_to(prompt)
        if reply is None:
            raise ModelAPIError(name, none)
        return ModelResponse(parts=[TextPart(reply)], usage=RequestUsage(unmeasured_requests=1), model_name=name)

    return FunctionModel(respond, model_name=name)
