#!/usr/bin/env python3
"""An agentic benchmark of one page, built on `evaluator`: a shop's support agent talks to a simulated customer,
acts on the shop's orders through tools, and is scored on the orders it leaves, three trials a case (pass^k).

    python examples/support_desk.py                                   # offline: scripted agent and customer
    python examples/support_desk.py openai:gpt-4o-mini                # a real agent; the customer too

The environment is any object with `tools(requestor)` and `call(requestor, call_id, name, arguments)`; the loop is
`evaluator.converse` (τ-bench's orchestrator); the scorer reads the final state the session returns.
"""

from __future__ import annotations

import asyncio
import json
import sys
from typing import Any

from pydantic_ai import ModelMessage, ModelResponse, TextPart, ToolCallPart, ToolReturnPart
from pydantic_ai.models import Model, infer_model
from pydantic_ai.models.function import AgentInfo, FunctionModel

import evaluator
from evaluator import Case, SimulatedUser, Task, ToolResult

POLICY = "You are the support agent of a shop. Cancel an order only when its customer asks for it, then confirm."
CANCEL = {
    "name": "cancel_order",
    "description": "Cancel an order that has not shipped.",
    "parameters": {"type": "object", "properties": {"order_id": {"type": "string"}}, "required": ["order_id"]},
}
CASES = [
    Case(id="cancel-a1", prompt="You want order A1 cancelled.", expected={"A1": "cancelled", "B2": "pending"}),
    Case(id="keep-all", prompt="You only ask when B2 ships.", expected={"A1": "pending", "B2": "pending"}),
]


class Shop:
    """Two pending orders; the agent may cancel them, the customer has no tools of their own."""

    def __init__(self) -> None:
        self.orders = {"A1": "pending", "B2": "pending"}

    def tools(self, requestor: str) -> list[dict[str, Any]]:
        return [CANCEL] if requestor == "assistant" else []

    def call(self, requestor: str, call_id: str, name: str, arguments: dict[str, Any]) -> ToolResult:
        order = str(arguments.get("order_id"))
        if name != "cancel_order" or order not in self.orders:
            return ToolResult(f"Error: cannot {name} {order}", error=True)
        self.orders[order] = "cancelled"
        return ToolResult(json.dumps({"order_id": order, "status": "cancelled"}))


def shop_task(customer: SimulatedUser) -> Task[Any]:
    """Each case a conversation on a fresh shop; the score is whether the orders end as the case expects."""

    async def session(case: Case, conversation: Any) -> dict[str, Any]:
        shop = Shop()
        transcript = await evaluator.converse(conversation, shop, customer, policy=POLICY, scenario=case.prompt)
        return {"orders": shop.orders, **transcript.dump()}

    return Task(
        name="support-desk",
        output_type=dict[str, Any],
        score=lambda case, output: float(output["orders"] == case.expected),
        session=session,
    )


def scripted_agent(messages: list[ModelMessage], info: AgentInfo) -> ModelResponse:
    """Cancels A1 when the customer's message names it, then confirms; otherwise answers in words."""
    last = messages[-1].parts[-1]
    if isinstance(last, ToolReturnPart):
        return ModelResponse(parts=[TextPart("Done: your order is cancelled.")])
    if "A1" in str(getattr(last, "content", "")):
        return ModelResponse(parts=[ToolCallPart("cancel_order", {"order_id": "A1"})])
    return ModelResponse(parts=[TextPart("B2 ships tomorrow.")])


def scripted_customer(messages: list[ModelMessage], info: AgentInfo) -> ModelResponse:
    """Says what its scenario wants, then stops once answered."""
    if len(messages) > 2:
        return ModelResponse(parts=[TextPart("Thanks! ###STOP###")])
    scenario = str(getattr(messages[0].parts[0], "content", ""))
    return ModelResponse(parts=[TextPart("Please cancel A1." if "A1" in scenario else "When does B2 ship?")])


async def main(model: Model | str) -> evaluator.EvaluationResult:
    customer_model = FunctionModel(scripted_customer) if isinstance(model, FunctionModel) else model
    customer = SimulatedUser(customer_model if isinstance(customer_model, Model) else infer_model(customer_model),
                             "customer")  # fmt: skip
    return await evaluator.evaluate(shop_task(customer), CASES, model, repeats=3)


if __name__ == "__main__":
    chosen: Model | str = sys.argv[1] if len(sys.argv) > 1 else FunctionModel(scripted_agent)
    result = asyncio.run(main(chosen))
    reliability = evaluator.pass_hat_k(result.records)
    print(f"score {result.scores.score}; " + ", ".join(f"pass^{f.k} {f.value:.1f}" for f in reliability.overall))
