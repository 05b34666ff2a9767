"""The schema as the output type pydantic-ai asks for: what is sent is the schema with its local `$ref`s written out
(pydantic cannot hand on a schema's own definitions), what is accepted is what `jsonschema` finds valid against the
original.

A root with object keywords (`properties`, `required`, `additionalProperties`...) and no `type` is posed as
JSONSchemaBench poses it, with `"type": "object"` added: asked for as the object it describes (the validator still
judges against the original). Any other root that is not `type: object` cannot be a tool's parameters, a response
format or pydantic-ai's prompted schema as it is: it is asked for as `{"response": <schema>}` in every structured
mode (as pydantic-ai wraps such outputs) and the reply unwrapped, so the instance scored is the bare value; a
plain-text reply is the bare value itself.
A recursive reference is written out once and then cut to `{}` (any value), as is any reference met once the
written-out schema is `MAX_NODES` large: the model is shown less than the schema asks, the validator still checks
all of it. A `$ref` to anything but the schema
itself (a URL, a file) is never fetched: the case cannot be posed.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any

from pydantic import GetCoreSchemaHandler, GetJsonSchemaHandler
from pydantic_core import PydanticCustomError, core_schema

from typed_eval.suites.schemas.validation import SchemaProblem, pointer

__all__ = ["MAX_NODES", "OBJECT_KEYWORDS", "TYPED", "WRAPPER", "Sent", "schema_output", "sent_schema"]

MAX_NODES = 20_000
"""How large a schema may grow as its references are written out (objects, lists and values counted; about 0.7 MB
of JSON at most over JSONSchemaBench, 57 of its schemas reach it): past it, a
`$ref` is left open (any value), said in the case's notes; the validator still checks all of it."""
WRAPPER = "response"
"""The key a root that is not an object is asked for under (pydantic-ai's own for such outputs)."""
OBJECT_KEYWORDS = ("properties", "required", "additionalProperties", "patternProperties", "propertyNames",
                   "minProperties", "maxProperties", "dependencies", "dependentRequired", "dependentSchemas",
                   "unevaluatedProperties")  # fmt: skip
"""Keywords that apply to objects only: a root with one of them and no `type` is posed as an object."""
TYPED = (
    'the root has object keywords and no type: posed with "type": "object" added, as JSONSchemaBench poses it '
    "(structured modes)"
)
"""The note of a root posed as an object with `type: object` added (JSONSchemaBench's engines add it to a root with
no type: `add_root_type_if_missing`, `adapt_schema`)."""
_LEFT_OUT = ("definitions", "$defs", "$schema", "$id")
"""The root's keys not sent: its definitions (written out where used) and what only says how to read it."""


class Sent:
    """The schema as posed, and what had to change for it (each note a line)."""

    def __init__(self, schema: dict[str, Any] | bool, notes: list[str]) -> None:
        self.schema = schema
        self.notes = notes

    @property
    def object_root(self) -> bool:
        return isinstance(self.schema, dict) and self.schema.get("type") == "object"


def _plain(node: Any, sizes: dict[int, int]) -> int:
    """How many nodes `node` holds (itself, each list item and each value), or -1 when a `$ref` is below it; kept by
    id in `sizes` for every object and list, so `sent_schema` writes out only what holds a reference."""
    if not isinstance(node, dict | list):
        return 1
    total = -1 if isinstance(node, dict) and isinstance(node.get("$ref"), str) else 1
    for value in node.values() if isinstance(node, dict) else node:
        size = _plain(value, sizes)
        total = -1 if size < 0 or total < 0 else total + size
    sizes[id(node)] = total
    return total


