"""The one module that reads pydantic-ai's private modules and attributes (tests/test_pydantic_ai_internals.py fails
when what it reads changes): how an agent builds its output schema and validates an output, and how it prices a
response. `engine/first_request.py` sends a case's first request as the agent would from these."""

from __future__ import annotations

from dataclasses import dataclass, replace
from typing import Any, Literal

from pydantic_ai._genai_prices import calculate_price_for_usage, fill_response_cost
from pydantic_ai._output import ObjectOutputProcessor, OutputSchema, StructuredTextOutputSchema
from pydantic_ai.messages import ModelResponse
from pydantic_ai.output import OutputSpec, StructuredOutputMode
from pydantic_ai.tools import ToolDefinition

__all__ = ["ObjectOutputProcessor", "OutputObject", "fill_response_cost", "known_to_genai_prices", "output_object"]


@dataclass(frozen=True)
class OutputObject:
    """An output of one object type as an agent of it asks for it (`mode`, the output tool in tool mode, the
    prompted template) and validates it (`processor`)."""

    mode: StructuredOutputMode
    tools: list[ToolDefinition]
    processor: ObjectOutputProcessor[Any]
    template: str | Literal[False] | None
    object_def: Any
    allows_text: bool
    allows_image: bool


def output_object(output: OutputSpec[Any]) -> OutputObject | None:
    """The output schema an agent of `output` builds, when it asks for one object type in tool, native or prompted
    mode and validates it with no function or choice of its own; None otherwise (a union, a function, text...).
    pydantic-ai's refusal of the output is raised as an agent's would be."""
    schema: Any = OutputSchema.build(output)
    mode = getattr(schema, "mode", None)
    tools: list[ToolDefinition] = []
    if mode == "tool" and not schema.allows_text:
        toolset = schema.toolset
        stamped = getattr(toolset, "_explicit_id", None)  # as the agent's combined toolset stamps its tools
        tools = [replace(t, toolset_id=t.toolset_id or stamped) for t in getattr(toolset, "_tool_defs", None) or ()]
        processors = getattr(toolset, "processors", None) or {}
        processor = processors.get(tools[0].name) if len(tools) == 1 and len(processors) == 1 else None
    elif mode in ("native", "prompted"):
        processor = getattr(schema, "processor", None)
    else:
        return None
    if type(processor) is not ObjectOutputProcessor or processor._function_schema is not None:
        return None
    if getattr(processor, "_choice_values", None) is not None:
        return None
    template = schema.template if isinstance(schema, StructuredTextOutputSchema) else None
    return OutputObject(mode, tools, processor, template, schema.object_def, schema.allows_text, schema.allows_image)


def known_to_genai_prices(response: ModelResponse) -> bool:
    """Whether genai-prices knows the response's model (its price may still be unknown for this usage), asked as
    pydantic-ai asks it."""
    try:
        calculate_price_for_usage(
            response.usage,
            model_name=response.model_name or "",
            provider_api_url=response.provider_url,
            provider_name=response.provider_name,
        )
    except LookupError:
        return False
    except Exception:  # usage it cannot price (or a failure pydantic-ai warned of): not an unknown model
        return True
    return True
