"""A loopback OpenAI-compatible mock for the schemas suite: answers each schema with a known valid or known invalid
instance, as its script says, and refuses some schemas in native mode with OpenAI's own 400 `invalid_json_schema`.

The script is the mock's, made without the suite's code: for each schema a valid instance from a small generator
(required properties, types, enums, bounds, local `$ref`s; checked with `jsonschema` itself) and an invalid one (a
required property dropped, or a value of the wrong type; checked likewise), a schema with no such pair being left out
(`held_out`). The plan of a schema in a mode is one of `PLANS`, picked by a hash of the schema's text and the mode:
`valid` (valid at once), `fixed` (invalid, then valid when asked again), `invalid` (invalid every time), `refused`
(native mode only: the HTTP 400). A request is matched to its schema by its last user message that is a schema of the
script (the schema as JSONSchemaBench sends it); the attempt is the number of assistant turns after it.
Tool mode answers with a call of the offered tool; native and text modes with the JSON as the content; prompted mode
with the JSON in a ```json fence. A root that is not an object (nor posed as one: no `type` and an object keyword) is
answered as `{"response": ...}` in the structured modes (the suite's documented wrapping), bare in text mode.
"""

from __future__ import annotations

import hashlib
import json
import time
from collections.abc import Iterable
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Literal

import jsonschema
from loopback import LoopbackChat

Plan = Literal["valid", "fixed", "invalid", "refused"]
MODES = ("tool", "native", "prompted", "text")
REFUSAL = {
    "error": {
        "message": "Invalid schema for response_format 'final_result': In context=(), 'additionalProperties' is "
        "required to be supplied and to be false.",
        "type": "invalid_request_error",
        "param": "response_format",
        "code": "invalid_json_schema",
    }
}
PROMPTED = "compatible with this schema"
"""What pydantic-ai's prompted output tells the model (and text mode does not)."""
_FORMATS = {"date-time": "2024-01-02T03:04:05Z", "date": "2024-01-02", "time": "03:04:05Z", "email": "a@example.com",
            "uri": "https://example.com/a", "hostname": "example.com", "ipv4": "192.0.2.1", "ipv6": "2001:db8::1",
            "uuid": "123e4567-e89b-12d3-a456-426614174000", "uri-reference": "a/b"}  # fmt: skip


def _local(root: Any, reference: str) -> Any:
    node = root
    for part in reference.lstrip("#").split("/")[1:]:
        part = part.replace("~1", "/").replace("~0", "~")
        node = node[int(part)] if isinstance(node, list) else node[part]
    return node


def _value(root: Any, node: Any, depth: int) -> Any:
    """A value meant to be valid against `node` (None-able: a best effort; `jsonschema` has the last word)."""
    if depth > 12 or not isinstance(node, dict):
        return None if node is False else {}
    if isinstance(node.get("$ref"), str) and node["$ref"].startswith("#"):
        return _value(root, {**_local(root, node["$ref"]), **{k: v for k, v in node.items() if k != "$ref"}}, depth + 1)
    if "const" in node:
        return node["const"]
    if node.get("enum"):
        return node["enum"][0]
    for key in ("anyOf", "oneOf"):
        if node.get(key):
            return _value(root, {**node[key][0], **{k: v for k, v in node.items() if k != key}}, depth + 1)
    if node.get("allOf"):
        merged = {k: v for k, v in node.items() if k != "allOf"}
        for part in node["allOf"]:
            part = _local(root, part["$ref"]) if isinstance(part.get("$ref"), str) else part
            merged = {**merged, **part, "properties": {**merged.get("properties", {}), **part.get("properties", {})},
                      "required": [*merged.get("required", []), *part.get("required", [])]}  # fmt: skip
        return _value(root, merged, depth + 1)
    kind = node.get("type")
    kind = (kind or ["null"])[0] if isinstance(kind, list) else kind
    if kind == "object" or (kind is None and "properties" in node):
        properties = node.get("properties", {})
        return {name: _value(root, properties.get(name, {}), depth + 1) for name in node.get("required", [])}
    if kind == "array":
        return [_value(root, node.get("items", {}), depth + 1) for _ in range(node.get("minItems", 0))]
    if kind in ("integer", "number"):
        low = node.get("minimum", node.get("exclusiveMinimum", -1) + 1)
        return int(low) if kind == "integer" or float(low).is_integer() else low
    if kind == "boolean":
        return True
    if kind == "null":
        return None
    if kind == "string" or kind is None:
        text = _FORMATS.get(node.get("format", ""), "x")
        return text + "x" * max(0, node.get("minLength", 0) - len(text))
    return None


