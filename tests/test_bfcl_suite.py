"""The bfcl suite end to end: `main.py run --suite bfcl` against a loopback OpenAI-compatible server answering with
scripted calls and replies, the verdicts stored and the requests the server received (BFCL's own messages and tools
in function-calling mode, BFCL's prompt in prompt mode)."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from starlette.testclient import TestClient

from tests.cli_run import run_cli
from tests.conftest import REPO
from tests.fake_openai import FakeOpenAI, completion, text
from typed_eval.contracts import SampleRecord
from typed_eval.core.money import money
from typed_eval.core.suite import AnswerLine, answer_lines
from typed_eval.reports.viewer.app import create_app
from typed_eval.suites.bfcl.data import load_folder, load_sample
from typed_eval.suites.bfcl.multi_turn.backend import signatures
from typed_eval.suites.bfcl.multi_turn.cases import load_multi_turn
from typed_eval.suites.bfcl.prompting import prompt_messages
from typed_eval.suites.bfcl.suite import BFCL
from typed_eval.suites.bfcl.tools import tools_for

sys.path.insert(0, str(REPO / "benchmarks"))
from bfcl_multi_turn_mock import parse_call

CATEGORIES = "simple_python,parallel,irrelevance"
CASES = {case.id: case for case in load_sample(tuple(CATEGORIES.split(","))).cases}


def calls(*pairs: tuple[str, dict[str, Any] | str]) -> dict[str, Any]:
    """An assistant message making `pairs` (name, arguments) as parallel tool calls."""
    made = [
        {
            "id": f"call_{n}",
            "type": "function",
            "function": {"name": name, "arguments": args if isinstance(args, str) else json.dumps(args)},
        }
        for n, (name, args) in enumerate(pairs)
    ]
    return {"role": "assistant", "content": None, "tool_calls": made}


TOOL_REPLIES: dict[str, dict[str, Any]] = {
    "simple_python_0": calls(("calculate_triangle_area", {"base": 10, "height": 5})),
    "simple_python_80": text("I cannot help with restaurants."),
    "simple_python_160": calls(("get_case_info", '{"docket": "2022/AL2562", court')),
    "simple_python_240": calls(("history_api_get_president_by_year", {"year": 1940})),
    "simple_python_320": calls(
        ("sports_ranking_get_team_position", {"team": "GSW", "season": "2022-2023", "detailed": "yes"})
    ),
    "parallel_0": calls(
        ("spotify_play", {"artist": "Maroon 5", "duration": 15}),
        ("spotify_play", {"artist": "Taylor Swift", "duration": 20}),
    ),
    "parallel_40": calls(
        ("museum_exhibition_detail", {"exhibition_name": "Wonder of Nature", "museum_name": "Louvre"})
    ),
    "parallel_80": calls(("math_gcd", {"num1": 36, "num2": 48}), ("math_gcd", {"num1": 60, "num2": 96})),
    "parallel_120": text(""),
    "parallel_160": calls(("prob_dist_normal", {"trials": 20})),
    "irrelevance_0": text("No function fits."),
    "irrelevance_48": calls(("finance_fetchGDP", {"country": "US"})),
    "irrelevance_96": calls(("get_case_result", "not json")),
    "irrelevance_144": text(""),
    "irrelevance_192": text("I cannot answer that."),
}

TEXT_REPLIES: dict[str, str] = {
    "simple_python_0": "[calculate_triangle_area(base=10, height=5)]",
    "simple_python_80": "I don't know.",
    "simple_python_160": "[get_case_info(docket='2022/AL2562', court='CA', info_type='witness')]",
    "simple_python_240": "history_api.get_president_by_year(year=1940)",
    "simple_python_320": "```\n[sports_ranking.get_team_position(team='GSW', season='2022-2023', detailed=True)]\n```",
    "irrelevance_0": "[]",
    "irrelevance_48": "[finance.fetchGDP(country='US')]",
    "irrelevance_96": "I cannot answer that.",
    "irrelevance_144": "[search_holy_books(book=len)]",
    "irrelevance_192": "No function fits.",
}


def case_of(request: dict[str, Any]) -> str:
    """The case a request poses, found by its last user message."""
    question = [m["content"] for m in request["messages"] if m["role"] == "user"][-1]
    (found,) = [
        i for i, c in CASES.items() if [m["content"] for m in c.question if m["role"] == "user"][-1] == question
    ]
    return found


def run(tmp_path: Path, reply: Callable[[dict[str, Any]], dict[str, Any]], *args: str) -> tuple[FakeOpenAI, str]:
    with FakeOpenAI(reply) as server:
        done = run_cli(
            "main.py", "run", "--suite", "bfcl", "-S", "data=sample", "--model", "fake-model",
            "--base-url", server.url, "--api-key", "sk-test", "--results-dir", str(tmp_path), "--quiet",
            "--retries", "0", *args, text=False,
        )  # fmt: skip
    assert done.returncode == 0, done.stderr.decode()
    return server, done.stdout.decode()


def format_result(*args: str) -> subprocess.CompletedProcess[bytes]:
    """`format_result.py ARGS...`, which must succeed (as `check=True` would have it)."""
    done = run_cli("format_result.py", *args, text=False)
    done.check_returncode()
    return done


def stored(tmp_path: Path) -> dict[str, dict[str, Any]]:
    (samples,) = tmp_path.glob("*/*/samples.jsonl")
    records = [json.loads(line) for line in samples.read_text().splitlines()]
    return {record["case_id"]: record for record in records}


def verdicts(records: dict[str, dict[str, Any]]) -> dict[str, tuple[str, str | None, list[str | None]]]:
    """Each case's status, BFCL error type and its attempts' invalid kinds."""
    return {
        case_id: (
            r["status"],
            (r["score_details"] or {}).get("error_type"),
            [a["invalid_kind"] for a in r["attempts"]],
        )
        for case_id, r in records.items()
    }


def test_function_calling_mode_sends_bfcl_requests_and_stores_bfcl_verdicts(tmp_path: Path) -> None:
    server, out = run(
        tmp_path, lambda request: completion(TOOL_REPLIES[case_of(request)]), "-S", f"categories={CATEGORIES}"
    )
    assert verdicts(stored(tmp_path)) == {
        "simple_python_0": ("correct", None, [None]),
        "simple_python_80": ("incorrect", "ast_decoder:decoder_failed", [None]),
        "simple_python_160": ("incorrect", "ast_decoder:decoder_failed", ["malformed_json"]),
        "simple_python_240": ("correct", None, [None]),
        "simple_python_320": ("incorrect", "type_error:simple", [None]),
        "parallel_0": ("correct", None, [None]),
        "parallel_40": ("incorrect", "parallel_function_checker_no_order:wrong_count", [None]),
        "parallel_80": ("correct", None, [None]),
        "parallel_120": ("incorrect", "parallel_function_checker_no_order:wrong_count", [None]),
        "parallel_160": ("incorrect", "parallel_function_checker_no_order:wrong_count", ["unknown_tool"]),
        "irrelevance_0": ("correct", None, [None]),
        "irrelevance_48": ("incorrect", "irrelevance_error:decoder_success", [None]),
        "irrelevance_96": ("correct", None, ["malformed_json"]),
        "irrelevance_144": ("correct", None, [None]),
        "irrelevance_192": ("correct", None, [None]),
    }
    assert (
        "BFCL: non-live 13.33, live 0.00, irrelevance N/A, multi-turn 0.00, overall 5.33 (overall counts groups not "
        "run as 0; groups present: non_live, irrelevance)"
    ) in out.splitlines()
    assert "simple_python: 40.00 (C: 2, I: 3, M: 0 A: 5)" in out
    assert "parallel: 40.00 (C: 2, I: 3, M: 0 A: 5)" in out
    assert "irrelevance: 80.00 (C: 4, I: 1, M: 0 A: 5)" in out
    (summary,) = tmp_path.glob("*/*/summary.json")
    dataset = json.loads(summary.read_text())["dataset"]
    assert (dataset["suite"], dataset["cases"], dataset["params"]) == (
        "bfcl",
        15,
        {
            "bfcl_eval_version": "2026.3.23 (sample)",
            "dataset_hash": load_sample(("simple_python", "parallel", "irrelevance")).dataset_hash,
            "categories": ["simple_python", "parallel", "irrelevance"],
        },
    )
    assert dataset["suite_params"] == {
        "categories": CATEGORIES,
        "data": "sample",
        "resolve": "bfcl",
        "backend_workers": 2,
        "backend_timeout": 30.0,
    }
    leaderboard = format_result(str(tmp_path), "--format", "json")
    (row,) = json.loads(leaderboard.stdout)
    assert row["metrics"] == {
        "bfcl-simple_python": 40.0,
        "bfcl-parallel": 40.0,
        "bfcl-irrelevance": 80.0,
        "bfcl-non_live_overall": 13.33,
        "bfcl-live_overall": 0.0,
        "bfcl-irrelevance_detection": None,  # BFCL's needs live_irrelevance too: N/A
        "bfcl-multi_turn_overall": 0.0,
        "bfcl-overall": 5.33,
    }
    views = {i: answer_lines(BFCL, SampleRecord.model_validate(r)) for i, r in stored(tmp_path).items()}
    assert views["simple_python_320"] == [
        AnswerLine(
            'sports_ranking_get_team_position({"team": "GSW", "season": "2022-2023", "detailed": "yes"})', "wrong"
        ),
        AnswerLine(
            "checker: type_error:simple: Incorrect type for parameter 'detailed'. Expected type boolean, got str. "
            "Parameter value: 'yes'."
        ),
        AnswerLine("offered: sports_ranking.get_team_position"),
        AnswerLine(
            'allowed: {"sports_ranking.get_team_position": {"team": ["Golden State Warriors", "GSW"], '
            '"season": ["2022-2023"], "detailed": [true]}}'
        ),
    ]
    assert views["irrelevance_0"] == [
        AnswerLine("(no call) No function fits.", "right"),
        AnswerLine("offered: determine_body_mass_index"),
    ]
    assert len(server.requests) == 15
    for request in server.requests:
        case = CASES[case_of(request)]
        assert request["messages"] == case.question  # BFCL's messages, no system prompt of ours
        assert request["tools"] == tools_for(case.functions, case.category)
        assert (request["temperature"], "seed" in request) == (0.001, False)  # BFCL's sampling: 0.001, no seed


def test_prompt_mode_sends_bfcl_system_prompt_and_decodes_as_bfcl(tmp_path: Path) -> None:
    server, out = run(
        tmp_path,
        lambda request: completion(text(TEXT_REPLIES[case_of(request)])),
        "-S",
        "categories=simple_python,irrelevance",
        "--mode",
        "text",
    )
    assert verdicts(stored(tmp_path)) == {
        "simple_python_0": ("correct", None, [None]),
        "simple_python_80": ("incorrect", "ast_decoder:decoder_failed", [None]),
        "simple_python_160": ("incorrect", "value_error:string", [None]),
        "simple_python_240": ("correct", None, [None]),
        "simple_python_320": ("correct", None, [None]),
        "irrelevance_0": ("correct", None, [None]),
        "irrelevance_48": ("incorrect", "irrelevance_error:decoder_success", [None]),
        "irrelevance_96": ("correct", None, [None]),
        "irrelevance_144": ("incorrect", "irrelevance_error:decoder_success", [None]),
        "irrelevance_192": ("correct", None, [None]),
    }
    assert "simple_python: 60.00 (C: 3, I: 2, M: 0 A: 5)" in out
    assert "irrelevance: 60.00 (C: 3, I: 2, M: 0 A: 5)" in out
    for request in server.requests:
        case = CASES[case_of(request)]
        assert request["messages"] == prompt_messages(case.question, case.functions, case.category)
        assert "tools" not in request


def test_an_invalid_call_is_an_attempt_of_its_kind_and_with_retries_the_model_is_told_why(tmp_path: Path) -> None:
    def reply(request: dict[str, Any]) -> dict[str, Any]:
        if len(request["messages"]) == 1:  # the first answer: arguments that are not JSON
            return completion(calls(("calculate_triangle_area", '{"base": 10, height: 5}')))
        return completion(calls(("calculate_triangle_area", {"base": 10, "height": 5})))

    server, _ = run(tmp_path, reply, "-S", "categories=simple_python", "--limit", "1", "--retries", "1")
    record = stored(tmp_path)["simple_python_0"]
    assert (record["status"], record["corrective_retries"]) == ("correct", 1)
    assert [(a["valid"], a["invalid_kind"]) for a in record["attempts"]] == [(False, "malformed_json"), (True, None)]
    assert record["output"] == [{"name": "calculate_triangle_area", "arguments": '{"base": 10, "height": 5}'}]
    retry = server.requests[1]["messages"]
    assert [m["role"] for m in retry] == ["user", "assistant", "tool"]
    sent_back = retry[1]["tool_calls"][0]["function"]["arguments"]  # pydantic-ai resends invalid JSON wrapped
    assert json.loads(sent_back) == {"INVALID_JSON": '{"base": 10, height: 5}'}
    assert "Invalid JSON" in retry[2]["content"]


def test_the_first_attempt_is_scored_as_bfcl_scores_it_beside_the_score_after_retries(tmp_path: Path) -> None:
    """BFCL scores the first answer: invalid JSON arguments decode to no call, right for irrelevance and wrong
    elsewhere; the retry then turns the one wrong and the other right."""
    first = {
        "simple_python_0": calls(("calculate_triangle_area", '{"base": 10, height: 5}')),
        "irrelevance_0": calls(("determine_body_mass_index", '{"weight": 70, height: 1.75}')),
    }
    second = {
        "simple_python_0": calls(("calculate_triangle_area", {"base": 10, "height": 5})),
        "irrelevance_0": calls(("determine_body_mass_index", {"weight": 70, "height": 1.75})),
    }

    def reply(request: dict[str, Any]) -> dict[str, Any]:
        retried = any(m["role"] == "tool" for m in request["messages"])
        case = case_of(request)
        return completion(second[case] if retried else first.get(case, text("No function fits.")))

    _, out = run(tmp_path, reply, "-S", "categories=simple_python,irrelevance", "--retries", "2")
    records = stored(tmp_path)
    assert [(a["invalid_kind"], a.get("score")) for a in records["simple_python_0"]["attempts"]] == [
        ("malformed_json", 0.0),
        (None, None),
    ]
    assert [(a["invalid_kind"], a.get("score")) for a in records["irrelevance_0"]["attempts"]] == [
        ("malformed_json", 1.0),
        (None, None),
    ]
    assert (records["simple_python_0"]["status"], records["irrelevance_0"]["status"]) == ("correct", "incorrect")
    lines = out.splitlines()
    assert "corrective retries: score 50.00 with none, 50.00 with up to 1; the 2 retries cost $0.000000" in lines
    assert (
        "with no corrective retry, BFCL: non-live 0.00, live 0.00, irrelevance N/A, multi-turn 0.00, overall 5.00 "
        "(overall counts groups not run as 0; groups present: non_live, irrelevance)"
    ) in lines
    leaderboard = format_result(str(tmp_path), "--format", "json")
    (row,) = json.loads(leaderboard.stdout)
    assert (row["metrics"]["bfcl-simple_python"], row["metrics"]["bfcl-irrelevance"]) == (20.0, 80.0)
    assert (row["metrics_no_retry"]["bfcl-simple_python"], row["metrics_no_retry"]["bfcl-irrelevance"]) == (0.0, 100.0)
    assert row["score_by_retries"] == [50.0, 50.0]
    table = format_result(str(tmp_path), "--format", "csv")
    header, values = (line.split(",") for line in table.stdout.decode().splitlines())
    assert dict(zip(header, values, strict=True))["bfcl-irrelevance_no_retry"] == "100.0"
    page = tmp_path / "report.html"
    format_result(str(tmp_path), "--format", "html", "-o", str(page))
    assert 'title="had no corrective retry been allowed">no retry 100.00</span>' in page.read_text()
    with TestClient(create_app(tmp_path, hosts=("testserver",))) as viewer:
        board = viewer.get("/").text
    assert "<th>bfcl-overall</th>" in board
    assert 'title="had no corrective retry been allowed">(no retry 100.00)</span>' in board


def test_both_modes_end_with_the_paired_function_calling_against_prompt_effect_per_category(tmp_path: Path) -> None:
    def reply(request: dict[str, Any]) -> dict[str, Any]:
        case = case_of(request)
        return completion(TOOL_REPLIES[case] if "tools" in request else text(TEXT_REPLIES[case]))

    _, out = run(
        tmp_path, reply, "-S", "categories=simple_python,irrelevance", "--mode", "tool", "--mode", "text", "--quiet"
    )
    assert "bfcl · fake-model: modes compared group by group (Holm over each pair's groups)" in out
    modes = format_result(str(tmp_path), "--modes", "--format", "json")
    ((pair,),) = [c["versus"] for c in json.loads(modes.stdout)]
    assert (pair["a"], pair["b"], pair["paired"], pair["only_a"], pair["only_b"]) == ("tool", "text", 10, 1, 1)
    assert [
        (g["group"], g["paired"], g["only_a"], g["only_b"], g["p_value"], g["p_holm"], g["difference"])
        for g in pair["by_group"]
    ] == [("simple_python", 5, 0, 1, 1.0, 1.0, -20.0), ("irrelevance", 5, 1, 0, 1.0, 1.0, 20.0)]
    table = format_result(str(tmp_path), "--modes", "--format", "csv")
    lines = table.stdout.decode().splitlines()
    assert lines[0].endswith(",best_mode,group")
    assert [line.rsplit(",", 1)[1] for line in lines[1:]] == ["", "simple_python", "irrelevance"]


def test_bad_input_is_one_line_and_exit_2(tmp_path: Path) -> None:
    folder = tmp_path / "data"
    (folder / "possible_answer").mkdir(parents=True)
    (folder / "BFCL_v4_multiple.json").write_text('{"id": "multiple_0"')
    (folder / "possible_answer" / "BFCL_v4_multiple.json").write_text("")
    for setting, message in [
        ("categories=nosuch", "main.py: error: unknown BFCL category 'nosuch'; the categories are all, single_turn, "),
        (f"data={folder}", f"main.py: error: {folder}/BFCL_v4_multiple.json:1: not a JSON object ("),
    ]:
        done = run_cli(
            "main.py", "run", "--suite", "bfcl", "-S", "categories=multiple", "-S", setting, "--model", "test",
            "--results-dir", str(tmp_path / "runs"), text=False,
        )  # fmt: skip
        lines = done.stderr.decode().splitlines()
        assert (done.returncode, len(lines)) == (2, 1)
        assert lines[0].startswith(message)


def test_every_category_is_sent_bfcl_s_messages_and_tools_an_assistant_message_included(tmp_path: Path) -> None:
    folder = tmp_path / "data"
    folder.mkdir()
    entry = {
        "id": "live_irrelevance_0-0-0",
        "question": [[{"role": "system", "content": "You are a helpful assistant."},
                      {"role": "user", "content": "Hi"}, {"role": "assistant", "content": "Hello! How can I help?"},
                      {"role": "user", "content": "What's the weather in Paris?"}]],
        "function": [{"name": "weather.get", "description": "Weather", "parameters": {"type": "dict",
                      "required": ["city"], "properties": {"city": {"type": "string", "description": "City"}}}}],
    }  # fmt: skip
    (folder / "BFCL_v4_live_irrelevance.json").write_text(json.dumps(entry))
    for data, categories in (("sample", "single_turn"), (str(folder), "live_irrelevance")):
        runs = tmp_path / "runs" / str(len(data))
        server, _ = run(runs, lambda _: completion(text("No.")), "-S", f"data={data}", "-S", f"categories={categories}")
        posed = {
            c.id: c for c in (load_sample() if data == "sample" else load_folder(folder, ["live_irrelevance"])).cases
        }
        assert len(server.requests) == len(posed)
        for request in server.requests:
            (case,) = [c for c in posed.values() if c.question == request["messages"]]  # BFCL's messages exactly
            assert request.get("tools", []) == tools_for(case.functions, case.category)
    assert server.requests[0]["messages"][2] == {"role": "assistant", "content": "Hello! How can I help?"}


def test_multi_turn_cases_are_played_on_bfcl_s_backends_through_the_command_line(tmp_path: Path) -> None:
    """A server playing each case's ground truth one call per step (then "Done." to end the turn), except that it
    ends multi_turn_base_15's first turn at once: BFCL's verdicts, trajectories and figures come out."""
    if not os.environ.get("CI"):  # CI installs BFCL's backends: there a missing one fails
        pytest.importorskip("bfcl_eval.eval_checker.multi_turn_eval.multi_turn_checker")
    played = {case.turns[0][0]["content"]: case for case in load_multi_turn(["multi_turn_base"], "sample").cases}

    def reply(request: dict[str, Any]) -> dict[str, Any]:
        messages = request["messages"]
        case = played[next(m["content"] for m in messages if m["role"] == "user")]
        turn = sum(m["role"] == "user" for m in messages) - 1
        step = len(messages) - 1 - max(i for i, m in enumerate(messages) if m["role"] == "user")
        step = sum(m["role"] == "assistant" for m in messages[len(messages) - step :])
        calls_due = case.ground_truth[turn] if not (case.id == "multi_turn_base_15" and turn == 0) else []
        if step >= len(calls_due):
            return completion(text("Done."))
        return completion(calls(parse_call(calls_due[step], signatures(case.involved_classes))))

    _, out = run(tmp_path, reply, "-S", "categories=multi_turn_base", "--price-in", "10", "--price-out", "100")
    records = stored(tmp_path)
    assert {case_id: (r["status"], (r["score_details"] or {}).get("cause")) for case_id, r in records.items()} == {
        case_id: ("incorrect", "missing_call") if case_id == "multi_turn_base_15" else ("correct", None)
        for case_id in (case.id for case in played.values())
    }
    assert "multi_turn_base: 83.33 (C: 5, I: 1, M: 0 A: 6)" in out
    assert (
        "BFCL: non-live 0.00, live 0.00, irrelevance N/A, multi-turn 20.83, overall 6.25 (overall counts groups not "
        "run as 0; groups present: multi_turn)"
    ) in out.splitlines()
    lines = answer_lines(BFCL, SampleRecord.model_validate(records["multi_turn_base_15"]))
    assert lines[:3] == [
        AnswerLine(f"turn 0: {played_first_turn(played, 'multi_turn_base_15')}", "wrong"),  # its first failed turn
        AnswerLine("  text: Done."),
        AnswerLine("  ground truth: touch(file_name='DataSet1.csv')"),
    ]
    leaderboard = format_result(str(tmp_path), "--format", "json")
    (row,) = json.loads(leaderboard.stdout)
    assert (row["metrics"]["bfcl-multi_turn_base"], row["metrics"]["bfcl-mt-missing_call"]) == (83.33, 1.0)
    requests = sum(r["usage"]["requests"] for r in records.values())
    assert [r["cost"]["usd"] for r in records.values()] == [
        pytest.approx(0.002 * r["usage"]["requests"])
        for r in records.values()  # 100 tokens in, 10 out a request
    ]
    solved = row["metrics"]["bfcl-mt-solved-usd"]  # every case's cost, failed ones too, over the 5 solved
    assert solved == pytest.approx(0.002 * requests / 5)
    assert f"BFCL multi-turn, cost of a solved case: {money(solved)} (base {money(solved)})" in out.splitlines()
    table = format_result(str(tmp_path))
    assert money(solved) in table.stdout.decode()


def played_first_turn(played: dict[str, Any], case_id: str) -> str:
    return str(next(case for case in played.values() if case.id == case_id).turns[0][0]["content"])
