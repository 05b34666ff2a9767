"""Where the schemas suite's schemas come from: JSONSchemaBench downloaded from a loopback stand-in for the Hugging
Face Hub (HF_ENDPOINT; the endpoints huggingface_hub calls, with their headers), then read from the cache with the
server gone; the SchemaStore schemas inside the installed check-jsonschema; and a source that cannot be read, said
in one line with exit 2, through `main.py run` as a user runs it."""

from __future__ import annotations

import hashlib
import importlib.metadata
import importlib.resources
import json
import os
import shutil
import socket
import subprocess
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any
from urllib.parse import unquote, urlsplit

import duckdb
import pytest

from tests.cli_run import run_cli
from tests.conftest import PYTHON, REPO
from typed_eval.core.datasets import Dataset
from typed_eval.suites.schemas.data import text_case
from typed_eval.suites.schemas.hub import REPO_ID, REVISION, load_hub
from typed_eval.suites.schemas.schemastore import load_schemastore
from typed_eval.suites.schemas.suite import SCHEMAS, SchemasParams

PERSON = {"type": "object", "properties": {"name": {"type": "string"}}, "required": ["name"]}
PORTS = {"type": "array", "items": {"type": "integer", "minimum": 1, "maximum": 65535}}
POD = {"type": "object", "properties": {"kind": {"const": "Pod"}}, "additionalProperties": False}


def parquet(folder: Path, rows: list[tuple[str, str]]) -> bytes:
    """A Parquet file as the dataset's: one row per schema, `json_schema` (its text) and `unique_id`."""
    file = folder / "rows.parquet"
    with duckdb.connect(":memory:") as connection:
        connection.execute("CREATE TABLE rows (json_schema VARCHAR, unique_id VARCHAR)")
        connection.executemany("INSERT INTO rows VALUES (?, ?)", [(text, unique_id) for unique_id, text in rows])
        connection.execute(f"COPY rows TO '{file}' (FORMAT parquet)")
    content = file.read_bytes()
    file.unlink()
    return content


def dataset_files(folder: Path) -> dict[str, bytes]:
    """Three sets laid out as the dataset at its pinned commit (`<set>/<split>-00000-of-00001.parquet`), a card."""
    return {
        "README.md": b"---\nlicense: mit\n---\n# JSONSchemaBench\n",
        "Snowplow/train-00000-of-00001.parquet": parquet(folder, [("s2", json.dumps(PERSON, indent=2))]),
        "Snowplow/test-00000-of-00001.parquet": parquet(folder, [("s1", json.dumps(PORTS))]),
        "Kubernetes/val-00000-of-00001.parquet": parquet(folder, [("pod", json.dumps(POD)), ("broken", "{not json")]),
        "Glaiveai2K/train-00000-of-00001.parquet": parquet(folder, [("g", json.dumps(PERSON))]),
    }


