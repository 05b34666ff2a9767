"""A loopback OpenAI-compatible mock that answers BFCL's single-turn cases with scripted replies (or plays another
scripted model: `bfcl_multi_turn_mock.py`).

It serves `POST /<client>/v1/chat/completions` (function calling: replies with `tool_calls`; prompt: text) and
`POST /<client>/v1/responses` (OpenAI's Responses API, which BFCL's prompt-mode registry models use). `<client>`
is a tag of the caller's choosing (`bfcl`, `ours`...), so one server keeps apart what each client sent.

A request is matched to its case by what both clients send alike: the last user message and the names of the
functions offered (dots as underscores; in prompt mode read from the JSON list the system prompt ends with).
The reply is picked by a hash of that conversation key among scripted replies built from the case's ground
truth: the right calls, and the ways to be wrong (a wrong value, a required parameter missing, an extra
parameter, a wrong name, the dotted name where the underscored one is expected or the reverse, an extra call,
plain text, an empty reply, arguments that are not JSON, an int for a float, a float or a string for an int...).
So the same conversation gets the same reply whoever asks, and the replies of the two clients can be scored
against each other case by case. Every request body is recorded with its client and key.
"""

from __future__ import annotations

import hashlib
import json
import threading
import time
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any, Protocol

TOOLS_INTRO = "Here is a list of functions in json format that you can invoke.\n"
SAMPLE_VALUES: dict[str, Any] = {
    "string": "x",
    "integer": 1,
    "float": 1.5,
    "number": 1.5,
    "boolean": True,
    "array": [],
    "tuple": [],
    "dict": {},
}


@dataclass(frozen=True)
class Reply:
    """One scripted reply: calls (name, arguments text) or None, and the text content."""

    variant: str
    calls: tuple[tuple[str, str], ...] | None
    """None: no `tool_calls` in the message (() an empty list)."""
    text: str | None
    """None: the message's content is null."""
    call_ids: tuple[str, ...] = ()
    """The calls' ids (`call_<index>` when not given)."""


@dataclass
class Script:
    """The replies of one conversation key: function-calling ones and prompt-mode ones."""

    case_ids: list[str]
    fc: list[Reply]
    prompt: list[Reply]


def conversation_key(last_user: str, names: Iterable[str]) -> str:
    """What identifies a case in a request, the same whoever sends it."""
    joined = "\x00".join(sorted(name.replace(".", "_") for name in names))
    return hashlib.sha256(f"{last_user}\x01{joined}".encode()).hexdigest()


def pick(key: str, replies: Sequence[Reply]) -> Reply:
    return replies[int(key[:12], 16) % len(replies)]


def _first_value(options: Any) -> tuple[bool, Any]:
    """A value the ground truth allows (not the may-be-omitted ""), or (False, None) if only "" is allowed."""
    for option in options if isinstance(options, list) else [options]:
        if option != "":
            return True, _plain(option)
    return False, None


def _plain(value: Any) -> Any:
    """A dict option of the ground truth (`{key: [allowed...]}`) as one value."""
    if isinstance(value, dict):
        return {k: _first_value(v)[1] for k, v in value.items() if _first_value(v)[0]}
    if isinstance(value, list):
        return [_plain(item) for item in value]
    return value


def _java_literal(value: Any, kind: str) -> str:
    if isinstance(value, bool):
        return "true" if value else "false"
    if kind == "long" and isinstance(value, int):
        return f"{value}L"
    if kind == "float" and isinstance(value, int | float):
        return f"{value}f"
    if isinstance(value, str):
        return value
    if isinstance(value, list):
        items = ", ".join(f'"{v}"' if isinstance(v, str) else _java_literal(v, "") for v in value)
        return f"new ArrayList<>(Arrays.asList({items}))" if kind == "ArrayList" else f"new int[]{{{items}}}"
    return json.dumps(value)


def _js_literal(value: Any) -> str:
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, str):
        return value
    return json.dumps(value)


def _language(category: str) -> str:
    if "javascript" in category:
        return "javascript"
    return "java" if "java" in category else "python"


def _as_sent(value: Any, kind: str, language: str) -> Any:
    """A ground-truth value as a model would send it: Java and JavaScript values as their literals' text."""
    if language == "java":
        return _java_literal(value, kind)
    if language == "javascript":
        return _js_literal(value)
    return value


