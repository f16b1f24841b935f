"""The dashboard: a read-only web UI and JSON API over the run database.

`create_app(url_or_engine, token=...)` builds the FastAPI application (see `app`);
`testbed.cli.dashboard.dashboard_command` serves it with uvicorn.
"""

from testbed.server.dashboard.app import create_app

__all__ = ["create_app"]
