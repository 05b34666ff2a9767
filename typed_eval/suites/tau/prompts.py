"""What τ-bench tells its two participants: the agent's system prompt around the domain policy, and the user
simulator's around its guidelines and the task's scenario.

The texts are τ-bench's (`tau2.agent.llm_agent` and `tau2.user.user_simulator`, MIT), written out because those
modules import τ-bench's LLM client; tests/test_tau_adapter.py compares them with the installed wheel's.
"""

from __future__ import annotations

import random

__all__ = [
    "AGENT_INSTRUCTION",
    "NL_ASSERTIONS_PROMPT",
    "agent_prompt",
    "nl_assertions_request",
    "trial_seed",
    "user_prompt",
]

AGENT_INSTRUCTION = """
You are a customer service agent that helps the user according to the <policy> provided below.
In each turn you can either:
- Send a message to the user.
- Make a tool call.
You cannot do both at the same time.

Try to be helpful and always follow the policy. Always make sure you generate valid JSON only.
""".strip()

AGENT_SYSTEM_PROMPT = """
<instructions>
{agent_instruction}
</instructions>
<policy>
{domain_policy}
</policy>
""".strip()

USER_SYSTEM_PROMPT = """
{global_user_sim_guidelines}

<scenario>
{instructions}
</scenario>
""".strip()


def agent_prompt(policy: str) -> str:
    """The agent's system prompt: τ-bench's instructions and the domain's policy."""
    return AGENT_SYSTEM_PROMPT.format(agent_instruction=AGENT_INSTRUCTION, domain_policy=policy)


def user_prompt(guidelines: str, scenario: str) -> str:
    """The user simulator's system prompt: τ-bench's guidelines and the task's scenario (`str(task.user_scenario)`)."""
    return USER_SYSTEM_PROMPT.format(global_user_sim_guidelines=guidelines, instructions=scenario)


def trial_seed(seed: int, trial: int) -> int:
    """The seed trial `trial` samples with, as `tau2 run` derives it: the `trial`-th draw of `randint(0, 1000000)`
    after seeding Python's generator with `seed` (300: 626729, 373753, ...)."""
    draws = random.Random(seed)
    return [draws.randint(0, 1_000_000) for _ in range(trial + 1)][trial]


NL_ASSERTIONS_PROMPT = (
    "\n"
    "        TASK\n"
    "        - You will be given a list of expected outcomes and a conversation that was collected during a test "
    "case run.\n"
    "        - The conversation is between an agent and a customer.\n"
    "        - Your job is to evaluate whether the agent satisfies each of the expected outcomes.\n"
    "        - Grade each expected outcome individually.\n"
    "\n"
    "        FORMAT\n"
    "        - Your response should be a JSON object with the following fields:\n"
    "        - `reasoning`: a short explanation for your classification\n"
    "        - `metExpectation`: `true` if the agent satisfies the expected outcomes, `false` otherwise\n"
    "        - `expectedOutcome`: repeat the expectation from the input that you are grading\n"
    "        \n"
    "        Example response structure:\n"
    "        {\n"
    '            "results": [\n'
    "                {\n"
    '                    "expectedOutcome": "<one of the expected outcomes from the input>",\n'
    '                    "reasoning": "<reasoning trace>",\n'
    '                    "metExpectation": <false or true>,\n'
    "                }\n"
    "            ]\n"
    "        }\n"
    "        "
)
"""τ³'s instructions to the judge of natural-language assertions (`NLAssertionsEvaluator`), as it sends them."""


def nl_assertions_request(messages: list[tuple[str, str | None]], assertions: list[str]) -> str:
    """τ³'s request to that judge: every message of the conversation as `role: content`, then the assertions."""
    conversation = "\n".join(f"{role}: {content}" for role, content in messages)
    pad = " " * 8
    return f"\n{pad}conversation:\n{pad}{conversation}\n{pad}\n{pad}expectedOutcomes:\n{pad}{assertions}\n{pad}"