def _doc_types(functions: Sequence[dict[str, Any]]) -> dict[str, dict[str, str]]:
    return {
        doc["name"]: {p: str(d.get("type", "")) for p, d in doc["parameters"]["properties"].items()}
        for doc in functions
    }


def _right_calls(functions: Sequence[dict[str, Any]], truth: list[dict[str, Any]] | None, category: str) -> list:
    """The expected calls as (name, {param: value}); for (ir)relevance cases, a call of the first function."""
    language = _language(category)
    types = _doc_types(functions)
    if truth is None:
        if not functions:
            return []
        doc = functions[0]
        props = doc["parameters"]["properties"]
        return [(doc["name"], {p: SAMPLE_VALUES.get(props[p].get("type"), "x") for p in doc["parameters"]["required"]})]
    calls = []
    for expected in truth:
        ((name, params),) = expected.items()
        arguments = {}
        for param, options in params.items():
            present, value = _first_value(options)
            if present:
                arguments[param] = _as_sent(value, types.get(name, {}).get(param, ""), language)
        calls.append((name, arguments))
    return calls


def _perturbed(value: Any) -> Any:
    if isinstance(value, bool):
        return not value
    if isinstance(value, int | float):
        return value + 7
    if isinstance(value, str):
        return value + " wrong"
    if isinstance(value, list):
        return [*value, value[0]] if value else ["wrong"]
    if isinstance(value, dict):
        return {**value, "wrong_key": "wrong"}
    return "wrong"


@dataclass(frozen=True)
class Raw:
    """Arguments as sent verbatim: their text in a tool call, and in a prompt-mode call's parentheses."""

    fc: str
    prompt: str


def _variants(calls: list, functions: Sequence[dict[str, Any]]) -> dict[str, Any]:
    """The ways to answer: each a list of (name, arguments) calls, or a marker string for a reply of no call."""
    out: dict[str, Any] = {"correct": calls, "correct_again": calls}
    out |= {"text": "text", "empty": "empty", "no_content": "no_content", "no_calls": "no_calls"}
    if not calls:
        return out
    (name, arguments), rest = calls[0], calls[1:]
    required = {doc["name"]: doc["parameters"]["required"] for doc in functions}.get(name, [])
    types = _doc_types(functions).get(name, {})
    out["malformed"] = [(name, Raw('{"a": 1', "a=1"))]  # not JSON; not Python (a bracket short) in prompt mode
    out["args_not_object"] = [(name, Raw("[1]", "1")), *rest]  # JSON but a list; a positional argument
    out["args_empty"] = [(name, Raw("", "")), *rest]
    out["calls_and_text"] = calls
    out["wrong_name"] = [(name + "_x", arguments), *rest]
    out["extra_param"] = [(name, {**arguments, "unexpected_param": 1}), *rest]
    out["extra_call"] = [*calls, calls[0]]
    if len(calls) > 1:
        out["reversed"] = list(reversed(calls))
        out["one_call_less"] = calls[:-1]
    if arguments:
        first = next(iter(arguments))
        out["wrong_value"] = [(name, {**arguments, first: _perturbed(arguments[first])}), *rest]
    missing = [p for p in required if p in arguments]
    if missing:
        out["missing_required"] = [(name, {k: v for k, v in arguments.items() if k != missing[0]}), *rest]
    if "." in name:
        out["other_name_form"] = [(name, arguments), *rest]  # dotted in FC, underscored in prompt mode
    for param, value in arguments.items():
        kind = types.get(param)
        if kind == "float" and isinstance(value, float) and value == int(value):
            out["int_for_float"] = [(name, {**arguments, param: int(value)}), *rest]
        if kind == "integer" and type(value) is int:
            out["string_for_int"] = [(name, {**arguments, param: str(value)}), *rest]
            out["float_for_int"] = [(name, {**arguments, param: float(value)}), *rest]
    return out


NO_CALL_FC = {
    "text": Reply("text", None, "I cannot do that with the functions given."),
    "empty": Reply("empty", None, ""),
    "no_content": Reply("no_content", None, None),
    "no_calls": Reply("no_calls", (), ""),
}
NO_CALL_PROMPT = {
    "text": Reply("text", None, "None of the functions fits this question."),
    "empty": Reply("empty", None, ""),
    "no_content": Reply("no_content", None, None),
    "no_calls": Reply("no_calls", None, "[]"),
}


