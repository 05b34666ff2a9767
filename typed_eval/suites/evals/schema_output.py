"""The output type a dataset file names through its `$schema`: `Dataset.to_file` writes, beside the dataset, the JSON
Schema of its cases, where `expected_output` is the output type's schema (`Answer` in its `$defs`). With no
`--output-type`, that schema is posed as the output (a `StructuredDict` of it: outputs are JSON objects, not
instances of the class). Only the reference is read from the dataset file (the YAML comment
`# yaml-language-server: $schema=FILE`, or the JSON key `$schema`); the dataset itself is pydantic_evals' to read.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from pydantic_ai import StructuredDict

from typed_eval.core.errors import InputError
from typed_eval.core.files import FileTooLarge, NotRegularFile, read_regular
from typed_eval.suites.evals.loading import MAX_DATASET_BYTES

__all__ = ["schema_output"]

YAML_REFERENCE = "$schema="


def schema_output(path: Path) -> Any | None:
    """The output type the dataset's `$schema` describes; None when it names none (no schema file beside it, or an
    expected output of any type, or text)."""
    reference = _reference(path)
    if reference is None or "://" in reference:
        return None
    try:
        schema = json.loads(read_regular(path.parent / reference, MAX_DATASET_BYTES))
        expected = schema["$defs"]["Case"]["properties"]["expected_output"]
    except (NotRegularFile, FileTooLarge) as exc:  # named, but no schema file: the user's to fix
        raise InputError(f"dataset {path}: its $schema {reference!r}: {exc.strerror}") from None
    except (OSError, ValueError, KeyError, TypeError):
        return None
    if not isinstance(expected, dict) or not isinstance(schema["$defs"], dict):
        return None  # a file edited by hand: not a schema `to_file` writes
    options = [one for one in expected.get("anyOf", [expected]) if one != {"type": "null"}]
    if len(options) != 1 or not isinstance(options[0], dict) or options[0] in ({}, {"type": "string"}):
        return None
    defs = schema["$defs"]
    root = options[0]
    name = root["$ref"].rsplit("/", 1)[-1] if isinstance(root.get("$ref"), str) else None
    found = defs.get(name, root) if name is not None else root
    body = dict(found) if isinstance(found, dict) else {}
    if body.get("type") != "object":
        return None  # a list or a number: posed as text unless --output-type names it
    used = _reachable(body, defs)
    if used:
        body["$defs"] = used
    return StructuredDict(body, name=name or "Output", description=body.get("description"))


def _reference(path: Path) -> str | None:
    try:
        text = read_regular(path, MAX_DATASET_BYTES).decode("utf-8")
    except (OSError, UnicodeDecodeError):  # said when the dataset itself is read
        return None
    if path.suffix.lower() == ".json":
        try:
            found = json.loads(text).get("$schema")
        except (ValueError, AttributeError):
            return None
        return found if isinstance(found, str) else None
    for line in text.splitlines():
        if not line.startswith("#"):
            break
        if YAML_REFERENCE in line:
            return line.split(YAML_REFERENCE, 1)[1].strip()
    return None


def _reachable(schema: Any, defs: dict[str, Any]) -> dict[str, Any]:
    """The `$defs` the schema refers to, directly or through each other."""
    found: dict[str, Any] = {}
    waiting = [schema]
    while waiting:
        node = waiting.pop()
        if isinstance(node, dict):
            ref = node.get("$ref")
            if isinstance(ref, str) and ref.startswith("#/$defs/"):
                name = ref.removeprefix("#/$defs/")
                if name in defs and name not in found:
                    found[name] = defs[name]
                    waiting.append(defs[name])
            waiting.extend(node.values())
        elif isinstance(node, list):
            waiting.extend(node)
    return found
