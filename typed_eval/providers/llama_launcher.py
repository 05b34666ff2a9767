"""llama-cpp-python's OpenAI-compatible server, giving the model each prompt verbatim and a seed of its own.

Run as `python -m typed_eval.providers.llama_launcher ARGS` (the arguments of `python -m llama_cpp.server`). The
server's `chatml-function-calling` handler renders its template with HTML autoescaping on, so the model read
`Ralph&#39;s &lt;ANSWER&gt;1&lt;/ANSWER&gt;` where the prompt said `Ralph's <ANSWER>1</ANSWER>`: in tag mode
it never saw a literal tag. In this server process (ours alone) the handlers' template environment is
replaced by one with escaping off. With `TYPED_EVAL_RENDER_LOG=path` set, every rendered prompt is appended
to that file as a JSON line, so a test can read back exactly what the model was given.

Gemma: llama-cpp-python's `gemma` chat format drops every system message (Gemma has no system role), so a suite's
instructions never reached the model. Here it is replaced by Gemma's own chat template's rule: the leading system
messages are folded into the first turn, before its text.

Sampling: without a seed in the request, llama-cpp-python draws each request's seed from the previous one (and
the tool-calling handler never passes a request's seed on), so an answer depended on how many requests the
server had served before it: a resumed run, whose server starts afresh mid-dataset, answered 2 of 30 quizzes
otherwise than an uninterrupted one. Here every request is sampled from its own seed: the one it names, or one
derived from its messages and tools, so the same request gets the same answer whatever came before it.
"""

from __future__ import annotations

import hashlib
import json
import os
from collections.abc import Callable
from typing import Any

from jinja2 import Template
from jinja2.sandbox import ImmutableSandboxedEnvironment
from llama_cpp import Llama, llama_chat_format

__all__ = ["VerbatimEnvironment", "gemma_prompt", "request_seed"]

RENDER_LOG = "TYPED_EVAL_RENDER_LOG"


def _recorded(text: str) -> str:
    """The prompt rendered, appended to the render log when one is named."""
    log = os.environ.get(RENDER_LOG)
    if log:
        with open(log, "a", encoding="utf-8") as out:
            out.write(json.dumps(text) + "\n")
    return text


class _RecordedTemplate(Template):
    def render(self, *args: Any, **kwargs: Any) -> str:
        return _recorded(super().render(*args, **kwargs))


def gemma_prompt(*, messages: list[Any], **_: Any) -> llama_chat_format.ChatFormatterResponse:
    """Gemma's turns as its own chat template writes them: the leading system messages before the first turn's text
    (with a blank line), `user` and `model` turns, each text trimmed, then the model's turn opened."""
    texts = [(m.get("role"), m.get("content") if isinstance(m.get("content"), str) else "") for m in messages]
    leading = 0
    while leading < len(texts) - 1 and texts[leading][0] == "system":
        leading += 1
    prefix = "".join(f"{text}\n\n" for _, text in texts[:leading])
    turns = []
    for role, text in texts[leading:]:
        name = "model" if role == "assistant" else "user"
        turns.append(f"<start_of_turn>{name}\n{prefix}{text.strip()}<end_of_turn>\n")
        prefix = ""
    prompt = "".join(turns) + "<start_of_turn>model\n"
    return llama_chat_format.ChatFormatterResponse(prompt=_recorded(prompt), stop="<end_of_turn>\n")


class VerbatimEnvironment(ImmutableSandboxedEnvironment):
    """The handlers' sandboxed template environment, never escaping what it renders."""

    template_class = _RecordedTemplate

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        kwargs["autoescape"] = False
        super().__init__(*args, **kwargs)


def request_seed(request: dict[str, Any]) -> int:
    """The request's own seed, or a 32-bit one derived from what it asks (messages, tools, settings)."""
    named = request.get("seed")
    if isinstance(named, int):
        return named
    asked = json.dumps(request, sort_keys=True, default=lambda value: type(value).__name__).encode()
    return int.from_bytes(hashlib.sha256(asked).digest()[:4], "big")


def _seeded_per_request(create: Callable[..., Any]) -> Callable[..., Any]:
    def create_chat_completion(self: Llama, **request: Any) -> Any:
        self.set_seed(request_seed(request))
        return create(self, **request)

    return create_chat_completion


def main() -> None:
    llama_chat_format.ImmutableSandboxedEnvironment = VerbatimEnvironment  # type: ignore[attr-defined]
    Llama.create_chat_completion = _seeded_per_request(Llama.create_chat_completion)  # type: ignore[method-assign]
    handlers = llama_chat_format.LlamaChatCompletionHandlerRegistry()  # type: ignore[no-untyped-call]
    handlers.register_chat_completion_handler(
        "gemma", llama_chat_format.chat_formatter_to_chat_completion_handler(gemma_prompt), overwrite=True
    )
    from llama_cpp.server.__main__ import main as serve

    serve()  # type: ignore[no-untyped-call]


if __name__ == "__main__":
    main()
