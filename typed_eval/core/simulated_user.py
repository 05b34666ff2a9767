"""The simulated user of a conversation: a second model, prompted with a scenario, that talks to the agent under test.

Why a model of its own and not the run's `Conversation`: what the user costs is the benchmark's, not the agent's, so
it is counted apart (`UserTurn.usage`, `UserTurn.cost`) and never mixed into the agent's attempts. Its requests are
sent as they are (no corrective retry), with the tools it has of its own (a phone's settings), if any.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from pydantic_ai.direct import model_request
from pydantic_ai.models import Model, ModelRequestParameters
from pydantic_ai.settings import ModelSettings, merge_model_settings

from typed_eval.contracts import Cost, TokenUsage
from typed_eval.core.attempts import UserPrices, sample_cost, sample_usage
from typed_eval.core.calls import ChatMessage, Reply, chat_history, reply_of, schemas_as_given, tool_definitions
from typed_eval.core.secrets import Redactor

__all__ = ["STOP_TOKENS", "SimulatedUser", "SimulatedUserFailed", "UserTurn"]

STOP_TOKENS = ("###STOP###", "###TRANSFER###", "###OUT-OF-SCOPE###")
"""A user message holding one of them ends the conversation (done, handed to a human, out of scope)."""


class SimulatedUserFailed(Exception):
    """A request of the simulated user failed (its server, its key): the sample's error, said with no secret."""


@dataclass(frozen=True)
class UserTurn:
    """One reply of the simulated user, with what asking for it used and cost."""

    reply: Reply
    usage: TokenUsage
    cost: Cost


@dataclass(frozen=True)
class SimulatedUser:
    """The model that plays the user: `model` (any pydantic-ai model), `name` as runs record it, its sampling
    `settings`, and how its replies are priced (`local`: free; `prices`: the user's own)."""

    model: Model
    name: str
    settings: ModelSettings | None = None
    local: bool = False
    prices: UserPrices | None = None
    stop_tokens: tuple[str, ...] = STOP_TOKENS

    def is_stop(self, text: str | None) -> bool:
        """Whether a user message ends the conversation (a message with calls never does)."""
        return text is not None and any(token in text for token in self.stop_tokens)

    async def reply(
        self, messages: Sequence[ChatMessage], functions: Sequence[Mapping[str, Any]], *, seed: int | None = None
    ) -> UserTurn:
        """The user's next message to `messages` (OpenAI's chat format, from the user's side: its own messages as
        `assistant`), with `functions` as its tools; a failed request raises as the provider's client raises it."""
        parameters = ModelRequestParameters(
            function_tools=tool_definitions(functions), native_tools=[], output_tools=[], allow_text_output=True
        )
        settings = merge_model_settings(self.settings, ModelSettings(seed=seed) if seed is not None else None)
        history, model = chat_history(messages), schemas_as_given(self.model)
        try:
            response = await model_request(
                model,
                model.prepare_messages(history, parameters),
                model_settings=settings,
                model_request_parameters=parameters,
            )
        except Exception as exc:  # its server may echo the user's own key or URL, which the run's redactor never saw
            said = Redactor.for_run(model=self.model)(" ".join(str(exc).split()))
            raise SimulatedUserFailed(f"the simulated user {self.name} failed: {type(exc).__name__}: {said}") from None
        usage = sample_usage([response])
        return UserTurn(reply_of(response), usage, sample_cost([response], usage, local=self.local, prices=self.prices))
