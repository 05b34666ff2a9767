"""What a schema uses, measured once per case and carried in its metadata (so every record says it): the keywords
that make a schema hard to fill (`$ref` and recursion, the combinators, `enum`/`const`, `pattern`, `format`, numeric
and length bounds, `additionalProperties: false`, arrays of objects), how deep an instance nests, and how many
properties and required names it declares.

The profile reads binary features: the keywords as they are, and the counts cut at stated thresholds (`THRESHOLDS`):
a schema nesting 4 levels or more, declaring 20 properties or more, or 5 required names or more. Keywords are looked
for in every subschema of the document (`$defs` included); the depth follows local `$ref`s from the root, a `$ref`
back into its own path being the recursion (unrolled once for the depth). Nothing is fetched.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

from typed_eval.contracts import SampleRecord
from typed_eval.core.suite import CaseFacets
from typed_eval.suites.schemas.data import MODEL, OWN

__all__ = ["FEATURES", "KEY", "THRESHOLDS", "facet_names", "record_facets", "schema_features"]

KEY = "features"
"""The case metadata key holding a schema's features."""

THRESHOLDS = {"depth": 4, "properties": 20, "required": 5}
"""A count at or above its threshold is the binary feature `<count>>=<threshold>`."""

FEATURES = (
    "$ref",
    "recursion",
    "anyOf",
    "oneOf",
    "allOf",
    "enum",
    "const",
    "pattern",
    "format",
    "numeric bounds",
    "length bounds",
    "additionalProperties false",
    "array of objects",
)
"""The keyword features, in the order the profile lists them (the thresholded counts follow)."""

MAX_DEPTH = 64
"""Subschemas deep the depth's walk goes before it stops counting (a schema deeper than this reads as less deep)."""

_SCHEMA_MAPS = ("properties", "patternProperties", "$defs", "definitions", "dependentSchemas")
_SCHEMA_ONE = ("additionalProperties", "additionalItems", "contains", "propertyNames", "not", "if", "then", "else",
               "unevaluatedItems", "unevaluatedProperties")  # fmt: skip
_SCHEMA_LISTS = ("anyOf", "oneOf", "allOf", "prefixItems")
_NESTING = ("properties", "patternProperties", "additionalProperties", "items", "prefixItems", "additionalItems",
            "contains", "unevaluatedItems", "unevaluatedProperties")  # fmt: skip
"""Keywords whose subschemas describe a value one level down in the instance."""
_NUMERIC = ("minimum", "maximum", "exclusiveMinimum", "exclusiveMaximum", "multipleOf")
_LENGTH = ("minLength", "maxLength", "minItems", "maxItems", "minProperties", "maxProperties")


def _children(node: dict[str, Any]) -> Iterator[tuple[str, Any]]:
    """Each subschema of a schema object, with the keyword it sits under."""
    for key in _SCHEMA_MAPS:
        values = node.get(key)
        if isinstance(values, dict):
            yield from ((key, value) for value in values.values())
    for key in _SCHEMA_ONE:
        if key in node:
            yield key, node[key]
    for key in _SCHEMA_LISTS:
        if isinstance(node.get(key), list):
            yield from ((key, value) for value in node[key])
    items = node.get("items")
    if isinstance(items, list):  # draft 4-7 tuples
        yield from (("items", value) for value in items)
    elif items is not None:
        yield "items", items
    dependencies = node.get("dependencies")
    if isinstance(dependencies, dict):  # draft 4-7: a schema, or a list of names
        yield from (("dependencies", value) for value in dependencies.values() if isinstance(value, dict))


def _subschemas(schema: Any) -> Iterator[dict[str, Any]]:
    """Every schema object of the document, once each (a walk of the document, not of its references)."""
    stack = [schema]
    while stack:
        node = stack.pop()
        if isinstance(node, dict):
            yield node
            stack.extend(value for _, value in _children(node))