def _broken(schema: Any, valid: Any) -> Any:
    """An instance meant to be invalid: a required property dropped, else the first property's value a list."""
    if isinstance(valid, dict) and isinstance(schema, dict) and schema.get("required"):
        return {k: v for k, v in valid.items() if k != schema["required"][0]}
    if isinstance(valid, dict) and valid:
        first = next(iter(valid))
        return {**valid, first: [[["not this"]]]}
    return [[["not this"]]] if not isinstance(valid, list) else "not a list"


def instances(schema: Any) -> tuple[Any, Any] | tuple[()]:
    """The generated instance meant to be valid and the one broken from it, or () when the generator fails."""
    try:
        valid = _value(schema, schema, 0)
    except (KeyError, IndexError, TypeError, ValueError, AttributeError, RecursionError):
        return ()
    return valid, _broken(schema, valid)


def _verdict(schema: Any, instance: Any) -> bool | None:
    try:
        cls = jsonschema.validators.validator_for(schema, default=jsonschema.Draft202012Validator)
        return bool(cls(schema, format_checker=cls.FORMAT_CHECKER).is_valid(instance))
    except Exception:  # a schema that needs a remote $ref, a pattern `re` cannot read: not held out
        return None


_OBJECT_ONLY = ("properties", "required", "additionalProperties", "patternProperties", "propertyNames",
                "minProperties", "maxProperties", "dependencies", "dependentRequired", "dependentSchemas",
                "unevaluatedProperties")  # fmt: skip
"""Keywords that apply to objects only."""


def object_root(schema: Any) -> bool:
    """Whether the schema's root, once a root `$ref` is followed, is `type: object`, or has no `type` and an object
    keyword (posed with `type: object` added, as JSONSchemaBench poses it); else the structured modes wrap."""
    node = schema
    for _ in range(10):
        if isinstance(node, dict) and isinstance(node.get("$ref"), str) and node["$ref"].startswith("#"):
            node = {**_local(schema, node["$ref"]), **{k: v for k, v in node.items() if k != "$ref"}}
    if not isinstance(node, dict):
        return False
    return node.get("type") == "object" or ("type" not in node and any(key in node for key in _OBJECT_ONLY))


@dataclass(frozen=True)
class Entry:
    """A held-out schema: its text as sent, its set, its known valid and invalid instances."""

    text: str
    group: str
    valid: Any
    invalid: Any
    object_root: bool