class StandInHub:
    """A loopback server answering what huggingface_hub asks of the Hub for a dataset at a commit: the revision's
    info (`/api/datasets/<repo>/revision/<rev>`, huggingface_hub before 2.x), its file tree (`.../tree/<rev>`, 2.x),
    and each file (`HEAD`/`GET /datasets/<repo>/resolve/<rev>/<path>`, with X-Repo-Commit, ETag and
    Content-Length). `status` other than 200 answers every request with it."""

    def __init__(self, files: dict[str, bytes], status: int = 200) -> None:
        self.files = files
        self.status = status
        self.requests: list[tuple[str, str]] = []
        hub = self

        class Handler(BaseHTTPRequestHandler):
            def log_message(self, format: str, *args: Any) -> None:
                pass

            def do_HEAD(self) -> None:
                hub.answer(self, with_body=False)

            def do_GET(self) -> None:
                hub.answer(self, with_body=True)

        self.server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.url = f"http://127.0.0.1:{self.server.server_address[1]}"

    def answer(self, request: BaseHTTPRequestHandler, *, with_body: bool) -> None:
        path = unquote(urlsplit(request.path).path)
        self.requests.append((request.command, path))
        api = f"/api/datasets/{REPO_ID}/"
        resolve = f"/datasets/{REPO_ID}/resolve/{REVISION}/"
        if self.status != 200:
            self.send(request, self.status, b'{"error": "the hub is down"}', {}, with_body)
        elif path == f"{api}revision/{REVISION}":
            info = {"id": REPO_ID, "sha": REVISION, "siblings": [{"rfilename": name} for name in self.files]}
            self.send(request, 200, json.dumps(info).encode(), {"Content-Type": "application/json"}, with_body)
        elif path == f"{api}tree/{REVISION}":
            tree = [
                {"type": "file", "path": name, "size": len(content), "oid": hashlib.sha1(content).hexdigest()}
                for name, content in self.files.items()
            ]
            self.send(request, 200, json.dumps(tree).encode(), {"Content-Type": "application/json"}, with_body)
        elif path.startswith(resolve) and path.removeprefix(resolve) in self.files:
            content = self.files[path.removeprefix(resolve)]
            headers = {"X-Repo-Commit": REVISION, "ETag": f'"{hashlib.sha256(content).hexdigest()}"'}
            self.send(request, 200, content, headers, with_body)
        else:
            self.send(request, 404, b'{"error": "not found"}', {"X-Error-Code": "EntryNotFound"}, with_body)

    @staticmethod
    def send(
        request: BaseHTTPRequestHandler, status: int, body: bytes, headers: dict[str, str], with_body: bool
    ) -> None:
        request.send_response(status)
        for name, value in headers.items():
            request.send_header(name, value)
        request.send_header("Content-Length", str(len(body)))
        request.end_headers()
        if with_body:
            request.wfile.write(body)

    @contextmanager
    def running(self) -> Iterator[StandInHub]:
        thread = threading.Thread(target=self.server.serve_forever, args=(0.02,), daemon=True)
        thread.start()
        try:
            yield self
        finally:
            self.server.shutdown()
            self.server.server_close()
            thread.join()


def closed_port_url() -> str:
    """An address where nothing listens."""
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return f"http://127.0.0.1:{probe.getsockname()[1]}"


# --- JSONSchemaBench from the Hub --------------------------------------------------------------------------------


def test_jsonschemabench_is_downloaded_once_at_the_pinned_commit_then_read_from_the_cache(tmp_path: Path) -> None:
    files = dataset_files(tmp_path)
    cache = tmp_path / "cache"
    with StandInHub(files).running() as hub:
        got = load_hub(["Kubernetes", "Snowplow"], endpoint=hub.url, cache_dir=cache)
    fetched = sorted({path for method, path in hub.requests if "/resolve/" in path})
    assert fetched == [
        f"/datasets/{REPO_ID}/resolve/{REVISION}/Kubernetes/val-00000-of-00001.parquet",
        f"/datasets/{REPO_ID}/resolve/{REVISION}/Snowplow/test-00000-of-00001.parquet",
        f"/datasets/{REPO_ID}/resolve/{REVISION}/Snowplow/train-00000-of-00001.parquet",
    ]  # only the sets asked for: not Glaiveai2K, not the card
    cases = [(case.id, case.group, case.prompt, case.metadata) for case in got.cases]
    assert cases == [  # the benchmark's order of sets (Snowplow before Kubernetes), train before test
        ("Snowplow/s2", "Snowplow", json.dumps(PERSON), {"unique_id": "s2", "split": "train"}),
        ("Snowplow/s1", "Snowplow", json.dumps(PORTS), {"unique_id": "s1", "split": "test"}),
        ("Kubernetes/pod", "Kubernetes", json.dumps(POD), {"unique_id": "pod", "split": "val"}),
        ("Kubernetes/broken", "Kubernetes", "{not json",
         {"unique_id": "broken", "split": "val", "problem": "not JSON: Expecting property name enclosed in double "
          "quotes: line 1 column 2 (char 1)"}),
    ]  # fmt: skip
    digest = hashlib.sha256()
    for name in ("Snowplow/train-00000-of-00001.parquet", "Snowplow/test-00000-of-00001.parquet",
                 "Kubernetes/val-00000-of-00001.parquet"):  # fmt: skip
        digest.update(name.encode() + b"\0" + files[name])
    assert (got.revision, got.dataset_hash) == (REVISION, digest.hexdigest())
    assert got.source == f"hf://datasets/{REPO_ID}@{REVISION}"
    assert got.folder == cache / "datasets--epfl-dlab--JSONSchemaBench" / "snapshots" / REVISION

    again = load_hub(["Kubernetes", "Snowplow"], endpoint=closed_port_url(), cache_dir=cache)  # the server is gone
    assert (again.cases, again.dataset_hash) == (got.cases, got.dataset_hash)


