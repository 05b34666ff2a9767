"""llama-cpp-python's OpenAI-compatible server, with chat templates that give the model the prompt verbatim.

Run as `python -m farel_eval.llama_launcher ARGS` (the arguments of `python -m llama_cpp.server`). The server's
`chatml-function-calling` handler renders its template with HTML autoescaping on, so the model read
`Ralph&#39;s &lt;ANSWER&gt;1&lt;/ANSWER&gt;` where the prompt said `Ralph's <ANSWER>1</ANSWER>`: in tag mode
it never saw a literal tag. In this server process (ours alone) the handlers' template environment is
replaced by one with escaping off. With `FAREL_EVAL_RENDER_LOG=path` set, every rendered prompt is appended
to that file as a JSON line, so a test can read back exactly what the model was given.
"""

from __future__ import annotations

import json
import os
from typing import Any

from jinja2 import Template
from jinja2.sandbox import ImmutableSandboxedEnvironment
from llama_cpp import llama_chat_format

__all__ = ["VerbatimEnvironment"]

RENDER_LOG = "FAREL_EVAL_RENDER_LOG"


class _RecordedTemplate(Template):
    def render(self, *args: Any, **kwargs: Any) -> str:
        text = super().render(*args, **kwargs)
        log = os.environ.get(RENDER_LOG)
        if log:
            with open(log, "a", encoding="utf-8") as out:
                out.write(json.dumps(text) + "\n")
        return text


class VerbatimEnvironment(ImmutableSandboxedEnvironment):
    """The handlers' sandboxed template environment, never escaping what it renders."""

    template_class = _RecordedTemplate

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        kwargs["autoescape"] = False
        super().__init__(*args, **kwargs)


def main() -> None:
    llama_chat_format.ImmutableSandboxedEnvironment = VerbatimEnvironment  # type: ignore[attr-defined]
    from llama_cpp.server.__main__ import main as serve

    serve()  # type: ignore[no-untyped-call]


if __name__ == "__main__":
    main()
