"""YAML as promptfoo reads case files: YAML 1.2's core schema (js-yaml's), with merge keys, and bounded.

Why: PyYAML reads YAML 1.1, where `yes` is true, `017` is 15 and `1e3` is text; promptfoo (js-yaml) reads
them as the text `yes`, 17 and 1000. A date (`2024-01-01`) becomes a JavaScript Date there, which promptfoo
renders unlike any text: it is refused, to be quoted. Aliases that expand a small file into a huge one (a
"billion laughs") are refused before anything is built.
"""

from __future__ import annotations

import math
import re
from typing import Any

import yaml
from yaml.nodes import MappingNode, Node, ScalarNode, SequenceNode

__all__ = ["ALIAS_NODES_LIMIT", "YamlError", "load", "load_lenient"]

ALIAS_NODES_LIMIT = 100_000
"""How many nodes aliases may add to a document by repeating what their anchors name."""


class YamlError(ValueError):
    """A document that is not YAML, or one refused here; the message is one line."""


_INT = re.compile(r"[-+]?[0-9]+|0o[0-7]+|0x[0-9a-fA-F]+")
_FLOAT = re.compile(
    r"[-+]?(?:\.[0-9]+|[0-9]+(?:\.[0-9]*)?)(?:[eE][-+]?[0-9]+)?|[-+]?\.(?:inf|Inf|INF)|\.(?:nan|NaN|NAN)"
)
_DATE = re.compile(
    r"[0-9]{4}-[0-9]{2}-[0-9]{2}"
    r"|[0-9]{4}-[0-9]{1,2}-[0-9]{1,2}(?:[Tt]|[ \t]+)[0-9]{1,2}:[0-9]{2}:[0-9]{2}(?:\.[0-9]*)?"
    r"(?:[ \t]*(?:Z|[-+][0-9]{1,2}(?::[0-9]{2})?))?"
)


class _Core(yaml.SafeLoader):
    """YAML 1.2's core schema: null, true/false in three spellings, decimal/0o/0x integers, floats."""

    strict = True


_Core.yaml_implicit_resolvers = {}
for _tag, _pattern, _first in (
    ("tag:yaml.org,2002:null", re.compile(r"~|null|Null|NULL|"), ["~", "n", "N", ""]),
    ("tag:yaml.org,2002:bool", re.compile(r"true|True|TRUE|false|False|FALSE"), list("tTfF")),
    ("tag:yaml.org,2002:int", _INT, list("-+0123456789")),
    ("tag:yaml.org,2002:float", _FLOAT, list("-+.0123456789")),
    ("tag:yaml.org,2002:merge", re.compile(r"<<"), ["<"]),
    ("tag:yaml.org,2002:timestamp", _DATE, list("0123456789")),
):
    _Core.add_implicit_resolver(_tag, re.compile(rf"^(?:{_pattern.pattern})$"), _first)


def _int(loader: yaml.SafeLoader, node: ScalarNode) -> Any:
    text = str(loader.construct_scalar(node))
    if text.startswith(("0o", "0x")):
        value = int(text[2:], 8 if text[1] == "o" else 16)
    else:
        value = int(text)
        if value == 0 and text.startswith("-"):
            return -0.0
    return value if abs(value) <= 2**53 else float(value)  # JavaScript's numbers are doubles


def _float(loader: yaml.SafeLoader, node: ScalarNode) -> Any:
    text = str(loader.construct_scalar(node)).lower()
    if text.endswith(".inf"):
        return -math.inf if text.startswith("-") else math.inf
    if text.endswith(".nan"):
        return math.nan
    return float(text)


def _date(loader: yaml.SafeLoader, node: ScalarNode) -> Any:
    if getattr(loader, "strict", True):
        raise yaml.constructor.ConstructorError(
            None, None, f"{node.value} is a date to promptfoo (a JavaScript Date), not text: quote it", node.start_mark
        )
    return str(node.value)


def _refused(loader: yaml.SafeLoader, node: Node) -> Any:
    raise yaml.constructor.ConstructorError(None, None, f"the tag {node.tag} is not supported", node.start_mark)


def _mapping(loader: yaml.SafeLoader, node: MappingNode) -> Any:
    """A mapping; a key written twice is an error, as in js-yaml (but in JSON-like text, where the last wins)."""
    if getattr(loader, "strict", True):
        loader.flatten_mapping(node)
        seen: set[Any] = set()
        for key_node, _ in node.value:
            key = loader.construct_object(key_node, deep=True)
            if isinstance(key, str | int | float | bool) and key in seen:
                raise yaml.constructor.ConstructorError(
                    None, None, f"duplicated mapping key {key!r}", key_node.start_mark
                )
            seen.add(key if isinstance(key, str | int | float | bool) else id(key))
    return loader.construct_yaml_map(node)


_Core.add_constructor("tag:yaml.org,2002:int", _int)
_Core.add_constructor("tag:yaml.org,2002:float", _float)
_Core.add_constructor("tag:yaml.org,2002:timestamp", _date)
_Core.add_constructor("tag:yaml.org,2002:map", _mapping)
for _tag in ("binary", "set", "omap", "pairs"):
    _Core.add_constructor(f"tag:yaml.org,2002:{_tag}", _refused)


class _Lenient(_Core):
    """How promptfoo reads JSON-like text found in an output (contains-json): duplicate keys allowed, the last
    one kept, and a date kept as the text written."""

    strict = False


def _added_by_aliases(root: Node) -> int:
    """How many nodes aliases add to the document once each is written out as the node it names."""
    sizes: dict[int, int] = {}
    stack: list[tuple[Node, bool]] = [(root, False)]
    open_nodes: set[int] = set()
    while stack:
        node, done = stack.pop()
        key = id(node)
        if done:
            open_nodes.discard(key)
            children = _children(node)
            sizes[key] = 1 + sum(sizes[id(child)] for child in children)
            if sizes[key] - len(sizes) > ALIAS_NODES_LIMIT:
                return sizes[key] - len(sizes)
            continue
        if key in sizes:
            continue
        if key in open_nodes:
            raise YamlError("an alias refers to a node that contains it (a recursive document)")
        open_nodes.add(key)
        stack.append((node, True))
        stack.extend((child, False) for child in _children(node) if id(child) not in sizes)
    return sizes[id(root)] - len(sizes)


def _children(node: Node) -> list[Node]:
    if isinstance(node, SequenceNode):
        return list(node.value)
    if isinstance(node, MappingNode):
        return [part for pair in node.value for part in pair]
    return []


def _load(text: str, loader_class: type[_Core]) -> Any:
    loader = loader_class(text)
    try:
        root = loader.get_single_node()
        if root is None:
            return None
        if _added_by_aliases(root) > ALIAS_NODES_LIMIT:
            raise YamlError(f"its aliases expand it by more than {ALIAS_NODES_LIMIT:,} nodes (refused: an alias bomb)")
        return loader.construct_document(root)
    except yaml.YAMLError as exc:
        raise YamlError(" ".join(str(exc).split())) from None
    except RecursionError:
        raise YamlError("nested too deeply to read") from None
    finally:
        loader.dispose()


def load(text: str) -> Any:
    """A case file's YAML (or JSON) as promptfoo reads it; YamlError in one line."""
    return _load(text, _Core)


def load_lenient(text: str) -> Any:
    """JSON-like text found in a model's output, as promptfoo's contains-json reads it."""
    return _load(text, _Lenient)