def run_schemas(tmp_path: Path, *settings: str, env: dict[str, str] | None = None) -> subprocess.CompletedProcess[str]:
    """`main.py run --suite schemas`, in this process unless given `env` (Hugging Face settings): then in a process
    of its own, as huggingface_hub reads HF_ENDPOINT and HF_HOME once, when first imported
    (`huggingface_hub.constants`), so in this process they would be whatever they were then."""
    args = ["run", "--suite", "schemas", *(arg for s in settings for arg in ("-S", s)), "--model", "test",
            "--results-dir", str(tmp_path / "runs")]  # fmt: skip
    if env is None:
        return run_cli("main.py", *args, env=without_hf())
    return subprocess.run(
        [PYTHON, "main.py", *args], cwd=REPO, capture_output=True, text=True, timeout=300, check=False,
        env={**without_hf(), **env},
    )  # fmt: skip


def without_hf() -> dict[str, str]:
    """This process's environment without the Hugging Face settings a test sets itself (HF_HOME, HF_ENDPOINT...)."""
    return {name: value for name, value in os.environ.items() if not name.startswith("HF_")}


def test_a_run_picks_jsonschemabench_by_name_and_records_its_commit_and_hash(tmp_path: Path) -> None:
    hub_env = {"HF_HOME": str(tmp_path / "hf")}
    with StandInHub(dataset_files(tmp_path)).running() as hub:
        done = run_schemas(tmp_path, "source=jsonschemabench", "sets=Snowplow", env={**hub_env, "HF_ENDPOINT": hub.url})
    assert done.returncode == 0, done.stderr
    (summary,) = (tmp_path / "runs").glob("*/*/summary.json")
    dataset = json.loads(summary.read_text())["dataset"]
    snapshot = tmp_path / "hf" / "hub" / "datasets--epfl-dlab--JSONSchemaBench" / "snapshots" / REVISION
    expected_hash = load_hub(["Snowplow"], endpoint=closed_port_url(), cache_dir=tmp_path / "hf" / "hub").dataset_hash
    assert (dataset["path"], dataset["cases"], dataset["params"]) == (
        f"hf://datasets/{REPO_ID}@{REVISION}",
        2,
        {"revision": REVISION, "dataset_hash": expected_hash},
    )
    assert sorted(p.relative_to(snapshot).as_posix() for p in snapshot.rglob("*.parquet")) == [
        "Snowplow/test-00000-of-00001.parquet",
        "Snowplow/train-00000-of-00001.parquet",
    ]
    (samples,) = (tmp_path / "runs").glob("*/*/samples.jsonl")
    records = [json.loads(line) for line in samples.read_text().splitlines()]
    assert sorted((r["case_id"], r["group"]) for r in records) == [
        ("Snowplow/s1", "Snowplow"),
        ("Snowplow/s2", "Snowplow"),
    ]

    shutil.rmtree(tmp_path / "runs")  # again with the Hub gone: read from HF_HOME's cache
    done = run_schemas(
        tmp_path, "source=jsonschemabench", "sets=Snowplow", env={**hub_env, "HF_ENDPOINT": closed_port_url()}
    )
    assert done.returncode == 0, done.stderr
    (summary,) = (tmp_path / "runs").glob("*/*/summary.json")
    assert json.loads(summary.read_text())["dataset"]["params"] == {"revision": REVISION, "dataset_hash": expected_hash}


