"""The trajectory stream, the compare view, the leaderboard and the task page in a real
browser (headless Chromium through Playwright, `tests.unit.browser`) over the
model-evaluation demo (`testbed.testing.demo_models`).

Skipped, with the reason, when Chromium or the Playwright package is missing.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest

from testbed.db.engine import open_database
from testbed.testing.demo_models import ModelDemo, seed_models
from tests.unit.server.dashboard import browser as support

browser, page = support.browser, support.page  # the fixtures, by name

GPT, QWEN = "openai:gpt-4.1-mini", "openai:qwen2.5-coder-7b"

# Every <text> of every chart lies inside its <svg> as the browser lays it out (real font metrics).
TEXT_OVERFLOW = """() => {
  const out = [];
  for (const svg of document.querySelectorAll('svg.axis-chart, svg.topology')) {
    const box = svg.getBoundingClientRect();
    for (const t of svg.querySelectorAll('text')) {
      const r = t.getBoundingClientRect();
      if (r.left < box.left - 0.5 || r.right > box.right + 0.5) out.push(t.textContent);
    }
  }
  return out;
}"""


@pytest.fixture(scope="module")
def served(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[str, ModelDemo]]:
    url = f"sqlite:///{tmp_path_factory.mktemp('trainers-browser') / 'testbed.db'}"
    demo = seed_models(open_database(url))
    with support.served_dashboard(url) as base:
        yield base, demo


def test_trajectory_stream(served: tuple[str, ModelDemo], page: Any) -> None:
    base, demo = served
    run_id = demo.runs[f"{GPT}/web-port-conflict/debian-12/2"]
    page.goto(f"{base}/runs/{run_id}")
    steps = page.locator("#trajectory ol.stream > li")
    assert steps.count() == 11
    assert [steps.nth(i).get_attribute("class").split()[1] for i in range(4)] == ["turn", "command", "turn", "command"]
    assert "# Ticket: website on this host is down" in page.inner_text("#instruction")
    turn1 = page.locator("#turn-1")
    assert turn1.locator("details.reasoning pre").is_visible()  # short reasoning is shown open
    assert "The ticket says nginx refuses to start" in turn1.inner_text()
    assert "$0.0003" in turn1.inner_text() and "473 in / 98 out" in turn1.inner_text()
    # A caused command sits indented under its turn, answering its tool call.
    cmd = page.locator("#step-cmd-4")
    assert page.evaluate("e => getComputedStyle(e).marginLeft", cmd.element_handle()) == "28px"
    assert "answers call_3" in cmd.inner_text() and "service_stop" in cmd.inner_text()
    assert "new file /tmp/legacy-http.service.bak" in cmd.locator("ul.changes").inner_text()
    assert "attribution high" in cmd.locator("ul.changes").inner_text()
    # Output of a short command is open; its exit status shows.
    first = page.locator("#step-cmd-2")
    assert first.locator("details.out pre").first.is_visible() and "exit 3" in first.inner_text()
    assert "bind() to 0.0.0.0:80 failed" in first.inner_text()
    # A finding badge leads to the finding.
    cmd.locator("a.badge.residue").click()
    assert page.evaluate("location.hash").startswith("#finding-")
    assert page.locator(page.evaluate("location.hash")).is_visible()
    assert "Fixed: legacy-http.service is stopped" in page.inner_text("#turn-6")
    support.shot(page, "trajectory")
    # Compare with another run of the task, from the run page.
    page.select_option("#compare-form select[name=b]", demo.runs[f"{QWEN}/web-port-conflict/debian-12/1"])
    page.click("#compare-form button[type=submit]")
    page.wait_for_url("**/compare?*")
    assert f"a={run_id}" in page.url and page.locator("#stream-a").is_visible()


def test_compare_view(served: tuple[str, ModelDemo], page: Any) -> None:
    base, demo = served
    a, b = demo.runs[f"{GPT}/web-port-conflict/ubuntu-24.04/1"], demo.runs[f"{QWEN}/web-port-conflict/ubuntu-24.04/2"]
    page.goto(f"{base}/compare?a={a[:8]}&b={b[:8]}")
    row = page.locator('#compare-metrics tr[data-k="outcome"]')
    assert row.locator("td").nth(0).inner_text() == "passed" and row.locator("td").nth(1).inner_text() == "failed"
    reboot = page.locator('#compare-metrics tr[data-k="check-R1"]')
    assert reboot.count() == 2 and "failed" in reboot.nth(1).inner_text()
    left, right = page.locator("#stream-a").bounding_box(), page.locator("#stream-b").bounding_box()
    assert left["x"] + left["width"] <= right["x"] and abs(left["y"] - right["y"]) < 1  # side by side
    assert "kill -9 402" in page.inner_text("#stream-b") and "kill -9" not in page.inner_text("#stream-a")
    assert page.locator("#stream-a li.turn").count() == 6 and page.locator("#stream-b li.turn").count() == 5
    assert page.inner_text("#task-version") == "same task version"
    support.shot(page, "compare")


def test_leaderboard(served: tuple[str, ModelDemo], page: Any) -> None:
    base, _ = served
    page.goto(base + "/")
    page.click("a:has-text('leaderboard →')")
    page.wait_for_url("**/leaderboard")
    rows = page.locator("#leaderboard tbody tr")
    assert [rows.nth(i).get_attribute("data-agent") for i in range(3)] == ["oracle", GPT, QWEN]
    gpt = page.locator(f'#leaderboard tr[data-agent="{GPT}"]')
    assert (
        gpt.locator("td.pass-rate").inner_text() == "85.7%"
        and gpt.locator("td.ci").inner_text() == "48.7% \u2013 97.4%"
    )
    chart = page.locator("#board-chart svg")
    assert [t.text_content() for t in chart.locator("text.tick").all()] == ["0%", "20%", "40%", "60%", "80%", "100%"]
    assert chart.locator("circle.point").count() == 3
    assert page.evaluate(TEXT_OVERFLOW) == []  # no label is cut by its chart
    page.select_option('#filters select[name="category"]', "storage")
    page.click("#filters button[type=submit]")
    page.wait_for_url("**category=storage**")
    groups = page.locator("#leaderboard-category tbody tr")
    assert {groups.nth(i).get_attribute("data-group") for i in range(groups.count())} == {"storage"}
    support.shot(page, "leaderboard")


def test_task_page(served: tuple[str, ModelDemo], page: Any) -> None:
    base, _ = served
    page.goto(base + "/tasks")
    page.click("a.task-link:has-text('web-port-conflict')")
    page.wait_for_url("**/tasks/web-port-conflict")
    assert page.locator("#topology svg g.node").count() == 1
    assert "agent_time_s = 1200" in page.inner_text("#toml")
    added = page.locator("#diff-toml-1 tr.add").first
    assert added.inner_text() == "+agent_time_s = 1200"
    assert page.evaluate("e => getComputedStyle(e.querySelector('td')).backgroundColor", added.element_handle()) == (
        "rgb(230, 255, 236)"
    )
    assert page.locator("#versions tbody tr").count() == 2
    assert page.evaluate(TEXT_OVERFLOW) == []
    support.shot(page, "task")
