"""Function-calling mode as BFCL's OpenAI-compatible handler runs it: the case's docs as tools, the calls decoded.

Two steps turn a case's function docs into the request's tools. BFCL's dataset loader first adds a language hint
to every description and, for Java and JavaScript, poses every parameter as a string holding the language's
literal (its element type or object schema moved into the description). Its function-calling handler then maps
BFCL's types to JSON schema (`dict` -> `object`, `float` -> `number` with `format: float`, `tuple` -> `array`,
Java and JavaScript types to their JSON kin, anything unknown -> `string`), sets `parameters.type` to `object`,
and replaces the dots of a function's name with underscores (OpenAI-style names allow no dot). The docs given
are never changed: each step works on a copy.
"""

from __future__ import annotations

import copy
import json
from collections.abc import Sequence
from typing import Any

from typed_eval.suites.bfcl.checker import Decoded

__all__ = [
    "JSON_SCHEMA_TYPES",
    "decode_tool_calls",
    "hinted_functions",
    "language_hint",
    "tool_name",
    "tools_for",
]

JSON_SCHEMA_TYPES: dict[str, str] = {  # BFCL's type names -> JSON schema's
    "integer": "integer",
    "number": "number",
    "float": "number",
    "string": "string",
    "boolean": "boolean",
    "bool": "boolean",
    "array": "array",
    "list": "array",
    "dict": "object",
    "object": "object",
    "tuple": "array",
    "any": "string",
    "byte": "integer",
    "short": "integer",
    "long": "integer",
    "double": "number",
    "char": "string",
    "ArrayList": "array",
    "Array": "array",
    "HashMap": "object",
    "Hashtable": "object",
    "Queue": "array",
    "Stack": "array",
    "Any": "string",
    "String": "string",
    "Bigint": "integer",
}
FLOAT_NOTE = " This is a float type value."
NOT_A_STRING = "they are not in string representation."


def language_hint(category: str) -> str:
    """The sentence BFCL appends to every function's description."""
    if "javascript" in category:
        return " Note that the provided function is in JavaScript syntax."
    if "java" in category:
        return " Note that the provided function is in Java 8 SDK syntax."
    return " Note that the provided function is in Python 3 syntax."


def hinted_functions(functions: Sequence[dict[str, Any]], category: str) -> list[dict[str, Any]]:
    """The docs as BFCL's loader poses them (both modes): language hint added; Java and JavaScript parameters
    made strings, their element type or object schema said in the description instead."""
    docs = copy.deepcopy(list(functions))
    language = "JavaScript" if "javascript" in category else "Java" if "java" in category else None
    for doc in docs:
        doc["description"] = doc.get("description", "") + language_hint(category)
        if language is None:
            continue
        for details in doc["parameters"]["properties"].values():
            declared = details.get("type")
            note = (
                f" This parameter can be of any type of {language} object in string representation."
                if declared == "any"
                else f" This is {language} {declared} type parameter in string representation."
            )
            details["description"] = details.get("description", "") + note
            if declared in (("ArrayList", "Array") if language == "Java" else ("array",)) and "items" in details:
                item_type = details["items"].get("type")
                details["description"] += f" The list elements are of type {item_type}; {NOT_A_STRING}"
                del details["items"]
            if language == "JavaScript" and declared == "dict" and "properties" in details:
                schema = json.dumps(details["properties"])
                details["description"] += f" The dictionary entries have the following schema; {NOT_A_STRING} {schema}"
                del details["properties"]
            details["type"] = "string"
    return docs


def tool_name(name: str) -> str:
    """A function's name as a tool: dots replaced by underscores."""
    return name.replace(".", "_")


def tools_for(functions: Sequence[dict[str, Any]], category: str) -> list[dict[str, Any]]:
    """The `tools` of BFCL's chat-completions request for a case: `[{"type": "function", "function": ...}]`."""
    tools = []
    for doc in hinted_functions(functions, category):
        doc["name"] = tool_name(doc["name"])
        doc["parameters"]["type"] = "object"
        doc["parameters"]["properties"] = json_schema_properties(doc["parameters"]["properties"])
        tools.append({"type": "function", "function": doc})
    return tools


def json_schema_properties(properties: dict[str, Any]) -> dict[str, Any]:
    """Each property's type mapped (in place), nested object properties and array items too, as BFCL does:
    two levels of array items, object properties at any depth."""
    for details in properties.values():
        declared = details.get("type")
        if declared is None:
            details["type"] = "string"
        else:
            if declared == "float":
                details["format"] = "float"
                details["description"] = details.get("description", "") + FLOAT_NOTE
            details["type"] = JSON_SCHEMA_TYPES.get(declared, "string")
        if details["type"] not in ("array", "object"):
            continue
        if "properties" in details:
            details["properties"] = json_schema_properties(details["properties"])
        elif "items" in details:
            items = details["items"]
            items["type"] = JSON_SCHEMA_TYPES.get(items.get("type", ""), "string")
            if items["type"] == "array" and "items" in items:
                items["items"]["type"] = JSON_SCHEMA_TYPES.get(items["items"].get("type", ""), "string")
            elif items["type"] == "object" and "properties" in items:
                items["properties"] = json_schema_properties(items["properties"])
    return properties


def decode_tool_calls(tool_calls: Sequence[tuple[str, str]] | None, content: str | None) -> Decoded:
    """A function-calling reply decoded as BFCL's handler decodes it: each call's arguments read as JSON.

    `tool_calls` are the reply's (name, arguments JSON) pairs, None when the reply had no `tool_calls` field; then
    BFCL decodes the text content instead, which fails unless it is empty (an empty text decodes as no call).
    """
    if tool_calls is None:
        if content == "":
            return Decoded(calls=[])
        return Decoded(error="the reply has no tool calls" if content is None else "the reply is text, not tool calls")
    calls = []
    for name, arguments in tool_calls:
        try:
            calls.append({name: json.loads(arguments)})
        except (ValueError, RecursionError) as error:
            return Decoded(error=f"the arguments of {name!r} are not JSON: {str(error).splitlines()[0][:200]}")
    return Decoded(calls=calls)