def _resolve(root: Any, ref: Any) -> Any:
    """The subschema a local `$ref` (`#`, `#/json/pointer`) names, or None (remote, an anchor, not a text, or nothing
    there)."""
    if not isinstance(ref, str) or not ref.startswith("#") or (len(ref) > 1 and not ref.startswith("#/")):
        return None
    node = root
    for part in ref[2:].split("/") if len(ref) > 1 else ():
        part = part.replace("~1", "/").replace("~0", "~")
        if isinstance(node, dict) and part in node:
            node = node[part]
        elif isinstance(node, list) and part.isdigit() and int(part) < len(node):
            node = node[int(part)]
        else:
            return None
    return node


def _is_object(node: Any) -> bool:
    if not isinstance(node, dict):
        return False
    kind = node.get("type")
    return kind == "object" or (isinstance(kind, list) and "object" in kind) or isinstance(node.get("properties"), dict)


class _Depth:
    """How many levels an instance nests, following local `$ref`s; a `$ref` back into its own path is recursion."""

    def __init__(self, root: Any) -> None:
        self.root = root
        self.recursive = False
        self.objects_in_arrays = False
        self._path: list[int] = []
        self._known: dict[int, int] = {}

    def of(self, node: Any) -> int:
        if not isinstance(node, dict) or len(self._path) >= MAX_DEPTH:
            return 0
        if id(node) in self._path:
            self.recursive = True
            return 0
        if id(node) in self._known:
            return self._known[id(node)]
        self._path.append(id(node))
        deepest = self.of(_resolve(self.root, node.get("$ref")))
        for key, child in _children(node):
            if key in ("$defs", "definitions"):
                continue
            target = _resolve(self.root, child["$ref"]) if isinstance(child, dict) and "$ref" in child else child
            if key == "items" and _is_object(target):
                self.objects_in_arrays = True
            deepest = max(deepest, self.of(child) + (key in _NESTING and isinstance(child, dict)))
        self._path.pop()
        self._known[id(node)] = deepest
        return deepest


def schema_features(schema: Any) -> dict[str, int | bool]:
    """The schema's counts (`depth`, `properties`, `required`) and keyword features (`FEATURES`, True or False)."""
    nodes = list(_subschemas(schema))
    keys = set().union(*(node.keys() for node in nodes)) if nodes else set()
    depth = _Depth(schema)
    levels = depth.of(schema)
    combinators = {name: name in keys for name in ("anyOf", "oneOf", "allOf", "enum", "const", "pattern", "format")}
    return {
        "depth": levels,
        "properties": sum(len(n["properties"]) for n in nodes if isinstance(n.get("properties"), dict)),
        "required": sum(len(n["required"]) for n in nodes if isinstance(n.get("required"), list)),
        "$ref": "$ref" in keys,
        "recursion": depth.recursive,
        **combinators,
        "numeric bounds": bool(keys.intersection(_NUMERIC)),
        "length bounds": bool(keys.intersection(_LENGTH)),
        "additionalProperties false": any(n.get("additionalProperties") is False for n in nodes),
        "array of objects": depth.objects_in_arrays,
    }


def facet_names(features: dict[str, Any]) -> tuple[str, ...]:
    """The binary features a schema has: its keyword features, then each count at or above its threshold."""
    having = [name for name in FEATURES if features.get(name) is True]
    for count, threshold in THRESHOLDS.items():
        value = features.get(count)
        if isinstance(value, int) and not isinstance(value, bool) and value >= threshold:
            having.append(f"{count}>={threshold}")
    return tuple(having)


def record_facets(record: SampleRecord) -> CaseFacets | None:
    """A record's schema features for the profile (`Suite.facets`): the user's own schemas (groups `own`, `model`)
    are set beside it; a schema that could not be read has none."""
    features = record.metadata.get(KEY)
    if not isinstance(features, dict):
        return None
    return CaseFacets(facet_names(features), placed=record.group in (OWN, MODEL))