def test_a_hub_that_fails_with_nothing_cached_is_one_line_and_exit_2(tmp_path: Path) -> None:
    """A Hub refusing every request (400: huggingface_hub's retries of a 5xx, about 23 s of back-off, are its own)."""
    with StandInHub(dataset_files(tmp_path), status=400).running() as hub:
        done = run_schemas(
            tmp_path, "source=jsonschemabench", env={"HF_HOME": str(tmp_path / "hf"), "HF_ENDPOINT": hub.url}
        )
    lines = done.stderr.splitlines()
    assert (done.returncode, len(lines)) == (2, 1), lines
    assert lines[0].startswith(
        f"main.py: error: cannot get JSONSchemaBench ({REPO_ID} at {REVISION}) from {hub.url}, and it is not cached: "
        "BadRequestError: Bad request"
    ), lines
    asked = [path for _, path in hub.requests if REPO_ID in path]  # the library also asks for its own registries
    assert asked and all(REVISION in path for path in asked)


def test_a_schema_text_nested_past_the_parser_is_its_case_s_error() -> None:
    deep = "[" * 200_000 + "]" * 200_000
    case = text_case("Github_ultra/deep", "Github_ultra", deep, {"unique_id": "deep", "split": "test"})
    assert (case.prompt, case.metadata) == (
        deep,
        {
            "unique_id": "deep",
            "split": "test",
            "problem": "not JSON: maximum recursion depth exceeded while decoding a JSON array from a unicode string",
        },
    )


# --- SchemaStore's schemas inside check-jsonschema ---------------------------------------------------------------


def test_schemastore_s_schemas_are_read_from_the_installed_check_jsonschema() -> None:
    version = importlib.metadata.version("check-jsonschema")
    vendored = importlib.resources.files("check_jsonschema.builtin_schemas.vendor")
    names = sorted(entry.name for entry in vendored.iterdir() if entry.name.endswith(".json"))
    _, dataset = SCHEMAS.build(SchemasParams(source="schemastore"))
    assert isinstance(dataset, Dataset)
    cases = list(dataset.cases())
    assert [case.id for case in cases] == [f"schemastore/{name.removesuffix('.json')}" for name in names]
    assert {case.group for case in cases} == {"schemastore"}
    if version == "0.39.0":  # the vendored set changes with the package's releases
        assert len(cases) == 26
        assert [case.id for case in cases][:3] == [
            "schemastore/azure-pipelines",
            "schemastore/bamboo-spec",
            "schemastore/bitbucket-pipelines",
        ]
    workflows = next(case for case in cases if case.id == "schemastore/github-workflows")
    text = vendored.joinpath("github-workflows.json").read_text(encoding="utf-8")
    assert workflows.prompt == json.dumps(json.loads(text))
    assert workflows.metadata["file"] == "github-workflows.json"
    store = load_schemastore()
    assert dataset.info.params == {"check_jsonschema_version": version, "dataset_hash": store.dataset_hash}
    assert dataset.info.path == str(store.folder)


def test_schemastore_is_found_without_importing_check_jsonschema() -> None:
    probe = (
        "import sys; from typed_eval.suites.schemas.schemastore import load_schemastore; "
        "cases = load_schemastore().cases; print(len(cases), 'check_jsonschema' in sys.modules)"
    )
    done = subprocess.run([PYTHON, "-c", probe], cwd=REPO, capture_output=True, text=True, check=True)
    assert done.stdout.split()[1] == "False"
    assert int(done.stdout.split()[0]) > 20


