"""The comparison with BFCL's own pipeline (benchmarks/bfcl_single_turn.py), without BFCL or the network: the mock
server answers a conversation the same whoever asks and however it is sent (chat completions or the Responses API),
and the comparison reads real files of `bfcl generate` + `bfcl evaluate` (tests/fixtures/bfcl_pipeline/, BFCL's
Apache-2.0 output: see its NOTICE) beside our records of the same cases."""

from __future__ import annotations

import json
import sys
import urllib.request
from collections import Counter
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from tests.conftest import REPO
from typed_eval.contracts import SampleRecord
from typed_eval.suites.bfcl.data import load_sample
from typed_eval.suites.bfcl.prompting import prompt_messages
from typed_eval.suites.bfcl.tools import tools_for

sys.path.insert(0, str(REPO / "benchmarks"))
from bfcl_compare import Verdict, agreement, body_differences, read_bfcl, read_ours, request_differences
from bfcl_mock import MockServer, build_scripts, conversation_key, request_key

FIXTURES = REPO / "tests" / "fixtures" / "bfcl_pipeline"
CASES = {case.id: case for case in load_sample().cases}


@pytest.fixture(scope="module")
def server() -> Iterator[MockServer]:
    mock = MockServer(build_scripts(CASES.values()))
    yield mock
    mock.close()


def post(url: str, body: dict[str, Any]) -> dict[str, Any]:
    request = urllib.request.Request(url, json.dumps(body).encode(), {"Content-Type": "application/json"})
    with urllib.request.urlopen(request, timeout=10) as reply:
        answer: dict[str, Any] = json.loads(reply.read())
        return answer


def fc_body(case_id: str, **settings: Any) -> dict[str, Any]:
    case = CASES[case_id]
    return {"model": "m", "messages": case.question, "tools": tools_for(case.functions, case.category), **settings}


def prompt_body(case_id: str) -> list[dict[str, Any]]:
    case = CASES[case_id]
    return prompt_messages(case.question, case.functions, case.category)


def test_the_same_conversation_gets_the_same_reply_whoever_asks(server: MockServer) -> None:
    ours = post(f"{server.url('ours')}/chat/completions", fc_body("simple_python_320", temperature=0.01, seed=42))
    bfcl = post(f"{server.url('bfcl')}/chat/completions", fc_body("simple_python_320", temperature=0.001, store=False))
    again = post(f"{server.url('ours')}/chat/completions", fc_body("simple_python_320"))
    assert ours["choices"] == bfcl["choices"] == again["choices"]
    message = ours["choices"][0]["message"]
    assert message["content"] == "Here you go."
    assert [call["function"] for call in message["tool_calls"]] == [
        {
            "name": "sports_ranking_get_team_position",
            "arguments": '{"team": "Golden State Warriors", "season": "2022-2023", "detailed": true}',
        }
    ]


def test_prompt_mode_is_the_same_reply_through_chat_completions_and_the_responses_api(server: MockServer) -> None:
    def both(case_id: str) -> tuple[dict[str, Any], dict[str, Any]]:
        messages = prompt_body(case_id)
        developer = [{**m, "role": "developer"} if m["role"] == "system" else m for m in messages]
        chat = post(f"{server.url('ours')}/chat/completions", {"model": "m", "messages": messages})
        responses = post(f"{server.url('bfcl')}/responses", {"model": "m", "input": developer, "store": False})
        assert responses["object"] == "response"
        return chat["choices"][0]["message"], responses["output"][0]["content"]

    text = "[electromagnetism.biot_savart_law(current=12, distance=8, mu0=1.256e-06)]"
    assert both("multiple_40") == (
        {"role": "assistant", "content": text},
        [{"type": "output_text", "text": text, "annotations": []}],
    )
    assert both("irrelevance_0") == ({"role": "assistant", "content": None}, [])


def test_each_request_is_recorded_with_its_client_endpoint_and_case(server: MockServer) -> None:
    body = fc_body("simple_python_160")
    post(f"{server.url('recorded')}/chat/completions", body)
    (seen,) = [r for r in server.requests if r.client == "recorded"]
    key = conversation_key(CASES["simple_python_160"].question[-1]["content"], ["get_case_info"])
    assert (seen.endpoint, seen.key, seen.body, seen.variant) == ("chat/completions", key, body, "missing_required")


