"""Hostile input, round four (issue #35): stored runs damaged a line at a time or written by a newer program, suites
whose parameters would generate forever, case-file var files that never end, and two plug-ins of one name. Each is
reproduced as it broke: the command line, the leaderboard and the viewer run as child processes on real files."""

from __future__ import annotations

import json
import os
import re
import subprocess
from collections.abc import Iterator
from importlib import metadata
from pathlib import Path

import pytest

from tests.cli_run import run_cli
from tests.conftest import PYTHON, REPO
from tests.fake_openai import FakeOpenAI, completion, prompt_of, text
from tests.plugin_packages import install_package, run_with
from tests.test_format_result import answers, store
from tests.test_v1_runs import RECORDS, v1_record, v1_run
from tests.viewer_runs import Viewer
from typed_eval.core import datasets


def cli(script: str, *args: str) -> subprocess.CompletedProcess[str]:
    return run_cli(script, *args)


def in_a_process(script: str, *args: str, timeout: float = 60) -> subprocess.CompletedProcess[str]:
    """`python SCRIPT ARGS` as a child killed after `timeout`: for a command that, were its guard gone, would wait
    forever or fill the memory (a FIFO with no writer, /dev/zero, a dataset of a billion cases)."""
    return subprocess.run([PYTHON, script, *args], cwd=REPO, capture_output=True, text=True, timeout=timeout,
                          check=False)  # fmt: skip


def board(results: Path) -> tuple[int, list[tuple[str, float]], list[str]]:
    """`format_result.py --format json`: its exit, each row's model and score, its stderr lines."""
    done = cli("format_result.py", str(results), "--format", "json")
    assert "Traceback" not in done.stderr
    rows = [(row["model"], row["score"]) for row in json.loads(done.stdout)] if done.stdout else []
    return done.returncode, rows, done.stderr.splitlines()


# --- 11, 13, 14: a summary of a newer program, a line not UTF-8, a version-1 attempt that is not an object --------


@pytest.fixture(scope="module")
def damaged(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[Path, Viewer]]:
    """Four runs: one sound, one whose first record holds a byte that is not UTF-8, one whose summary is of schema
    version 99, one of schema version 1 whose third record's attempt is a string."""
    results = tmp_path_factory.mktemp("damaged")
    store(results, "sound", answers({"child": ["correct", "incorrect"]}))
    latin = store(results, "latin", answers({"child": ["correct", "correct", "incorrect"]}), minutes=1)
    lines = (latin / "samples.jsonl").read_bytes().splitlines(keepends=True)
    lines[0] = lines[0].replace(b'"child-0"', b'"child-\xff0"')  # latin-1's y with diaeresis, as a lone byte
    (latin / "samples.jsonl").write_bytes(b"".join(lines))
    future = store(results, "future", answers({"child": ["correct"]}), minutes=2)
    summary = json.loads((future / "summary.json").read_text())
    (future / "summary.json").write_text(json.dumps(summary | {"schema_version": 99}))
    old = v1_run(results / "old-model" / "old", [*RECORDS[:2], v1_record("q9", "parent", "correct", "1"), RECORDS[5]])
    records = (old / "samples.jsonl").read_text().splitlines(keepends=True)
    broken = json.loads(records[2])
    broken["attempts"] = ["valid"]
    records[2] = json.dumps(broken, separators=(",", ":")) + "\n"
    (old / "samples.jsonl").write_text("".join(records))
    viewer = Viewer(results)
    yield results, viewer
    viewer.close()


def test_damaged_runs_are_one_line_each_naming_file_and_line_and_the_sound_run_is_shown(
    damaged: tuple[Path, Viewer],
) -> None:
    results, _ = damaged
    code, rows, errors = board(results)
    # every run that has a summary is shown, its damaged lines left out; exit 2: not every record was read
    assert (code, rows) == (2, [("latin", 66.66666666666667), ("sound", 50.0), ("old-model", 75.0)])
    assert errors == [
        f"format_result.py: error: {results}/future/run-future-2/summary.json has schema version 99, newer than "
        "this program's 2: upgrade",
        f"format_result.py: error: corrupt record at {results}/latin/run-latin-1/samples.jsonl:1: not UTF-8 text "
        "(0xff at byte 19 of the line)",
        f"format_result.py: error: corrupt record at {results}/old-model/old/samples.jsonl:3: not a version 1 "
        "record: AttributeError: 'str' object has no attribute 'items'",
    ]


