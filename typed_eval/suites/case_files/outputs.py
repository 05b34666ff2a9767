"""A test whose options name a JSON schema is posed in the run's structured mode: the schema as an output type
pydantic validates (references inlined), and the tool's name."""

from __future__ import annotations

import re
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from pydantic import GetCoreSchemaHandler, GetJsonSchemaHandler
from pydantic_core import PydanticCustomError, core_schema

from typed_eval.core.errors import TaskError
from typed_eval.suites.case_files.assertions import (
    load_value_file,
)
from typed_eval.suites.case_files.json_schemas import SchemaProblem, compile_schema

__all__ = ["output_schema_of", "schema_output", "tool_name_of"]


_TOOL_NAME = re.compile(r"[A-Za-z0-9_-]{1,64}")


# --- structured outputs ---------------------------------------------------------------------------------------

_ERROR_TYPES = {"required": "missing", "additionalProperties": "extra_forbidden", "type": "type_error"}
"""jsonschema's failed keyword -> the pydantic error type our invalid-output kinds are read from."""


def schema_output(schema: dict[str, Any], where: str) -> type:
    """A JSON object type for pydantic-ai whose tool (or response format) schema is `schema`, validated by it."""
    if schema.get("type") != "object":
        raise TaskError(f"{where}: an output schema must be a JSON schema of type object")
    try:
        check = compile_schema(schema)
    except SchemaProblem as exc:
        raise TaskError(f"{where}: {exc}") from None
    shown = _inlined(schema, schema, (), where)  # pydantic cannot hand on a schema's own $defs

    def validate(value: dict[str, Any]) -> dict[str, Any]:
        found = sorted(check.iter_errors(value), key=lambda e: list(map(str, e.absolute_path)))
        if found:
            problems = "; ".join(f"{'.'.join(map(str, e.absolute_path)) or 'output'}: {e.message}" for e in found[:3])
            kind = _ERROR_TYPES.get(str(found[0].validator), "value_error")
            raise PydanticCustomError(kind, "{problems}", {"problems": problems})
        return value

    class SchemaOutput(dict[str, Any]):
        __is_model_like__ = True

        @classmethod
        def __get_pydantic_core_schema__(cls, source: Any, handler: GetCoreSchemaHandler) -> core_schema.CoreSchema:
            mapping = core_schema.dict_schema(
                keys_schema=core_schema.str_schema(), values_schema=core_schema.any_schema()
            )
            return core_schema.no_info_after_validator_function(validate, mapping)

        @classmethod
        def __get_pydantic_json_schema__(
            cls, core: core_schema.CoreSchema, handler: GetJsonSchemaHandler
        ) -> dict[str, Any]:
            return dict(shown)

    return SchemaOutput


def _inlined(node: Any, root: dict[str, Any], seen: tuple[str, ...], where: str) -> Any:
    """`node` with every local `$ref` (`#/$defs/...`, `#/definitions/...`) replaced by what it names; a recursive
    schema cannot be written out so, and is refused."""
    if isinstance(node, list):
        return [_inlined(item, root, seen, where) for item in node]
    if not isinstance(node, dict):
        return node
    reference = node.get("$ref")
    if isinstance(reference, str):
        if reference in seen:
            raise TaskError(f"{where}: a recursive output schema ({reference}) is not supported")
        target: Any = root
        for part in reference.removeprefix("#/").split("/"):
            target = target.get(part) if isinstance(target, dict) else None
        if not reference.startswith("#/") or not isinstance(target, dict):
            raise TaskError(f"{where}: the output schema's {reference} names nothing in it")
        rest = {k: v for k, v in node.items() if k != "$ref"}
        return _inlined({**target, **rest}, root, (*seen, reference), where)
    dropped = ("$defs", "definitions") if node is root else ()
    return {k: _inlined(v, root, seen, where) for k, v in node.items() if k not in dropped}


def output_schema_of(options: Mapping[str, Any], base: Path, where: str) -> tuple[dict[str, Any], str] | None:
    """The JSON schema a test's options name, with its name: `output_schema`, or OpenAI's `response_format`."""
    if "output_schema" in options:
        schema = options["output_schema"]
        if isinstance(schema, str) and schema.startswith("file://"):
            schema = load_value_file(schema, base, where)
        if not isinstance(schema, dict):
            raise TaskError(f"{where}: options.output_schema must be a JSON schema (an object) or file://schema.json")
        return schema, str(schema.get("title") or "final_result")
    form = options.get("response_format")
    if form is None:
        return None
    if isinstance(form, str) and form.startswith("file://"):
        form = load_value_file(form, base, where)
    if isinstance(form, Mapping) and form.get("type") == "json_object":
        return {"type": "object"}, "final_result"
    inner = form.get("json_schema") if isinstance(form, Mapping) and form.get("type") == "json_schema" else None
    if not isinstance(inner, Mapping) or not isinstance(inner.get("schema"), dict):
        raise TaskError(
            f"{where}: options.response_format must be {{type: json_schema, json_schema: {{name, schema}}}}"
            " or {type: json_object}"
        )
    return inner["schema"], str(inner.get("name") or "final_result")


def tool_name_of(name: str) -> str:
    return name if _TOOL_NAME.fullmatch(name) else "final_result"
