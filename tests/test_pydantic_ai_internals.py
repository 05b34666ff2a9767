"""What `typed_eval/providers/pydantic_ai_internals.py` reads of pydantic-ai's private modules is still there and
means the same: a pydantic-ai that changes it fails here (CI runs this with the pydantic-ai the `evals` extra pins
and with the newest a plain install resolves), not in a run that would quietly ask through an agent instead."""

from __future__ import annotations

import json
from decimal import Decimal
from typing import Any

from pydantic import BaseModel
from pydantic_ai import NativeOutput, PromptedOutput, TextOutput, ToolOutput
from pydantic_ai._output import OutputSchema
from pydantic_ai.messages import ModelResponse, TextPart
from pydantic_ai.usage import RequestUsage

from typed_eval.providers.pydantic_ai_internals import (
    ObjectOutputProcessor,
    fill_response_cost,
    known_to_genai_prices,
    output_object,
)


class Answer(BaseModel):
    value: int


def test_an_output_of_one_type_is_asked_and_validated_as_the_agent_does_in_each_mode() -> None:
    tool, native, prompted = (output_object(spec(Answer)) for spec in (ToolOutput, NativeOutput, PromptedOutput))
    assert tool is not None and native is not None and prompted is not None
    assert (tool.mode, native.mode, prompted.mode) == ("tool", "native", "prompted")
    schema = {"properties": {"value": {"type": "integer"}}, "required": ["value"], "title": "Answer", "type": "object"}
    assert [(t.name, t.kind, t.toolset_id, t.parameters_json_schema) for t in tool.tools] == [
        ("final_result", "output", "<output>", schema)
    ]
    assert (native.tools, prompted.tools, tool.object_def) == ([], [], None)
    assert (tool.template, native.template, prompted.template) == (None, None, None)  # the agent's default template
    assert native.object_def is not None and prompted.object_def is not None
    assert (native.object_def.json_schema, prompted.object_def.json_schema) == (schema, schema)
    allowed = [(found.allows_text, found.allows_image) for found in (tool, native, prompted)]
    assert allowed == [(False, False), (True, False), (True, False)]  # the text modes read the output from the text
    for found in (tool, native, prompted):
        output: Any = found.processor.validate(json.dumps({"value": 3}), validation_context=None)
        assert output == Answer(value=3)


def test_the_private_attributes_it_reads_are_there() -> None:
    schema: Any = OutputSchema.build(ToolOutput(Answer, name="answer"))
    toolset = schema.toolset
    assert [t.name for t in toolset._tool_defs] == ["answer"]  # read with getattr's default in the adapter: here not
    assert list(toolset.processors) == ["answer"]
    assert hasattr(toolset, "_explicit_id")
    processor = toolset.processors["answer"]
    assert type(processor) is ObjectOutputProcessor
    assert (processor._function_schema, getattr(processor, "_choice_values", None)) == (None, None)
    native: Any = OutputSchema.build(NativeOutput(Answer))
    assert type(native.processor) is ObjectOutputProcessor


def test_outputs_it_leaves_to_the_agent_are_none() -> None:
    def shout(text: str) -> str:
        return text.upper()

    assert output_object(str) is None
    assert output_object(Answer) is None  # a plain type: the agent picks the mode ("auto")
    assert output_object(TextOutput(shout)) is None
    assert output_object([Answer, int]) is None  # a union: more than one output tool


def test_a_response_is_priced_as_pydantic_ai_prices_it() -> None:
    known, unknown = (
        ModelResponse(parts=[TextPart("hi")], usage=RequestUsage(input_tokens=10**6, output_tokens=10**6),
                      model_name=name, provider_name="openai")
        for name in ("gpt-4o-mini", "no-such-model")
    )  # fmt: skip
    assert (known_to_genai_prices(known), known_to_genai_prices(unknown)) == (True, False)
    fill_response_cost(known)
    fill_response_cost(unknown)
    assert (known.usage.cost, unknown.usage.cost) == (Decimal("0.75"), None)  # $0.15 + $0.60 per million
