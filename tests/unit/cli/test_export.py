"""The `export` command and the dataset card (YAML configs, Hugging Face loader)."""

from __future__ import annotations

import json
import os
from pathlib import Path

import pyarrow.parquet as pq
import pytest
import typer
import yaml
from typer.testing import CliRunner

from testbed.cli.export import export_command
from testbed.db.engine import open_database
from testbed.db.recorder import create_job
from testbed.errors import InputError
from testbed.export import SCHEMAS, TABLE_NAMES
from testbed.testing.sample_run import record_sample_run
from tests.unit.export.test_dataset import plain_turns, record_turns


@pytest.fixture(scope="module")
def url(tmp_path_factory: pytest.TempPathFactory) -> str:
    url = f"sqlite:///{tmp_path_factory.mktemp('cli') / 'testbed.db'}"
    db = open_database(url)
    job = create_job(db, "j", job_id="2" * 32)
    record_turns(db, record_sample_run(db, job_id=job), plain_turns(3))
    record_sample_run(db, outcome="failed")
    return url


def _app() -> typer.Typer:
    app = typer.Typer()
    app.command("export")(export_command)
    app.command("noop")(lambda: None)  # keep "export" a sub-command
    return app


def test_export_command(url: str, tmp_path: Path) -> None:
    out = tmp_path / "ds"
    result = CliRunner().invoke(_app(), ["export", str(out), "--db", url, "--job", "222222", "--tasks-dir",
                                         str(tmp_path)])  # fmt: skip
    assert result.exit_code == 0, result.output
    assert "commands" in result.output and "job 2222" in result.output
    assert pq.read_metadata(out / "commands.parquet").num_rows == 5
    assert pq.read_metadata(out / "model_turns.parquet").num_rows == 3
    assert "model_turns" in result.output
    result = CliRunner().invoke(_app(), ["export", str(out), "--db", url, "--no-redact", "-q"])
    assert result.exit_code == 0 and result.output == ""
    assert pq.read_metadata(out / "commands.parquet").num_rows == 10
    assert "redaction | off" in (out / "README.md").read_text()


@pytest.mark.parametrize(
    ("args", "field"),
    [(["--job", "9999999"], "--job"), (["--since", "2024-13-01"], "--since"), (["--since", "soon"], "--since")],
)
def test_bad_input(url: str, tmp_path: Path, args: list[str], field: str) -> None:
    result = CliRunner().invoke(_app(), ["export", str(tmp_path / "x"), "--db", url, *args])
    assert isinstance(result.exception, InputError) and result.exception.field == field
    assert not (tmp_path / "x").exists()


def test_card_front_matter_and_schema(url: str, tmp_path: Path) -> None:
    CliRunner().invoke(_app(), ["export", str(tmp_path), "--db", url, "-q"])
    text = (tmp_path / "README.md").read_text()
    assert text.startswith("---\n")
    front = yaml.safe_load(text.split("---\n")[1])
    assert [c["config_name"] for c in front["configs"]] == list(TABLE_NAMES)
    for config in front["configs"]:
        assert config["data_files"] == [{"split": "train", "path": f"{config['config_name']}.parquet"}]
    for table in TABLE_NAMES:
        for f in SCHEMAS[table]:
            assert f"| `{f.name}` |" in text
    assert "| `commands` | `commands.parquet` | 10 |" in text
    assert "| `model_turns` | `model_turns.parquet` | 3 |" in text
    assert "| `retry_of` | `string` | yes |" in text and "| `messages` | `string` | no |" in text
    assert "| `started_at` | `timestamp[us, UTC]` | no |" in text
    assert "| `impact` | `list<string>` | no |" in text


def test_hugging_face_loader(url: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    datasets = pytest.importorskip("datasets")
    monkeypatch.setenv("HF_DATASETS_OFFLINE", "1")
    monkeypatch.setenv("HF_HUB_OFFLINE", "1")
    out = tmp_path / "ds"
    CliRunner().invoke(_app(), ["export", str(out), "--db", url, "-q"])
    cache = str(tmp_path / "cache")
    ds = datasets.load_dataset("parquet", data_files={"commands": str(out / "commands.parquet")}, cache_dir=cache)
    assert ds["commands"].num_rows == 10 and ds["commands"][2]["impact"] == ["service-restart"]
    runs = datasets.load_dataset(os.fspath(out), "runs", cache_dir=cache)  # through the card's configs
    assert runs["train"].num_rows == 2
    assert sorted(runs["train"]["retry"]) == [0, 0] and runs["train"]["retry_of"] == [None, None]
    turns = datasets.load_dataset(os.fspath(out), "model_turns", cache_dir=cache)["train"]
    assert turns.num_rows == 3 and turns["seq"] == [1, 2, 3] and turns["total_tokens"] == [320, 370, 420]
    assert json.loads(turns[0]["messages"])[1] == {"role": "user", "content": "Serve the site on port 8080."}
    assert turns.features["started_at"].dtype == "timestamp[us, tz=UTC]"
