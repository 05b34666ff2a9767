"""BFCL's data: the shipped sample, a folder, and a bfcl-eval installed `--no-deps` found without being imported;
the version and hash recorded; one-line errors for each kind of bad input."""

from __future__ import annotations

import importlib.metadata
import os
import shutil
import sys
from pathlib import Path

import pytest

from typed_eval.core.errors import InputError
from typed_eval.suites.bfcl import data

SAMPLE_HASH = "f04e5c2a7ae119c75f922fa327b09eb18b7d708f1c6ca2c4d308cc3c7108f62e"


def test_the_sample_has_five_cases_of_every_single_turn_category() -> None:
    sample = data.load_sample()
    assert sample.version == "2026.3.23 (sample)"
    assert sample.dataset_hash == SAMPLE_HASH
    assert [case.category for case in sample.cases] == [c for c in data.SINGLE_TURN_CATEGORIES for _ in range(5)]
    assert [case.id for case in sample.by_category("live_parallel")] == [
        "live_parallel_0-0-0",
        "live_parallel_3-0-3",
        "live_parallel_6-3-0",
        "live_parallel_9-5-0",
        "live_parallel_12-8-0",
    ]
    first = sample.cases[0]
    assert first.question == [
        {"role": "user", "content": "Find the area of a triangle with a base of 10 units and height of 5 units."}
    ]
    assert [doc["name"] for doc in first.functions] == ["calculate_triangle_area"]
    assert first.ground_truth == [{"calculate_triangle_area": {"base": [10], "height": [5], "unit": ["units", ""]}}]
    assert [case.ground_truth for case in sample.by_category("irrelevance")] == [None] * 5
    assert (data.SAMPLE_DIR / "LICENSE").read_text().startswith("\n                                 Apache License")
    assert "`bfcl-eval` package,\nversion 2026.3.23" in (data.SAMPLE_DIR / "NOTICE").read_text()


def test_categories_are_picked_in_bfcls_order_and_hashed_by_what_was_read() -> None:
    assert data.parse_categories(None) == data.SINGLE_TURN_CATEGORIES
    assert data.parse_categories(" live_simple, simple_python ") == ("simple_python", "live_simple")
    picked = data.load_sample(["live_simple", "simple_python"])
    assert picked.dataset_hash == data.load_sample(["simple_python", "live_simple"]).dataset_hash != SAMPLE_HASH
    assert [case.category for case in picked.cases] == ["simple_python"] * 5 + ["live_simple"] * 5
    with pytest.raises(InputError) as raised:
        data.parse_categories("simple_python,multi_turn_base")
    assert str(raised.value) == (
        "unknown BFCL category 'multi_turn_base'; the single-turn categories are simple_python, simple_java,"
        " simple_javascript, multiple, parallel, parallel_multiple, irrelevance, live_simple, live_multiple,"
        " live_parallel, live_parallel_multiple, live_irrelevance, live_relevance"
    )
    with pytest.raises(InputError, match=r"^unknown BFCL category 'simple'"):
        data.load_sample(["simple"])


def copy_sample(folder: Path) -> Path:
    shutil.copytree(data.SAMPLE_DIR, folder)
    return folder


def test_a_folder_reads_as_the_sample_does(tmp_path: Path) -> None:
    folder = copy_sample(tmp_path / "bfcl")
    loaded = data.load_folder(folder)
    assert (loaded.version, loaded.source, loaded.dataset_hash) == (None, str(folder), SAMPLE_HASH)
    assert loaded.cases == data.load_sample().cases


@pytest.mark.parametrize(
    ("line", "message"),
    [
        ('{"id": "irrelevance_9", "question": ', "not a JSON object (Expecting value: line 1 column 37 (char 36))"),
        ("[1, 2]", 'not a JSON object with an "id" string'),
        (
            '{"id": "irrelevance_9", "question": [], "function": []}',
            '"question" must be a list holding the turn\'s list of messages',
        ),
        (
            '{"id": "irrelevance_9", "question": [[{"role": "user"}]], "function": []}',
            'every message must be an object with a "content" string',
        ),
        (
            '{"id": "irrelevance_9", "question": [[]], "function": [{"name": "f"}]}',
            '"function" must be a list of docs with a name and parameters.properties',
        ),
        (
            '{"id": "irrelevance_9", "question": [[{"role": "tool", "content": "x"}]], "function": []}',
            "the turn's messages must be system, user, assistant ones, the last not the assistant's",
        ),
        (
            '{"id": "irrelevance_9", "question": [[{"role": "assistant", "content": "x"}]], "function": []}',
            "the turn's messages must be system, user, assistant ones, the last not the assistant's",
        ),
    ],
)
def test_a_malformed_line_is_one_error_naming_file_and_line(tmp_path: Path, line: str, message: str) -> None:
    folder = copy_sample(tmp_path / "bfcl")
    path = folder / "BFCL_v4_irrelevance.json"
    path.write_text(path.read_text() + line + "\n")
    with pytest.raises(InputError) as raised:
        data.load_folder(folder, ["irrelevance"])
    assert str(raised.value) == f"{path}:6: {message}"


