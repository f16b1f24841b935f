"""Browser-test support: Debian's headless Chromium driven by Playwright against uvicorn
serving a dashboard database on 127.0.0.1 (a background thread).

Importing this module skips the importing test module, with the reason, when Chromium or
the Playwright package is missing. Test modules import the `browser` and `page` fixtures
from here and start their server with `served_dashboard(url)`. Screenshots are saved under
`artifacts/screenshots/` (git-ignored).
"""

from __future__ import annotations

import os
import shutil
import socket
import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import pytest

from testbed.server.dashboard import create_app
from testbed.server.dashboard.hosts import HostPolicy

CHROMIUM = os.environ.get("TESTBED_CHROMIUM", "/usr/bin/chromium")
CHROMIUM_ARGS = [
    "--headless",
    "--no-sandbox",
    "--disable-gpu",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
    "--no-first-run",
]
SCREENSHOTS = Path(__file__).resolve().parents[4] / "artifacts" / "screenshots"

if not (Path(CHROMIUM).is_file() or shutil.which(CHROMIUM)):
    pytest.skip(f"Chromium not found at {CHROMIUM} (apt-get install chromium)", allow_module_level=True)
sync_api = pytest.importorskip("playwright.sync_api", reason="the playwright Python package is not installed")


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


@contextmanager
def served_dashboard(url: str) -> Iterator[str]:
    """The dashboard over the database at `url` on a free loopback port (the Host check on,
    as the CLI serves it); yields its base URL."""
    import uvicorn

    app = create_app(url, hosts=HostPolicy.of("127.0.0.1"))
    port = _free_port()
    server = uvicorn.Server(uvicorn.Config(app, host="127.0.0.1", port=port, log_level="warning"))
    thread = threading.Thread(target=server.run, name="dashboard-uvicorn", daemon=True)
    thread.start()
    deadline = time.monotonic() + 15
    while not server.started:
        if time.monotonic() > deadline or not thread.is_alive():
            raise RuntimeError("uvicorn did not start")
        time.sleep(0.05)
    try:
        yield f"http://127.0.0.1:{port}"
    finally:
        server.should_exit = True
        thread.join(timeout=10)
        app.state.engine.dispose()


@pytest.fixture(scope="module")
def browser() -> Iterator[Any]:
    with sync_api.sync_playwright() as pw:
        b = pw.chromium.launch(executable_path=CHROMIUM, args=CHROMIUM_ARGS)
        yield b
        b.close()


@pytest.fixture
def page(browser: Any) -> Iterator[Any]:
    context = browser.new_context(viewport={"width": 1400, "height": 900})
    # The demo may hold an unfinished run: keep auto-refresh from reloading pages mid-test.
    context.add_init_script("localStorage.setItem('tb-refresh', 'off')")
    pg = context.new_page()
    yield pg
    context.close()


def shot(page: Any, name: str) -> None:
    """Save a full-page screenshot as `artifacts/screenshots/dashboard-NAME.png`."""
    SCREENSHOTS.mkdir(parents=True, exist_ok=True)
    page.screenshot(path=str(SCREENSHOTS / f"dashboard-{name}.png"), full_page=True)
