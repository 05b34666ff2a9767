"""Prompts and values as Nunjucks renders them: `{{var}}` placeholders (dotted names reaching into objects),
`{% raw %}` blocks kept as written, each var written as JavaScript's `String()` writes it."""

from __future__ import annotations

import re
from collections.abc import Mapping
from typing import Any

from typed_eval.core.errors import TaskError
from typed_eval.suites.case_files.js import js_string

__all__ = ["prompt_vars", "render"]


# --- templates ------------------------------------------------------------------------------------------------

_PLACEHOLDER = re.compile(r"\{\{(.*?)\}\}", re.DOTALL)
_RAW_BLOCK = re.compile(r"\{%-?\s*raw\s*-?%\}(.*?)\{%-?\s*endraw\s*-?%\}", re.DOTALL)
_NAME = re.compile(r"[A-Za-z_][A-Za-z0-9_]*(?:\.[A-Za-z_][A-Za-z0-9_]*)*")
"""A var, or a dotted path into an object var (Nunjucks refuses `.1`: a list item is not reached so)."""


def _as_text(value: Any) -> str:
    """A var as Nunjucks writes it: null as nothing, the rest as JavaScript's String() (an object is
    `[object Object]`, a list its items joined by commas)."""
    return "" if value is None else js_string(value)


def _lookup(name: str, variables: Mapping[str, Any], where: str) -> str:
    placeholder = "{{" + name + "}}"
    if "{#" in name or not _NAME.fullmatch(name):
        raise TaskError(
            f"{where}: {placeholder} is not a {{{{name}}}} placeholder (filters and expressions are not supported)"
        )
    value: Any = variables
    for key in name.split("."):
        if isinstance(value, Mapping) and key in value:
            value = value[key]
        else:
            raise TaskError(f"{where}: {placeholder} names no var of this test")
    return _as_text(value)


def render(template: str, variables: Mapping[str, Any], where: str) -> str:
    """Fill `{{name}}` placeholders (dotted names reach into objects) from the vars, as promptfoo's Nunjucks does;
    `{% raw %}...{% endraw %}` is kept as written. Other Nunjucks tags and filters, and names no var has (Nunjucks
    would write nothing), are refused in one line."""
    pieces = _RAW_BLOCK.split(template)
    out: list[str] = []
    for index, piece in enumerate(pieces):
        if index % 2:
            out.append(piece)
            continue
        if "{%" in piece or "{#" in piece:
            raise TaskError(
                f"{where}: Nunjucks tags ({{% ... %}}) and comments ({{# ... #}}) are not supported, only "
                "{{name}} placeholders"
            )
        out.append(_PLACEHOLDER.sub(lambda m: _lookup(m.group(1).strip(), variables, where), piece))
    return "".join(out)


_TEMPLATE_NAMES = re.compile(r"\{\{\s*([^{}\s|]+)\s*(?:\|[^}]+)?\}\}")
_ROOT = re.compile(r"[A-Za-z_]\w*")


def prompt_vars(variables: Mapping[str, Any], where: str) -> dict[str, Any]:
    """The vars a prompt is rendered with: promptfoo renders each text var as a template first (with the vars),
    unless it names a var the test does not have. Assertion values and python's context get the vars unrendered."""
    out = dict(variables)
    for name, value in variables.items():
        if not isinstance(value, str):
            continue
        named = _TEMPLATE_NAMES.findall(re.sub(r"\{#.*?#\}", "", value, flags=re.DOTALL))
        roots = {found.group(0) for found in (_ROOT.match(n) for n in named) if found is not None}
        if any(root != "env" and root not in variables for root in roots):
            continue
        out[name] = render(value, variables, f"{where}, var {name}")
    return out
