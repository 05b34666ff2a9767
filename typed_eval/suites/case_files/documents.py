"""What a case file's values hold before they are posed: `file://` var files (media refused), `{{name}}` inside
a var filled from the others, and `$ref`s dereferenced."""

from __future__ import annotations

import re
from collections.abc import Mapping
from typing import Any
from urllib.parse import unquote

from typed_eval.core.errors import TaskError
from typed_eval.suites.case_files.js import js_string

__all__ = ["MEDIA", "dereferenced", "resolved"]


MEDIA = (
    ".jpg",
    ".jpeg",
    ".png",
    ".gif",
    ".bmp",
    ".webp",
    ".svg",
    ".tif",
    ".tiff",
    ".ico",
    ".avif",
    ".heic",
    ".heif",
    ".mp3",
    ".wav",
    ".m4a",
    ".ogg",
    ".flac",
    ".mp4",
    ".webm",
    ".mov",
    ".avi",
    ".mkv",
)
"""Var files promptfoo sends as base64 data: refused."""
_VAR_PLACEHOLDER = re.compile(r"\{\{\s*(\w+)\s*\}\}", re.ASCII)


def resolved(variables: dict[str, Any]) -> dict[str, Any]:
    """promptfoo's `resolveVariables`: up to five rounds in which each text var's first `{{name}}` naming a var
    is replaced by that var's text (JavaScript's String()); a first placeholder naming no var stops that var."""
    for _ in range(5):
        changed = False
        for key, value in variables.items():
            if not isinstance(value, str):
                continue
            found = _VAR_PLACEHOLDER.search(value)
            if found and found.group(1) in variables:
                start, end = found.span()
                filling = _js_replacement(js_string(variables[found.group(1)]), value, start, end)
                variables[key] = value[:start] + filling + value[end:]
                changed = True
        if not changed:
            break
    return variables


def _js_replacement(text: str, subject: str, start: int, end: int) -> str:
    """JavaScript's `replace` reads `$$`, `$&`, `` $` `` and `$'` in a replacement text as patterns."""
    patterns = {"$": "$", "&": subject[start:end], "`": subject[:start], "'": subject[end:]}
    return re.sub(r"\$([$&`'])", lambda m: patterns[m.group(1)], text)


_REF_NODES_LIMIT = 1_000_000
"""How many values a case file may hold once its $refs are written out."""


def dereferenced(document: Any, where: str) -> Any:
    """The document with every `{$ref: "#/pointer"}` replaced by what the pointer names in it, as promptfoo
    dereferences a case file (json-schema-ref-parser) before reading it: a pointer is read from the file's root,
    not from the schema it is in. References to other files or URLs, to nothing, to themselves, or with keys
    beside them are refused."""

    def target(pointer: str) -> Any:
        found: Any = document
        for raw in pointer.removeprefix("#").split("/")[1:]:
            key = unquote(raw).replace("~1", "/").replace("~0", "~")
            if isinstance(found, Mapping) and key in found:
                found = found[key]
            elif isinstance(found, list) and key.isdigit() and int(key) < len(found):
                found = found[int(key)]
            else:
                raise TaskError(
                    f"{where}: $ref {pointer!r} names nothing in the file (promptfoo reads it from the file's root)"
                )
        return found

    made = [0]

    def walk(node: Any, seen: tuple[str, ...]) -> Any:
        made[0] += 1
        if made[0] > _REF_NODES_LIMIT:
            raise TaskError(f"{where}: its $refs expand it beyond {_REF_NODES_LIMIT:,} nodes (refused: a $ref bomb)")
        if isinstance(node, list):
            return [walk(item, seen) for item in node]
        if not isinstance(node, Mapping):
            return node
        reference = node.get("$ref")
        if isinstance(reference, str):
            if not reference.startswith("#"):
                raise TaskError(f"{where}: $ref {reference!r}: only references into the file itself are supported")
            if len(node) > 1:
                raise TaskError(f"{where}: $ref {reference!r} with keys beside it is not supported")
            if reference in seen:
                raise TaskError(f"{where}: $ref {reference!r} refers to itself (a recursive schema is not supported)")
            return walk(target(reference), (*seen, reference))
        return {key: walk(value, seen) for key, value in node.items()}

    try:
        return walk(document, ())
    except RecursionError:
        raise TaskError(f"{where}: it is nested too deeply") from None
