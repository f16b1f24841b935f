"""The environment API: RL-style episodes (reset/step/state) on real labs over HTTP.

`app.create_app` builds the FastAPI app, `episodes.EpisodeManager` holds the episodes,
`backend.RunnerBackend` runs them as ordinary runs. `testbed serve` is
`testbed.cli.serve.serve_command` (a CLI module: this package does not import it).
"""

from testbed.server.envapi.app import create_app
from testbed.server.envapi.episodes import EpisodeManager
from testbed.server.envapi.external import ExternalAgent

__all__ = ["EpisodeManager", "ExternalAgent", "create_app"]