def test_answers_must_match_the_cases(tmp_path: Path) -> None:
    folder = copy_sample(tmp_path / "bfcl")
    answers = folder / "possible_answer" / "BFCL_v4_parallel.json"
    lines = answers.read_text().splitlines(keepends=True)
    answers.write_text("".join(lines[:4]))
    with pytest.raises(InputError) as raised:
        data.load_folder(folder, ["parallel"])
    assert str(raised.value) == f"{folder / 'BFCL_v4_parallel.json'}: 5 cases but 4 possible answers"
    answers.write_text("".join([lines[1], lines[0], *lines[2:]]))
    with pytest.raises(InputError) as raised:
        data.load_folder(folder, ["parallel"])
    assert str(raised.value) == (
        f"{folder / 'BFCL_v4_parallel.json'}:1: its possible answer (at the same line) has the id 'parallel_40'"
    )
    (folder / "possible_answer" / "BFCL_v4_parallel.json").unlink()
    with pytest.raises(
        InputError, match=r"^cannot read BFCL data file .*possible_answer/BFCL_v4_parallel.json: No such file"
    ):
        data.load_folder(folder, ["parallel"])
    with pytest.raises(InputError, match=r"^BFCL data folder '.*nowhere' does not exist$"):
        data.load_folder(tmp_path / "nowhere")


@pytest.fixture
def no_real_bfcl_eval(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """The real bfcl-eval, where it is installed (multi-turn needs it), off the path until the test ends."""
    try:
        site = str(importlib.metadata.distribution("bfcl-eval").locate_file(""))
    except importlib.metadata.PackageNotFoundError:
        return
    monkeypatch.syspath_prepend(str(tmp_path))  # monkeypatch now restores the whole path when the test ends
    sys.path[:] = [entry for entry in sys.path if os.path.abspath(entry or ".") != site]


def install_fake(site: Path, version: str, *, with_data: bool = True) -> None:
    """A bfcl-eval as `pip install --no-deps` leaves it, whose package raises if anything imports it."""
    info = site / f"bfcl_eval-{version}.dist-info"
    info.mkdir(parents=True)
    (info / "METADATA").write_text(f"Metadata-Version: 2.4\nName: bfcl_eval\nVersion: {version}\n")
    package = site / "bfcl_eval"
    package.mkdir()
    (package / "__init__.py").write_text("raise ImportError('bfcl_eval must not be imported')\n")
    if with_data:
        shutil.copytree(data.SAMPLE_DIR, package / "data")


def test_the_installed_package_is_found_without_importing_it(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    install_fake(tmp_path, "2026.3.23")
    monkeypatch.syspath_prepend(str(tmp_path))
    imported = set(sys.modules)
    loaded = data.load_installed(["live_relevance"])  # the fake package raises if it is imported
    assert (loaded.version, loaded.source) == ("2026.3.23", str(tmp_path / "bfcl_eval" / "data"))
    assert loaded.dataset_hash == data.load_sample(["live_relevance"]).dataset_hash
    assert not {name for name in set(sys.modules) - imported if name.startswith("bfcl_eval")}


@pytest.mark.usefixtures("no_real_bfcl_eval")
def test_a_missing_or_wrong_bfcl_eval_is_one_line(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    with pytest.raises(InputError) as raised:
        data.load_installed()
    assert (
        str(raised.value)
        == "bfcl-eval is not installed; get BFCL's data with: pip install --no-deps bfcl-eval==2026.3.23"
    )
    old = tmp_path / "old"
    install_fake(old, "2025.10.1")
    monkeypatch.syspath_prepend(str(old))
    with pytest.raises(InputError) as raised:
        data.load_installed()
    assert str(raised.value) == (
        "bfcl-eval 2025.10.1 is installed, the suite reads 2026.3.23: pip install --no-deps bfcl-eval==2026.3.23"
    )


def test_an_installed_bfcl_eval_without_its_data_is_one_line(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    install_fake(tmp_path, "2026.3.23", with_data=False)
    monkeypatch.syspath_prepend(str(tmp_path))
    with pytest.raises(InputError) as raised:
        data.load_installed()
    assert str(raised.value) == (
        "bfcl-eval 2026.3.23 is installed but its data folder is missing; reinstall:"
        " pip install --no-deps bfcl-eval==2026.3.23"
    )