def _fc_reply(variant: str, calls: Any) -> Reply:
    if isinstance(calls, str):
        return NO_CALL_FC[calls]
    named = []
    for name, arguments in calls:
        sent = name if variant == "other_name_form" else name.replace(".", "_")
        named.append((sent, arguments.fc if isinstance(arguments, Raw) else json.dumps(arguments)))
    return Reply(variant, tuple(named), "Here you go." if variant == "calls_and_text" else "")


def _prompt_reply(variant: str, calls: Any, index: int) -> Reply:
    if isinstance(calls, str):
        return NO_CALL_PROMPT[calls]
    texts = []
    for name, arguments in calls:
        sent = name.replace(".", "_") if variant == "other_name_form" else name
        if isinstance(arguments, Raw):
            texts.append(f"{sent}({arguments.prompt}" + ("" if variant == "malformed" else ")"))
        else:
            texts.append(f"{sent}({', '.join(f'{k}={v!r}' for k, v in arguments.items())})")
    text = f"[{', '.join(texts)}]"
    if variant == "correct_again":  # the same calls in the dress models give them
        text = [f"```python\n{text}\n```", text[1:-1] if len(texts) == 1 else text, f" {text}\n"][index % 3]
    if variant == "calls_and_text":
        text = f"Here you go. {text}"
    return Reply(variant, None, text)


def build_scripts(cases: Iterable[Any]) -> dict[str, Script]:
    """Each conversation key's scripted replies, built from the first case (in BFCL's order) with that key.

    `cases` are the suite's `BfclCase`s (id, category, question, functions, ground_truth)."""
    scripts: dict[str, Script] = {}
    for case in cases:
        users = [m["content"] for m in case.question if m["role"] == "user"]
        key = conversation_key(users[-1] if users else "", [doc["name"] for doc in case.functions])
        if key in scripts:
            scripts[key].case_ids.append(case.id)
            continue
        calls = _right_calls(case.functions, case.ground_truth, case.category)
        variants = _variants(calls, case.functions)
        fc = [_fc_reply(name, value) for name, value in variants.items()]
        prompt = [_prompt_reply(name, value, i) for i, (name, value) in enumerate(variants.items())]
        scripts[key] = Script([case.id], fc, prompt)
    return scripts


def request_key(body: dict[str, Any]) -> tuple[str, bool]:
    """A request's conversation key, and whether it is function calling (tools sent)."""
    messages = body.get("messages") or body.get("input") or []
    users = [m.get("content") for m in messages if isinstance(m, dict) and m.get("role") == "user"]
    last = users[-1] if users and isinstance(users[-1], str) else ""
    tools = body.get("tools")
    if tools:
        return conversation_key(last, tool_names(tools)), True
    return conversation_key(last, prompt_function_names(messages)), False


def tool_names(tools: Sequence[dict[str, Any]]) -> list[str]:
    """The functions' names in a request's tools (chat completions nest them, the Responses API does not)."""
    return [t["function"]["name"] if "function" in t else t.get("name", "") for t in tools]


def prompt_function_names(messages: Sequence[Any]) -> list[str]:
    """The functions' names in the JSON list BFCL's prompting system prompt ends with ([] when there is none)."""
    for message in messages:
        content = message.get("content") if isinstance(message, dict) else None
        if message.get("role") in ("system", "developer") and isinstance(content, str) and TOOLS_INTRO in content:
            docs, _ = json.JSONDecoder().raw_decode(content, content.index(TOOLS_INTRO) + len(TOOLS_INTRO))
            return [doc["name"] for doc in docs]
    return []


class Replies(Protocol):
    """A scripted model: a request's conversation key and the reply to it (None: no case of the script)."""

    def reply(self, body: dict[str, Any]) -> tuple[str, Reply | None]: ...


@dataclass
class SingleTurnReplies:
    """The single-turn scripts (`build_scripts`): the reply picked by a hash of the conversation key."""

    scripts: dict[str, Script]

    def reply(self, body: dict[str, Any]) -> tuple[str, Reply | None]:
        key, calling = request_key(body)
        script = self.scripts.get(key)
        return key, None if script is None else pick(key, script.fc if calling else script.prompt)


