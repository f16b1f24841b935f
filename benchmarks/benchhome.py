"""What the VM benchmarks share: a private TESTBED_HOME over the real image cache, and the
pair of environment-API episode managers (cold and fast reset) the reset benchmarks use.

Every benchmark that boots guests runs through scripts/netns-run; these helpers only keep
its labs, leases and saved states away from the user's own TESTBED_HOME.
"""

from __future__ import annotations

import contextlib
import os
import tempfile
from collections.abc import AsyncIterator, Iterator
from pathlib import Path
from typing import Any


@contextlib.contextmanager
def private_home(prefix: str) -> Iterator[Path]:
    """A temporary directory holding `home/` (set as TESTBED_HOME while inside), whose
    `images/` is the real image cache; yields the temporary directory (for databases)."""
    from testbed.config import Settings

    with tempfile.TemporaryDirectory(prefix=prefix) as tmp:
        real_images = Settings.from_env().images_dir
        home = Path(tmp) / "home"
        home.mkdir()
        (home / "images").symlink_to(real_images)
        os.environ["TESTBED_HOME"] = str(home)
        yield Path(tmp)


@contextlib.asynccontextmanager
async def episode_managers(root: Path, db: Any, *, fast_max: int) -> AsyncIterator[tuple[Any, Any]]:
    """(cold, fast) `EpisodeManager`s on one runtime: the cold one without fast reset (one
    episode at a time), the fast one with it (`fast_max` at once). On exit both shut down and
    every saved state of the home is removed."""
    from testbed.config import Settings
    from testbed.hypervisor.slots import SlotStore
    from testbed.runtime import runtime
    from testbed.server.envapi.backend import RunnerBackend
    from testbed.server.envapi.episodes import EpisodeManager

    settings = Settings.from_env()
    async with runtime(settings) as rt:
        cold = EpisodeManager(RunnerBackend(rt, db, root, fast_reset=False), max_episodes=1)
        fast = EpisodeManager(RunnerBackend(rt, db, root, fast_reset=True), max_episodes=fast_max)
        try:
            yield cold, fast
        finally:
            await cold.shutdown()
            await fast.shutdown()
            SlotStore(settings).remove()
