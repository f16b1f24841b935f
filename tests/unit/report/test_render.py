"""Report rendering (Markdown, offline HTML with inline SVG) and the `report` command."""

from __future__ import annotations

import re
import xml.etree.ElementTree as ET
from pathlib import Path

import pytest
import typer
from sqlalchemy.orm import Session, sessionmaker
from typer.testing import CliRunner

from testbed.cli.report import report_command
from testbed.db.engine import open_database
from testbed.db.read.figures import compute_figures
from testbed.errors import InputError
from testbed.report.render import dur, format_for, pct, render_html, render_markdown
from tests.unit.db.test_read_figures import DEBIAN, JOB, seed_database


@pytest.fixture(scope="module")
def seeded(tmp_path_factory: pytest.TempPathFactory) -> tuple[str, sessionmaker[Session]]:
    url = f"sqlite:///{tmp_path_factory.mktemp('render') / 'testbed.db'}"
    db = open_database(url)
    seed_database(db)
    return url, db


def test_markdown_tables(seeded: tuple[str, sessionmaker[Session]]) -> None:
    _, db = seeded
    with db() as s:
        text = render_markdown(compute_figures(s))
    for row in (
        "| web | 2 | 1 | 1 | 0 | 0 | 50.0% |",
        "| database | 2 | 1 | 0 | 1 | 0 | 100.0% |",
        "| (unknown) | 1 | 0 | 0 | 0 | 1 | - |",
        f"| {DEBIAN} | 5 | 3 | 60.0% |",
        "| 6 | 1 | 1 | 1 | 3 |",
        "| file | 3 | 2 | 33.3% |",
        "| service-restart | 3 | 50.0% | 4 |",
        "| database | 2 | 20.0 s | 35.0 s | 50.0 s |",
        "| web | 2 | 1.7 min | 3.3 min | 5.0 min |",
        "| db-a | P | P holds | 1 |",
        "| web-a | R1 | R1 holds | 1 |",
    ):
        assert row in text, row
    assert "3 run(s) were checked after a reboot" in text


def test_html_is_offline_and_has_charts(seeded: tuple[str, sessionmaker[Session]]) -> None:
    _, db = seeded
    with db() as s:
        html = render_html(compute_figures(s))
    svgs = re.findall(r"<svg.*?</svg>", html, flags=re.DOTALL)
    assert len(svgs) == 12  # the study's 7 and the leaderboard's 5
    for svg in svgs:
        ET.fromstring(svg)  # well-formed XML
    assert "<script" not in html.lower() and "<link" not in html.lower()
    urls = set(re.findall(r"https?://[^\s\"'<>]+", html))
    assert urls == {"http://www.w3.org/2000/svg"}  # the SVG namespace only: nothing is fetched
    assert '<td>web</td><td class="n">2</td><td class="n">1</td>' in html
    assert "50.0%" in html and "3.3 min" in html


def test_html_escapes_labels(tmp_path: Path) -> None:
    from testbed.db.recorder import RunRecorder

    db = open_database(f"sqlite:///{tmp_path / 'x.db'}")
    rec = RunRecorder.create(db, task_id="t", agent="a", task_category="<script>alert(1)</script>")
    rec.finish("passed")
    with db() as s:
        html = render_html(compute_figures(s))
    assert "<script>" not in html and "&lt;script&gt;" in html


def test_formatting_helpers() -> None:
    assert (pct(None), pct(0.625), pct(1 / 3)) == ("-", "62.5%", "33.3%")
    assert (dur(None), dur(12.34), dur(270), dur(4320)) == ("-", "12.3 s", "4.5 min", "1.2 h")
    assert format_for(Path("r.MD")) == "markdown" and format_for(Path("r.htm")) == "html"
    with pytest.raises(InputError, match="--out"):
        format_for(Path("report.pdf"))


def _app() -> typer.Typer:
    app = typer.Typer()
    app.command("report")(report_command)
    app.command("noop")(lambda: None)  # keep "report" a sub-command
    return app


def test_report_command(seeded: tuple[str, sessionmaker[Session]], tmp_path: Path) -> None:
    url, _ = seeded
    runner = CliRunner()
    md = tmp_path / "r.md"
    result = runner.invoke(_app(), ["report", "--db", url, "--out", str(md)])
    assert result.exit_code == 0, result.output
    assert "6 run(s)" in result.output and "| web | 2 | 1 | 1 | 0 | 0 | 50.0% |" in md.read_text()

    html = tmp_path / "r.html"
    result = runner.invoke(
        _app(), ["report", "--db", url, "--job", JOB[:8], "--since", "2024-01-02", "--out", str(html)]
    )
    assert result.exit_code == 0, result.output
    assert "4 run(s)" in result.output and "<svg" in html.read_text()

    for args, field in (
        (["--out", str(tmp_path / "r.pdf")], "--out"),
        (["--out", str(tmp_path / "x.md"), "--job", "0123456789"], "--job"),
        (["--out", str(tmp_path / "x.md"), "--since", "yesterday"], "--since"),
    ):
        result = runner.invoke(_app(), ["report", "--db", url, *args])
        assert isinstance(result.exception, InputError) and result.exception.field == field, result.output
    assert not (tmp_path / "r.pdf").exists() and not (tmp_path / "x.md").exists()


def test_leaderboard_section_with_real_charts(tmp_path: Path) -> None:
    from testbed.testing.demo_models import seed_models

    db = open_database(f"sqlite:///{tmp_path / 'models.db'}")
    seed_models(db)
    with db() as s:
        figures = compute_figures(s)
    text = render_markdown(figures)
    rows = [ln for ln in text.splitlines() if ln.startswith("| openai:gpt-4.1-mini |")]
    # 6 of 7 passed, Wilson [48.7%, 97.4%]; pass@1 averages the cells; agent time, tokens and cost per solved.
    assert rows == ["| openai:gpt-4.1-mini | 7 | 6 | 1 | 0 | 85.7% [48.7%, 97.4%] | 83.3% | 100.0% | 0.0% | 14.3% "
                    "| 100.0% | 14.6 s | 6,309 | $0.0033 |"]  # fmt: skip
    assert "| pass@1 | pass@2 |" in text  # k: the largest number of attempts every agent has
    assert "| ubuntu-24.04 | openai:qwen2.5-coder-7b | 2 | 0 | 1 | 1 | 0.0% [0.0%, 79.3%] |" in text
    html = render_html(figures)
    charts = {m.group(1): m.group(0) for m in re.finditer(r"<svg[^>]*>\s*<title>([^<]*)</title>.*?</svg>", html,
                                                          flags=re.DOTALL)}  # fmt: skip
    board = charts["Pass rate by agent"]
    ET.fromstring(board)
    assert board.count('class="point"') == 3 and 'class="tick"' in board and "Wilson 95 % interval" in board
    assert "openai:qwen2.5-coder-7b" in board  # whole labels, nothing clipped
    assert ">$0.0033<" in charts["Cost per solved task by agent"]
    assert "median duration of the agent phase" in charts["Median agent time by agent"]
    assert "…" not in "".join(charts.values())