def test_a_conversation_of_no_case_gets_text_and_is_recorded_as_unmatched(server: MockServer) -> None:
    answer = post(f"{server.url('stranger')}/chat/completions", {"messages": [{"role": "user", "content": "hi"}]})
    assert answer["choices"][0]["message"] == {"role": "assistant", "content": "unknown conversation"}
    assert [r.variant for r in server.requests if r.client == "stranger"] == [None]


def test_the_key_reads_names_from_tools_or_from_the_prompt_and_ignores_dots() -> None:
    case = CASES["simple_java_0"]
    names = [doc["name"] for doc in case.functions]
    key = conversation_key(case.question[-1]["content"], names)
    assert "." in names[0]
    assert request_key(fc_body("simple_java_0")) == (key, True)
    assert request_key({"messages": prompt_body("simple_java_0")}) == (key, False)
    assert request_key({"input": prompt_body("simple_java_0")}) == (key, False)


def test_the_scripted_replies_cover_every_way_to_be_wrong() -> None:
    scripts = build_scripts(CASES.values())
    variants = Counter(reply.variant for script in scripts.values() for reply in script.fc)
    assert sorted(variants) == [
        "args_empty",
        "args_not_object",
        "calls_and_text",
        "correct",
        "correct_again",
        "empty",
        "extra_call",
        "extra_param",
        "float_for_int",
        "int_for_float",
        "malformed",
        "missing_required",
        "no_calls",
        "no_content",
        "one_call_less",
        "other_name_form",
        "reversed",
        "string_for_int",
        "text",
        "wrong_name",
        "wrong_value",
    ]
    assert Counter(r.variant for s in scripts.values() for r in s.prompt) == variants


def test_bfcl_verdicts_are_read_from_its_real_result_and_score_files() -> None:
    fc = read_bfcl(FIXTURES / "bfcl-fc", "openbmb_MiniCPM-SALA-FC")
    assert fc.accuracy == {"live_parallel": (6, 16)}
    assert Counter(v.error_type for v in fc.verdicts.values()) == {
        None: 6,
        "parallel_function_checker_no_order:cannot_find_match": 6,
        "parallel_function_checker_no_order:wrong_count": 3,
        "ast_decoder:decoder_failed": 1,
    }
    assert fc.verdicts["live_parallel_0-0-0"] == Verdict(False, "parallel_function_checker_no_order:cannot_find_match")
    prompt = read_bfcl(FIXTURES / "bfcl-prompt", "gpt-4o-2024-11-20")
    assert prompt.accuracy == {"live_relevance": (11, 16)}
    failing = sorted(case_id for case_id, v in prompt.verdicts.items() if not v.valid)
    assert failing == [f"live_relevance_{n}-{n}-0" for n in (11, 12, 4, 7, 8)]
    assert {prompt.verdicts[case_id].error_type for case_id in failing} == {"relevance_error:decoder_failed"}


def _ours(name: str) -> list[SampleRecord]:
    return [SampleRecord.model_validate_json(line) for line in (FIXTURES / name).read_text().splitlines()]


def test_our_records_of_the_same_cases_agree_case_for_case() -> None:
    bfcl = read_bfcl(FIXTURES / "bfcl-fc", "openbmb_MiniCPM-SALA-FC")
    ours = read_ours(_ours("ours-fc-live_parallel.jsonl"))
    assert ours.accuracy == bfcl.accuracy
    result = agreement(bfcl, ours)
    assert (result.same, result.valid_both, result.differ, result.excluded) == (16, 6, [], 0)
    prompt = agreement(
        read_bfcl(FIXTURES / "bfcl-prompt", "gpt-4o-2024-11-20"), read_ours(_ours("ours-prompt-live_relevance.jsonl"))
    )
    assert (prompt.same, prompt.valid_both, prompt.differ) == (16, 11, [])
    assert agreement(bfcl, ours, exclude=["live_parallel"]).excluded == 16