def chat_completion(reply: Reply, model: str) -> dict[str, Any]:
    message: dict[str, Any] = {"role": "assistant", "content": reply.text or (None if reply.calls else reply.text)}
    if reply.calls is not None:
        ids = reply.call_ids or tuple(f"call_{i}" for i in range(len(reply.calls)))
        message["tool_calls"] = [
            {"id": id_, "type": "function", "function": {"name": name, "arguments": arguments}}
            for id_, (name, arguments) in zip(ids, reply.calls, strict=True)
        ]
    return {
        "id": "chatcmpl-mock",
        "object": "chat.completion",
        "created": 0,
        "model": model,
        "choices": [{"index": 0, "message": message, "finish_reason": "tool_calls" if reply.calls else "stop"}],
        "usage": {"prompt_tokens": 100, "completion_tokens": 10, "total_tokens": 110},
    }


def response(reply: Reply, model: str) -> dict[str, Any]:
    content = [] if reply.text is None else [{"type": "output_text", "text": reply.text, "annotations": []}]
    message = {"type": "message", "id": "msg-mock", "status": "completed", "role": "assistant", "content": content}
    return {
        "id": "resp-mock",
        "object": "response",
        "created_at": 0,
        "model": model,
        "status": "completed",
        "output": [message],
        "parallel_tool_calls": True,
        "tool_choice": "auto",
        "tools": [],
        "usage": {
            "input_tokens": 100,
            "output_tokens": 10,
            "total_tokens": 110,
            "input_tokens_details": {"cached_tokens": 0},
            "output_tokens_details": {"reasoning_tokens": 0},
        },
    }


@dataclass
class Recorded:
    """A request as received: who sent it, its endpoint, its conversation key and body."""

    client: str
    endpoint: str
    key: str
    body: dict[str, Any]
    variant: str | None


@dataclass
class MockServer:
    """The scripted server on 127.0.0.1 (an ephemeral port), each request answered after `latency_s`: the
    single-turn scripts (`build_scripts`) or another scripted model."""

    scripts: dict[str, Script] | Replies
    latency_s: float = 0.0
    record: bool = True
    requests: list[Recorded] = field(default_factory=list)

    def __post_init__(self) -> None:
        self._replies = SingleTurnReplies(self.scripts) if isinstance(self.scripts, dict) else self.scripts
        self._lock = threading.Lock()
        self._server = ThreadingHTTPServer(("127.0.0.1", 0), _handler(self))
        self._server.daemon_threads = True
        self.port = self._server.server_address[1]
        threading.Thread(target=self._server.serve_forever, daemon=True).start()

    def url(self, client: str) -> str:
        return f"http://127.0.0.1:{self.port}/{client}/v1"

    def close(self) -> None:
        self._server.shutdown()
        self._server.server_close()

    def answer(self, path: str, body: dict[str, Any]) -> dict[str, Any]:
        parts = path.strip("/").split("/")
        client, endpoint = (parts[0], "/".join(parts[2:])) if len(parts) > 2 else ("?", path)
        key, reply = self._replies.reply(body)
        if self.record:
            with self._lock:
                self.requests.append(Recorded(client, endpoint, key, body, reply.variant if reply else None))
        reply = reply or Reply("unknown", None, "unknown conversation")
        model = str(body.get("model", "mock"))
        return response(reply, model) if endpoint == "responses" else chat_completion(reply, model)


def _handler(server: MockServer) -> type[BaseHTTPRequestHandler]:
    class Handler(BaseHTTPRequestHandler):
        protocol_version = "HTTP/1.1"
        disable_nagle_algorithm = True  # else each answer's body waits ~40 ms for the ACK of its headers

        def do_POST(self) -> None:
            length = int(self.headers.get("Content-Length") or 0)
            body = json.loads(self.rfile.read(length) or b"{}")
            if server.latency_s:
                time.sleep(server.latency_s)
            data = json.dumps(server.answer(self.path, body)).encode()
            self.send_response(200)
            self.send_header("Content-Type", "application/json")
            self.send_header("Content-Length", str(len(data)))
            self.end_headers()
            self.wfile.write(data)

        def log_message(self, format: str, *args: Any) -> None:
            pass

    return Handler