def plan(text: str, mode: str) -> Plan:
    """The schema's plan in `mode`: by a hash of both, a fifth refused in native mode."""
    number = int(hashlib.sha256(f"{mode}\x00{text}".encode()).hexdigest()[:8], 16)
    if mode == "native" and number % 5 == 0:
        return "refused"
    return ("valid", "fixed", "invalid", "valid")[number // 5 % 4]


def held_out(folder: Path, per_set: int | None = None) -> list[tuple[str, Entry]]:
    """The schemas of `folder` (`<set>/<file>.json`) with a known valid and a known invalid instance, by case id
    (`<set>/<file>`), the first `per_set` of each set in name order."""
    chosen: list[tuple[str, Entry]] = []
    for group in sorted(p for p in folder.iterdir() if p.is_dir()):
        taken = 0
        for path in sorted(group.glob("*.json")):
            if per_set is not None and taken >= per_set:
                break
            schema = json.loads(path.read_text(encoding="utf-8"))
            made = instances(schema)
            if not made:
                continue
            valid, invalid = made
            if _verdict(schema, valid) is True and _verdict(schema, invalid) is False:
                text = json.dumps(schema)
                chosen.append(
                    (f"{group.name}/{path.stem}", Entry(text, group.name, valid, invalid, object_root(schema)))
                )
                taken += 1
    return chosen


def reference(entries: Iterable[Entry], mode: str, retries: int) -> dict[str, tuple[int, int, int]]:
    """(posed, refused, valid) per set and `overall` as the script makes them, after `retries` corrective retries."""
    counts: dict[str, list[int]] = {}
    for entry in entries:
        chosen = plan(entry.text, mode)
        row = counts.setdefault(entry.group, [0, 0, 0])
        row[0] += 1
        row[1] += chosen == "refused"
        row[2] += chosen == "valid" or (chosen == "fixed" and retries >= 1)
    figures = {group: (row[0], row[1], row[2]) for group, row in sorted(counts.items())}
    figures["overall"] = tuple(sum(row[i] for row in counts.values()) for i in range(3))  # type: ignore[assignment]
    return figures


def _mode(body: dict[str, Any]) -> str:
    if body.get("tools"):
        return "tool"
    if (body.get("response_format") or {}).get("type") == "json_schema":
        return "native"
    system = " ".join(str(m.get("content")) for m in body["messages"] if m["role"] in ("system", "developer"))
    return "prompted" if PROMPTED in system else "text"


def _last_schema(messages: list[dict[str, Any]]) -> tuple[int, Entry]:
    """The last user message that is a schema (an object or a boolean), and an entry answering it with `{}` every
    time (for a schema the script does not hold)."""
    for at in range(len(messages) - 1, -1, -1):
        if messages[at]["role"] == "user" and isinstance(messages[at].get("content"), str):
            try:
                schema = json.loads(messages[at]["content"])
            except ValueError:
                continue
            if isinstance(schema, dict | bool):
                try:
                    shape = object_root(schema)
                except (KeyError, IndexError, TypeError, ValueError, AttributeError):  # a $ref naming nothing
                    shape = False
                return at, Entry(messages[at]["content"], "", {}, {}, shape)
    raise ValueError("no schema in the request")


class SchemaMock(LoopbackChat):
    """The mock server (`loopback.LoopbackChat`: asyncio on loopback, keep-alive, `latency_s` per request); with
    `answer_all`, a schema the script does not hold is answered with `{}` (never refused), not a dropped
    connection."""

    def __init__(self, entries: Iterable[Entry], latency_s: float = 0.0, *, answer_all: bool = False) -> None:
        self.by_text = {entry.text: entry for entry in entries}
        self.answer_all = answer_all
        self.requests: list[tuple[str, str, int]] = []
        """(mode, schema text, attempt) of each request."""
        self.first_at: float | None = None
        """When the first request was answered (`time.monotonic()`)."""
        super().__init__(latency_s)

    def respond(self, body: dict[str, Any]) -> tuple[int, dict[str, Any]]:
        """The status and body answering a chat request."""
        if self.first_at is None:
            self.first_at = time.monotonic()
        messages = body["messages"]
        if self.answer_all:  # the case's schema is the last user message that is one (a few-shot one may be scripted)
            at, made = _last_schema(messages)
            entry = self.by_text.get(made.text, made)
        else:
            at = max(i for i, m in enumerate(messages) if m["role"] == "user" and m.get("content") in self.by_text)
            entry = self.by_text[messages[at]["content"]]
        attempt = sum(1 for m in messages[at:] if m["role"] == "assistant")
        mode = _mode(body)
        self.requests.append((mode, entry.text, attempt))
        chosen = "valid" if entry.text not in self.by_text else plan(entry.text, mode)
        if chosen == "refused":
            return 400, REFUSAL
        value = entry.valid if chosen == "valid" or (chosen == "fixed" and attempt >= 1) else entry.invalid
        if mode != "text" and not entry.object_root:
            value = {"response": value}
        content = json.dumps(value)
        if mode == "tool":
            name = body["tools"][0]["function"]["name"]
            call = {"id": f"call_{attempt}", "type": "function", "function": {"name": name, "arguments": content}}
            message: dict[str, Any] = {"role": "assistant", "content": None, "tool_calls": [call]}
        else:
            message = {"role": "assistant", "content": f"```json\n{content}\n```" if mode == "prompted" else content}
        return 200, {
            "id": "chatcmpl-mock", "object": "chat.completion", "created": 0, "model": body.get("model", "m"),
            "choices": [{"index": 0, "message": message, "finish_reason": "stop"}],
            "usage": {"prompt_tokens": 100, "completion_tokens": 10, "total_tokens": 110},
        }  # fmt: skip
