"""The environment API: RL-style episodes (reset/step/state) on real labs over HTTP.

`app.create_app` builds the FastAPI app, `episodes.EpisodeManager` holds the episodes,
`backend.RunnerBackend` runs them as ordinary runs, `cli.serve_command` is `testbed serve`.
"""

from testbed.server.envapi.app import create_app
from testbed.server.envapi.cli import serve_command
from testbed.server.envapi.episodes import EpisodeManager, ExternalAgent

__all__ = ["EpisodeManager", "ExternalAgent", "create_app", "serve_command"]