def test_the_viewer_lists_each_unreadable_run_with_its_reason_and_serves_the_rest(
    damaged: tuple[Path, Viewer],
) -> None:
    results, viewer = damaged
    page = viewer.get("/")
    assert page.status == 200
    assert "Not on the leaderboard" not in page.text  # their summaries are shown, their damaged lines listed
    assert (
        '<h2>Unreadable runs</h2>\n<ul class="unreadable">'
        f"<li>{results}/future/run-future-2/summary.json has schema version 99, newer than this program&#39;s 2: "
        "upgrade</li>"
        f"<li>corrupt record at {results}/latin/run-latin-1/samples.jsonl:1: not UTF-8 text (0xff at byte 19 of the "
        "line)</li>"
        f"<li>corrupt record at {results}/old-model/old/samples.jsonl:3: not a version 1 record: AttributeError: "
        "&#39;str&#39; object has no attribute &#39;items&#39;</li></ul>"
    ) in page.text
    assert [run["run"] for run in viewer.api("/api/runs")] == [
        "sound/run-sound-0", "latin/run-latin-1", "old-model/old",
    ]  # fmt: skip
    # each run is shown without its damaged line, which is said with its file and line (issue #44)
    old, latin = "old-model/old", "latin/run-latin-1"
    marked = {
        latin: f"corrupt record at {results}/{latin}/samples.jsonl:1: not UTF-8 text (0xff at byte 19 of the line)",
        old: f"corrupt record at {results}/{old}/samples.jsonl:3: not a version 1 record: AttributeError: 'str' object "
        "has no attribute 'items'",
    }
    for key, case_ids in ((latin, ["child-1", "child-2"]), (old, ["q1", "q2", "q6"])):
        grid = viewer.api(f"/api/cases?runs={key}")
        assert ([row["case_id"] for row in grid["cases"]], grid["damaged"]) == (case_ids, {key: [marked[key]]}), key
    shown = viewer.get(f"/cases?runs={old}")
    assert (shown.status, shown.headers["content-type"]) == (200, "text/html; charset=utf-8")
    assert (
        f'<li><span class="key">{old}</span> corrupt record at {results}/{old}/samples.jsonl:3: not a version 1 '
        "record: AttributeError: &#39;str&#39; object has no attribute &#39;items&#39;</li>"
    ) in shown.text
    assert ">q6</a>" in shown.text
    sound = viewer.api("/api/cases?runs=sound/run-sound-0")
    assert [row["case_id"] for row in sound["cases"]] == ["child-0", "child-1"]


# --- 6: a case-file var naming a file that never ends, a pipe, a device or a folder --------------------------------


def case_file_run(
    folder: Path, var: str, tests_from: str | None = None, *, unbounded: bool = False
) -> subprocess.CompletedProcess[str]:
    """`main.py run` of a case file whose one test's var is `var` (or whose tests are read from `tests_from`); in a
    child killed after 60 s when the file named is `unbounded` (a FIFO, a device)."""
    path = folder / "cases.yaml"
    tests = (
        f"tests: {tests_from}\n"
        if tests_from
        else f"tests:\n  - vars: {{q: '{var}'}}\n    assert: [{{type: contains, value: x}}]\n"
    )
    path.write_text("prompts: ['{{q}}']\n" + tests, encoding="utf-8")
    args = ("run", "--suite", str(path), "--model", "test", "--results-dir", str(folder / "r"))
    return in_a_process("main.py", *args) if unbounded else cli("main.py", *args)


