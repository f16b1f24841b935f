"""The environment API's fixtures (fake lab, live uvicorn server) for the client tests."""

from tests.unit.server.envapi.conftest import live, live_open, root  # noqa: F401 - fixtures