def test_a_different_verdict_or_error_type_is_a_disagreement() -> None:
    bfcl = read_bfcl(FIXTURES / "bfcl-fc", "openbmb_MiniCPM-SALA-FC")
    records = _ours("ours-fc-live_parallel.jsonl")
    wrong = next(i for i, r in enumerate(records) if r.case_id == "live_parallel_0-0-0")
    records[wrong] = records[wrong].model_copy(update={"score_details": {"error_type": "value_error:string"}})
    right = next(i for i, r in enumerate(records) if r.score == 1.0)
    records[right] = records[right].model_copy(update={"score": 0.0, "score_details": {"error_type": "x"}})
    result = agreement(bfcl, read_ours(records))
    assert result.same == 14
    assert result.differ == [
        (
            "live_parallel_0-0-0",
            Verdict(False, "parallel_function_checker_no_order:cannot_find_match"),
            Verdict(False, "value_error:string"),
        ),
        (records[right].case_id, Verdict(True, None), Verdict(False, "x")),
    ]


def test_request_differences_name_each_setting_and_where_a_tool_differs() -> None:
    bfcl = fc_body("simple_python_80", temperature=0.001, store=False)
    ours = json.loads(json.dumps(fc_body("simple_python_80", temperature=0.01, tool_choice="auto")))
    ours["tools"][0]["function"]["parameters"]["properties"]["location"]["properties"] = {}
    assert body_differences(bfcl, ours) == [
        (
            "tools[].function.parameters.properties.<p>.properties: only in ours",
            "tools[0].function.parameters.properties.location.properties: BFCL absent / ours {}",
        ),
        ("temperature: BFCL 0.001 / ours 0.01", ""),
        ("store: BFCL false / ours absent", ""),
        ('tool_choice: BFCL absent / ours "auto"', ""),
    ]
    responses = {"model": "m", "input": [{"role": "developer", "content": "p"}], "max_output_tokens": 5}
    chat = {"model": "m", "messages": [{"role": "system", "content": "p"}], "max_tokens": 5}
    assert body_differences(responses, chat) == [
        ("endpoint: BFCL /responses (input, role developer) / ours /chat/completions (messages, role system)", "")
    ]


def test_cases_sharing_a_conversation_key_are_paired_with_their_closest_body() -> None:
    a, b = {"messages": [{"role": "user", "content": "q"}], "tools": ["a"]}, {"messages": [], "tools": ["b"]}
    paired, kinds, _ = request_differences([("k", a), ("k", b)], [("k", b), ("k", a)])
    assert (paired, kinds) == (2, Counter())
    paired, kinds, examples = request_differences([("k", {"temperature": 0.001})], [("k", {"temperature": 0.01})])
    assert (paired, dict(kinds), examples) == (
        1,
        {"temperature: BFCL 0.001 / ours 0.01": 1},
        {"temperature: BFCL 0.001 / ours 0.01": ""},
    )


def test_a_kind_of_difference_counts_once_per_case() -> None:
    bfcl = {"tools": [{"p": {"a": {"type": "object"}, "b": {"type": "object"}}}]}
    ours = {"tools": [{"p": {"a": {"type": "object", "x": 1}, "b": {"type": "object", "x": 1}}}]}
    paired, kinds, examples = request_differences([("k", bfcl)], [("k", ours)])
    assert (paired, dict(kinds)) == (1, {"tools[].p.a.x: only in ours": 1, "tools[].p.b.x: only in ours": 1})
    bfcl = {"tools": [{"properties": {"a": {}, "b": {}}}]}
    ours = {"tools": [{"properties": {"a": {"x": 1}, "b": {"x": 1}}}]}
    paired, kinds, examples = request_differences([("k", bfcl)], [("k", ours)])
    assert (paired, dict(kinds)) == (1, {"tools[].properties.<p>.x: only in ours": 1})
    assert examples == {"tools[].properties.<p>.x: only in ours": "tools[0].properties.a.x: BFCL absent / ours 1"}


def test_fixture_notice_says_whose_files_these_are() -> None:
    notice = (FIXTURES / "NOTICE").read_text()
    assert "Apache License, Version 2.0" in notice
    assert Path(REPO / "typed_eval" / "suites" / "bfcl" / "sample" / "LICENSE").is_file()


def test_the_script_says_when_bfcls_pipeline_is_missing(tmp_path: Path) -> None:
    from bfcl_single_turn import pipeline_missing

    assert pipeline_missing(None) == "no python of BFCL's pipeline venv given"
    absent = tmp_path / "venv" / "bin" / "python"
    assert pipeline_missing(str(absent)) == f"BFCL's pipeline venv not found: {absent} does not exist"
