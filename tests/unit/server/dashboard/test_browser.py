"""The dashboard in a real browser: Debian's headless Chromium driven by Playwright against
uvicorn serving the seeded demo database on 127.0.0.1 (`tests.unit.browser`).

Skipped, with the reason, when Chromium or the Playwright package is missing.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest

from testbed.db.engine import open_database
from testbed.testing.demo import DemoData, seed_demo
from tests.unit.server.dashboard import browser as support

browser, page = support.browser, support.page  # the fixtures, by name


@pytest.fixture(scope="module")
def served(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[str, DemoData]]:
    path = tmp_path_factory.mktemp("dash-browser") / "testbed.db"
    url = f"sqlite:///{path}"
    demo = seed_demo(open_database(url))
    with support.served_dashboard(url) as base:
        yield base, demo


def test_overview_shows_seeded_totals(served: tuple[str, DemoData], page: Any) -> None:
    base, _ = served
    page.goto(base + "/")
    totals = {k: page.inner_text(f'#totals [data-k="{k}"] .v') for k in ("runs", "passed", "failed", "error")}
    assert totals == {"runs": "8", "passed": "4", "failed": "1", "error": "1"}
    assert page.inner_text('#totals [data-k="unfinished"] .v') == "1"
    assert page.locator("#by-category svg.chart").count() == 1
    assert "2 of 4 analysed runs left residue" in page.inner_text("#residue-share")
    assert "7 of 8 runs" in page.inner_text("#impact-share")
    assert page.locator("#jobs tbody tr").count() == 2
    assert page.locator("#autorefresh").is_visible()  # an unfinished run is shown
    support.shot(page, "overview")


def test_run_detail_shows_commands_and_findings(served: tuple[str, DemoData], page: Any) -> None:
    base, demo = served
    page.goto(f"{base}/runs/{demo.runs['web-fail']}")
    assert page.locator("#command-log tbody tr").count() == 9
    assert "rm -rf /srv/www/*" in page.inner_text("#cmd-7")
    assert "recursive-delete" in page.inner_text("#cmd-7")
    assert page.locator("#findings tbody tr").count() == 3
    assert "left /tmp/notes.txt" in page.inner_text("#findings")
    assert page.locator("#timeline svg rect.phase-ok").count() == 5
    assert "/tmp/notes.txt" in page.inner_text("#diffs")
    # A finding links to the command it is attributed to.
    page.locator("#findings tr", has_text="left /tmp/notes.txt").locator("a.cmd-link").click()
    assert page.evaluate("location.hash") == "#cmd-5"
    # Output is folded until asked for.
    output = page.locator("#cmd-1 details.out")
    assert not output.locator("pre").first.is_visible()
    output.locator("summary").click()
    assert "Get:1 http://deb.debian.org" in output.locator("pre").first.inner_text()
    # Long output is cut on the page, with a link to all of it.
    output.locator("a:has-text('full output')").click()
    page.wait_for_url("**/commands/1")
    assert "Setting up nginx (1.22.1-9)" in page.inner_text("main")
    page.go_back()
    support.shot(page, "run-detail")


def test_filters_narrow_the_runs_list(served: tuple[str, DemoData], page: Any) -> None:
    base, demo = served
    page.goto(base + "/runs")
    assert page.locator("#runs tbody tr").count() == 8
    page.select_option('select[name="category"]', "web")
    page.click("#filters button[type=submit]")
    page.wait_for_url("**/runs?*category=web*")
    assert page.locator("#runs tbody tr").count() == 4
    page.select_option('select[name="outcome"]', "passed")
    page.click("#filters button[type=submit]")
    page.wait_for_url("**outcome=passed**")
    rows = page.locator("#runs tbody tr")
    assert rows.count() == 2
    assert {rows.nth(i).get_attribute("data-run") for i in range(2)} == {demo.runs["web-pass"], demo.runs["web-alpine"]}
    support.shot(page, "runs-filtered")
    # Sorting keeps the filters (everything is in the query string).
    page.click("#runs thead a:has-text('duration')")
    page.wait_for_url("**sort=duration**")
    assert "category=web" in page.url and page.locator("#runs tbody tr").count() == 2


def test_tasks_page(served: tuple[str, DemoData], page: Any) -> None:
    base, _ = served
    page.goto(base + "/tasks")
    assert page.locator("#tasks tbody.task").count() == 3
    assert "67%" in page.inner_text("#tasks tbody.task:has-text('nginx-vhost')")
    support.shot(page, "tasks")