@pytest.mark.parametrize(
    ("var", "said"),
    [
        ("file:///dev/zero", "file:///dev/zero is a device, not a regular file: name a file"),
        ("file://pipe", "file://pipe is a FIFO, not a regular file: name a file"),
        ("file://folder", "file://folder is a folder, not a regular file: name a file"),
        ("file://huge.txt", "file://huge.txt is larger than 16 MiB, the most a file a case file names may hold"),
        ("file://huge.yaml", "file://huge.yaml is larger than 16 MiB, the most a file a case file names may hold"),
    ],
    ids=["device", "fifo", "folder", "huge-text", "huge-yaml"],
)
def test_a_var_file_that_is_not_a_bounded_regular_file_is_one_line_naming_the_var(
    var: str, said: str, tmp_path: Path
) -> None:
    os.mkfifo(tmp_path / "pipe")  # no writer: an open that waited for one would never return
    (tmp_path / "folder").mkdir()
    for name in ("huge.txt", "huge.yaml"):
        with (tmp_path / name).open("wb") as huge:
            huge.truncate(16 * 1024 * 1024 + 1)  # sparse: one byte past the cap
    done = case_file_run(tmp_path, var, unbounded=var in ("file:///dev/zero", "file://pipe"))
    assert done.returncode == 2, done.stderr
    assert done.stderr.splitlines() == [f"main.py: error: case file {tmp_path}/cases.yaml: test 1, var q: {said}"]
    assert not (tmp_path / "r").exists()


def test_a_var_file_of_exactly_the_cap_is_read(tmp_path: Path) -> None:
    (tmp_path / "full.txt").write_bytes(b"x" * (16 * 1024 * 1024 - 1) + b"\n")
    done = case_file_run(tmp_path, "file://full.txt")
    assert done.returncode == 0, done.stderr
    (samples,) = (tmp_path / "r").rglob("samples.jsonl")
    (record,) = [json.loads(line) for line in samples.read_text().splitlines()]
    assert (len(record["prompt"]), set(record["prompt"])) == (16 * 1024 * 1024 - 1, {"x"})


def test_a_tests_file_that_is_a_fifo_is_one_line(tmp_path: Path) -> None:
    os.mkfifo(tmp_path / "tests.yaml")
    done = case_file_run(tmp_path, "", tests_from="file://tests.yaml", unbounded=True)
    assert done.returncode == 2, done.stderr
    assert done.stderr.splitlines() == [
        f"main.py: error: case file {tmp_path}/tests.yaml is a FIFO, not a regular file: name a file"
    ]


# --- 4, 5: parameters that would generate forever --------------------------------------------------------------


@pytest.mark.parametrize(
    ("suite", "said"),
    [
        ("story-graph -S count=1000000000", "--count: 1,000,000,000 cases, more than the 100,000 a generated dataset "
         "may hold (each is made before the first is posed): use at most 100,000"),
        ("farel -S number=1000000000", "--number: 1,000,000,000 x 9 is 9,000,000,000 cases, more than the 1,000,000 "
         "a generated dataset may hold (each is made before the first is posed): use at most 111,111"),
        ("lineage -S number=1000000000", "--number: 1,000,000,000 x 16 is 16,000,000,000 cases, more than the "
         "1,000,000 a generated dataset may hold (each is made before the first is posed): use at most 62,500"),
        ("lineage -S length=8 -S number=250001", "--number: 250,001 x 4 is 1,000,004 cases, more than the 1,000,000 "
         "a generated dataset may hold (each is made before the first is posed): use at most 250,000"),
    ],
    ids=["story-graph", "farel", "lineage", "lineage-one-size"],
)  # fmt: skip
def test_a_size_that_would_generate_for_days_is_one_line_naming_the_bound(
    suite: str, said: str, tmp_path: Path
) -> None:
    done = in_a_process("main.py", "run", "--suite", *suite.split(), "--limit", "5", "--model", "test",
                        "--results-dir", str(tmp_path / "r"))  # fmt: skip
    assert (done.returncode, done.stderr.splitlines()) == (2, [f"main.py: error: {said}"])
    assert not (tmp_path / "r").exists()


def test_stories_are_made_one_at_a_time() -> None:
    from typed_eval.suites.story_graph.stories import generate_cases, iter_cases

    stories = iter_cases(8, 1_000_000_000, 42)  # a list of them would never be made
    first, second = next(stories), next(stories)
    assert [first, second] == generate_cases(8, 2, 42)
    with pytest.raises(ValueError, match=r"^story-graph needs at least 1 story, got 0$"):
        iter_cases(8, 0, 42)  # checked at once, not at the first story


