"""`models`: the models a provider has on this machine."""

from __future__ import annotations

import argparse
import sys

from typed_eval.core.errors import EvaluatorError
from typed_eval.core.terminal import printable
from typed_eval.providers.local_server import locate_local_model


def add_parser(commands: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    models = commands.add_parser("models", help="list the models a provider has on this machine")
    models.add_argument("--provider", choices=["ollama", "local"], default="ollama")
    models.add_argument("--base-url", help="the Ollama server (default: OLLAMA_BASE_URL or http://localhost:11434)")
    models.set_defaults(command=command_models)


def command_models(args: argparse.Namespace) -> int:
    """List the models a provider has here: Ollama's pulled models, or the local GGUF models installed."""
    if args.provider == "ollama":
        from typed_eval.providers.ollama_models import list_ollama_models, ollama_host

        host = ollama_host(args.base_url)
        models = list_ollama_models(host)
        for m in models:
            size = f"{m.size_bytes / 1e9:.1f} GB" if m.size_bytes else "?"
            tools = "tools" if m.capabilities and "tools" in m.capabilities else "no tools"
            if m.capabilities is None:
                tools = "capabilities unknown"
            print(printable(f"ollama:{m.name}\t{size}\t{m.parameters or '?'}\t{m.quantization or '?'}\t{tools}"))
        if not models:
            print(
                f"no models in Ollama at {host}: pull one with `ollama pull NAME` or `main.py run --pull`",
                file=sys.stderr,
            )
        return 0
    for name in ("local:smollm2-135m", "local:gemma3-270m"):
        try:
            model = locate_local_model(name)
        except EvaluatorError as exc:
            print(f"{name}\tnot installed: {exc}")
            continue
        tools = "tools" if model.tool_calls else "no tools"
        print(f"{name}\t{model.path}\t{model.path.stat().st_size / 1e6:.0f} MB\t{model.chat_format}\t{tools}")
    return 0