def sent_schema(schema: Mapping[str, Any] | bool, max_nodes: int = MAX_NODES) -> Sent:
    """`schema` with every local `$ref` replaced by what it names (its sibling keywords kept over it), recursion cut
    to `{}`, and so is any `$ref` met once `max_nodes` nodes are written out (a schema whose definitions use each
    other many times over grows exponentially); the root's definitions, `$schema` and `$id` left out, and a root with
    object keywords and no `type` given `"type": "object"` (`TYPED`); SchemaProblem for a reference that is not local.
    What holds no `$ref` is `schema`'s own, not copied (a third less time over JSONSchemaBench)."""
    if isinstance(schema, bool):
        return Sent(schema, [])
    notes: list[str] = []
    made = 0
    sizes: dict[int, int] = {}
    _plain(schema, sizes)

    def walk(node: Any, path: tuple[str, ...]) -> Any:
        nonlocal made
        if not isinstance(node, dict | list):
            made += 1
            return node
        size = sizes.get(id(node), -1)
        if size > 0:  # no `$ref` below: sent as it is, its nodes counted
            made += size
            return node
        made += 1
        if isinstance(node, list):
            return [walk(item, path) for item in node]
        reference = node.get("$ref")
        if isinstance(reference, str):
            if not reference.startswith("#"):
                raise SchemaProblem(f"$ref {reference!r} is not within the schema: references are never fetched")
            siblings = {k: walk(v, path) for k, v in node.items() if k != "$ref"}
            if reference in path:
                notes.append(f"recursive $ref {reference} cut to any value")
                return siblings
            if made > max_nodes:  # definitions used many times over, each using others many times
                notes.append(f"$refs past {max_nodes:,} nodes written out left open (any value)")
                return siblings
            if reference.startswith("#/") or reference == "#":
                target = walk(pointer(schema, reference), (*path, reference))
            else:  # a plain-name fragment (an anchor): the validator resolves it, the posed schema leaves it open
                notes.append(f"$ref {reference} (an anchor) left open")
                return siblings
            if not isinstance(target, dict):
                return target if not siblings else {"allOf": [target], **siblings}
            return {**target, **siblings}
        return {key: walk(value, path) for key, value in node.items()}

    shown = walk({k: v for k, v in schema.items() if k not in _LEFT_OUT}, ())
    sizes.clear()  # `walk` refers to itself, a cycle that holds it until a collection: a count per node, let go now
    if isinstance(shown, dict) and "type" not in shown and any(key in shown for key in OBJECT_KEYWORDS):
        return Sent({**shown, "type": "object"}, [TYPED, *sorted(set(notes))])
    return Sent(shown, sorted(set(notes)))


def schema_output(sent: Sent, check: Callable[[Any], list[str]], *, wrap: bool, again: Callable[[], Sent]) -> type:
    """The output type: any JSON value, accepted when `check` finds no problem (else pydantic's error carrying the
    validator's messages, which a corrective retry sends), whose JSON schema is `sent`'s. With `wrap` (the structured
    modes) a root that is not an object is asked for as `{"response": <schema>}` and the value is unwrapped. `sent`
    is let go once its JSON schema is made (pydantic-ai keeps its own copy to send, so the agents a run keeps hold one,
    not two) and made `again` if it is asked for another time."""
    wrapped = wrap and not sent.object_root
    held = [sent]

    def shown() -> dict[str, Any] | bool:
        made = held.pop() if held else again()
        if wrapped:
            return {"type": "object", "properties": {WRAPPER: made.schema}, "required": [WRAPPER]}
        return made.schema

    def validate(value: Any) -> Any:
        if wrapped:
            if not isinstance(value, dict) or set(value) != {WRAPPER}:
                raise PydanticCustomError(
                    "json_schema", "the value goes in the object's only key, {key}", {"key": WRAPPER}
                )
            value = value[WRAPPER]
        found = check(value)
        if found:
            where = f"{WRAPPER}/" if wrapped else ""
            raise PydanticCustomError("json_schema", "{problems}", {"problems": "; ".join(where + f for f in found)})
        return value

    class SchemaInstance(dict[str, Any]):
        __is_model_like__ = True  # pydantic-ai's mark: its JSON schema is an object, not to be wrapped again

        @classmethod
        def __get_pydantic_core_schema__(cls, source: Any, handler: GetCoreSchemaHandler) -> core_schema.CoreSchema:
            return core_schema.no_info_after_validator_function(validate, core_schema.any_schema())

        @classmethod
        def __get_pydantic_json_schema__(
            cls, core: core_schema.CoreSchema, handler: GetJsonSchemaHandler
        ) -> dict[str, Any]:
            schema = shown()
            return dict(schema) if isinstance(schema, dict) else {}

    return SchemaInstance