def test_a_limited_run_leaves_the_source_once_its_cases_are_found() -> None:
    from evaluator import Case
    from typed_eval.core.datasets import dataset_from_cases

    pulled: list[int] = []

    def source() -> Iterator[Case]:
        for n in range(30_000):  # more than a dataset keeps in memory: each pass generates afresh
            pulled.append(n)
            yield Case(id=f"c{n}", prompt="p", group=f"g{n % 3}")

    dataset = dataset_from_cases(source, suite="s").limited(4)
    pulled.clear()
    assert [case.id for case in dataset.cases()] == ["c0", "c1", "c2", "c3"]
    assert len(pulled) == 4  # not the 30,000 of a whole pass


def test_a_long_generation_says_how_far_it_is(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(datasets, "_PROGRESS_AFTER_S", 0.0)  # as if each story took the 5 s before the first line
    monkeypatch.setattr(datasets, "_PROGRESS_EVERY_S", 0.0)
    done = cli("main.py", "run", "--suite", "story-graph", "--count", "1000", "--limit", "2", "--model", "test",
               "--results-dir", str(tmp_path), "--quiet")  # fmt: skip
    assert done.returncode == 0, done.stderr
    said = [re.sub(r"about \d+ s left", "about N s left", line) for line in done.stderr.splitlines()]
    assert said == [  # a line every 256 stories, once the first 5 s have passed (here: at once)
        f"generating the cases: {count} of 1,000 ({share}%), about N s left (each is made once before the first is "
        "posed)"
        for count, share in (("256", 25), ("512", 51), ("768", 76))
    ]
    (samples,) = tmp_path.rglob("samples.jsonl")
    assert [json.loads(line)["case_id"] for line in samples.read_text().splitlines()] == ["story-42-1", "story-42-2"]


# --- 12: two installed suites of one name ----------------------------------------------------------------------

TWIN_PYPROJECT = """\
[build-system]
requires = ["setuptools>=77"]
build-backend = "setuptools.build_meta"

[project]
name = "twin-bench"
version = "1.0"

[project.entry-points."typed_eval.suites"]
farel = "twin_bench:SUITE"
"""

TWIN_MODULE = '''\
"""A plug-in that registers a suite under a name the built-in FaRel has."""

from pydantic import BaseModel

import evaluator


class Params(BaseModel):
    pass


def build(params: Params) -> tuple[evaluator.Task[int], list[evaluator.Case]]:
    task = evaluator.Task(name="twin", output_type=int, score=lambda case, out: 1.0)
    return task, [evaluator.Case(id=f"twin-{k}", prompt="Say 1.") for k in range(2)]


SUITE = evaluator.Suite(name="farel", params=Params, build=build, description="not FaRel")
'''

BUILT_IN = "typed_eval.suites.farel.suite:FAREL"


@pytest.fixture(scope="module")
def twin_site(tmp_path_factory: pytest.TempPathFactory) -> Path:
    files = {"pyproject.toml": TWIN_PYPROJECT, "twin_bench.py": TWIN_MODULE}
    return install_package(tmp_path_factory.mktemp("twin"), files)


def with_twin(site: Path, *args: str) -> subprocess.CompletedProcess[str]:
    return run_with(site, "main.py", *args)


def test_two_suites_of_one_name_are_listed_apart_and_said_in_one_line(twin_site: Path) -> None:
    listed = with_twin(twin_site, "suites")
    assert listed.returncode == 0, listed.stderr
    version = metadata.version("typed-eval")
    farels = [line for line in listed.stdout.splitlines() if line.startswith("farel (")]
    assert [line.split(":", 1)[0] for line in farels] == [
        "farel (twin-bench 1.0, twin_bench", f"farel (typed-eval {version}, {BUILT_IN.split(':')[0]}",
    ]  # fmt: skip
    assert listed.stderr.splitlines() == [
        f"main.py: note: 2 installed suites are named 'farel': twin_bench:SUITE (twin-bench 1.0), {BUILT_IN} "
        f"(typed-eval {version}): `--suite farel` runs neither, `--suite MODULE:OBJECT` picks one"
    ]


def test_a_run_of_a_name_two_suites_have_is_refused_and_each_is_picked_by_its_entry_point(
    twin_site: Path, tmp_path: Path
) -> None:
    version = metadata.version("typed-eval")
    refused = with_twin(twin_site, "run", "--suite", "farel", "--model", "test", "--results-dir", str(tmp_path))
    assert refused.returncode == 2
    (line,) = refused.stderr.splitlines()
    assert line.startswith("main.py: error: 2 installed suites are named 'farel': twin_bench:SUITE (twin-bench 1.0), ")
    assert line.endswith(f", {BUILT_IN} (typed-eval {version}): name one by its entry point (--suite twin_bench:SUITE)")
    assert not tmp_path.exists() or not any(tmp_path.iterdir())
    for suite, cases in (("twin_bench:SUITE", ["twin-0", "twin-1"]), (BUILT_IN, ["q00001", "q00051"])):
        done = with_twin(twin_site, "run", "--suite", suite, "--limit", "2", "--model", "test", "--results-dir",
                         str(tmp_path / suite), "--quiet")  # fmt: skip
        assert done.returncode == 0, done.stderr
        (samples,) = (tmp_path / suite).rglob("samples.jsonl")
        assert sorted(json.loads(line)["case_id"] for line in samples.read_text().splitlines()) == cases, suite


# --- 15: unquoted YAML dates, read as promptfoo reads them ---------------------------------------------------------

DATED = """\
prompts: ['{{reply}}']
tests:
  - vars:
      reply: "{{day}} {{when.at}} {{f}}"
      day: 2024-03-01
      when: {at: 2024-03-01T10:20:30.5+02:00}
      f: file://dates.yaml
    assert:
      - {type: contains, value: '[object Object] [object Object] {"day":"2024-03-01T00:00:00.000Z"'}
      - {type: python, value: "context['vars']['day'] == {} and context['vars']['when'] == {'at': {}}"}
  - vars: {reply: "{}", text: 2023-02-29}
    assert:
      - {type: equals, value: 2024-03-01 10:20:30}
      - {type: python, value: "context['vars']['text'] == '2023-02-29'"}
"""


@pytest.mark.parametrize("zone", ["UTC", "Pacific/Kiritimati", "America/St_Johns"])
def test_unquoted_dates_are_read_as_promptfoo_reads_them_in_any_time_zone(zone: str, tmp_path: Path) -> None:
    (tmp_path / "cases.yaml").write_text(DATED)
    (tmp_path / "dates.yaml").write_text("day: 2024-03-01\nat: [2001-12-14t21:59:43.10-05:00, 0024-03-01 23:00:00]\n")
    with FakeOpenAI(lambda request: completion(text(prompt_of(request)))) as server:
        done = subprocess.run(
            [PYTHON, "main.py", "run", "--suite", str(tmp_path / "cases.yaml"), "--model", "m", "--base-url",
             server.url, "--api-key", "k", "--results-dir", str(tmp_path / "r"), "--quiet"],
            cwd=REPO, env={**os.environ, "TZ": zone}, capture_output=True, text=True, timeout=300, check=False,
        )  # fmt: skip
    assert done.returncode == 0, done.stderr
    (samples,) = (tmp_path / "r").rglob("samples.jsonl")
    records = [json.loads(line) for line in samples.read_text().splitlines()]
    assert [(r["prompt"], r["score"], r["score_details"]["pass"]) for r in records] == [
        ('[object Object] [object Object] {"day":"2024-03-01T00:00:00.000Z","at":["2001-12-15T02:59:43.100Z",'
         '"0024-03-01T23:00:00.000Z"]}', 1.0, True),
        ("{}", 1.0, True),
    ]  # fmt: skip


def test_a_date_as_a_key_is_refused_as_promptfoo_refuses_it(tmp_path: Path) -> None:
    path = tmp_path / "cases.yaml"
    path.write_text(
        "prompts: ['{{v}}']\ntests:\n  - vars: {v: {2024-03-01: x}}\n    assert: [{type: contains, value: x}]\n"
    )
    done = cli("main.py", "run", "--suite", str(path), "--model", "test", "--results-dir", str(tmp_path / "r"))
    assert (done.returncode, done.stderr.splitlines()) == (2, [
        f"main.py: error: case file {path} is not valid YAML: the key 2024-03-01 is a date to promptfoo (a JavaScript "
        'Date), which it refuses as a key: quote it in "<unicode string>", line 3, column 16: - vars: {v: {2024-03-01: '
        "x}} ^"
    ])  # fmt: skip