# --- sources that cannot be read ---------------------------------------------------------------------------------


def without_read_override() -> list[str]:
    """As root, every folder is readable: the command runs without the capabilities that override permissions
    (setpriv drops them from the bounding set), as a user's process would."""
    if os.geteuid() != 0:
        return []
    if shutil.which("setpriv") is None:
        pytest.skip("root without setpriv: a folder cannot be made unreadable")
    return ["setpriv", "--bounding-set=-dac_override,-dac_read_search"]


def run_as_user(tmp_path: Path, *settings: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [*without_read_override(), PYTHON, "main.py", "run", "--suite", "schemas",
         *(arg for s in settings for arg in ("-S", s)), "--model", "test", "--results-dir", str(tmp_path / "runs")],
        cwd=REPO, capture_output=True, text=True, timeout=300, check=False,
    )  # fmt: skip


def one_line_error(done: subprocess.CompletedProcess[str]) -> str:
    lines = done.stderr.splitlines()
    assert (done.returncode, len(lines)) == (2, 1), done.stderr
    return lines[0]


def test_an_unreadable_set_folder_is_one_line_and_exit_2_not_a_set_left_out(tmp_path: Path) -> None:
    data = tmp_path / "data"
    for name in ("Snowplow", "Kubernetes"):
        (data / name).mkdir(parents=True)
        (data / name / "a.json").write_text(json.dumps(PERSON), encoding="utf-8")
    (data / "Kubernetes").chmod(0)
    try:
        done = run_as_user(tmp_path, f"path={data}")
    finally:
        (data / "Kubernetes").chmod(0o755)
    assert one_line_error(done) == f"main.py: error: cannot read schema folder {data / 'Kubernetes'}: Permission denied"


def test_an_unreadable_schema_file_is_one_line_and_exit_2(tmp_path: Path) -> None:
    schema = tmp_path / "mine.json"
    schema.write_text(json.dumps(PERSON), encoding="utf-8")
    schema.chmod(0)
    done = run_as_user(tmp_path, f"path={schema}")
    assert one_line_error(done) == f"main.py: error: cannot read schema file {schema}: Permission denied"


def test_a_file_gone_from_the_folder_is_one_line_and_exit_2(tmp_path: Path) -> None:
    (tmp_path / "data" / "Snowplow").mkdir(parents=True)
    gone = tmp_path / "data" / "Snowplow" / "gone.json"
    gone.symlink_to(tmp_path / "moved.json")  # a link to a file no longer there
    done = run_schemas(tmp_path, f"path={tmp_path / 'data'}")
    assert one_line_error(done) == f"main.py: error: cannot read schema file {gone}: No such file or directory"


@pytest.mark.parametrize(
    ("settings", "message"),
    [
        (("source=schemastore", "path=x"), "give one of source, path and model, not source and path"),
        (("source=sample", "model=a:B"), "give one of source, path and model, not source and model"),
        (("revision=main",), "revision is the Hugging Face dataset's commit: give it with source=jsonschemabench"),
        (("source=hub",), "suite schemas: source=hub: Input should be 'sample', 'jsonschemabench' or 'schemastore'"),
        (("source=jsonschemabench", "sets=Snowplow,Nosuch"), "no schemas of set 'Nosuch'; the sets here are "
         "Github_easy, Github_hard, Github_medium, Github_trivial, Github_ultra, Glaiveai2K, JsonSchemaStore, "
         "Kubernetes, Snowplow, WashingtonPost"),
    ],
)  # fmt: skip
def test_sources_given_wrong_are_one_line_and_exit_2_before_any_download(
    tmp_path: Path, settings: tuple[str, ...], message: str
) -> None:
    done = run_schemas(tmp_path, *settings, env={"HF_ENDPOINT": closed_port_url(), "HF_HOME": str(tmp_path / "hf")})
    assert one_line_error(done) == f"main.py: error: {message}"
    assert not (tmp_path / "hf").exists()
