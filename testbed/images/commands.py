"""Running the external tools of an image build, with their output streamed as progress.

Contract of `run_logged`: runs `argv` (stdout and stderr merged; `stdin` bytes, or nothing,
on its standard input), passes every non-empty
line to `progress(stage, line)`, and raises `HarnessError` naming the stage, the tool, its
exit status and the last 20 lines of its output when it exits non-zero. `missing_tools`
names the tools of a list that are not on PATH.
"""

from __future__ import annotations

import asyncio
import shutil
from collections.abc import Callable, Iterable, Mapping
from pathlib import Path

from testbed.errors import HarnessError

ProgressFn = Callable[[str, str], None]
"""Called with (stage, detail) as a build goes."""

TAIL_LINES = 20


async def run_logged(
    argv: list[str],
    stage: str,
    progress: ProgressFn | None,
    *,
    cwd: Path | None = None,
    env: Mapping[str, str] | None = None,
    stdin: bytes | None = None,
) -> None:
    proc = await asyncio.create_subprocess_exec(
        *argv,
        stdin=asyncio.subprocess.PIPE if stdin is not None else asyncio.subprocess.DEVNULL,
        stdout=asyncio.subprocess.PIPE,
        stderr=asyncio.subprocess.STDOUT,
        cwd=cwd,
        env=dict(env) if env is not None else None,
    )
    assert proc.stdout is not None
    if stdin is not None:
        assert proc.stdin is not None
        proc.stdin.write(stdin)
        await proc.stdin.drain()
        proc.stdin.close()
    tail: list[str] = []
    async for raw in proc.stdout:
        line = raw.decode(errors="replace").rstrip()
        tail = [*tail[-(TAIL_LINES - 1) :], line]
        if progress and line:
            progress(stage, line)
    status = await proc.wait()
    if status != 0:
        output = "\n".join(tail)
        raise HarnessError(f"{stage}: {argv[0]} exited with status {status}:\n{output}")


def missing_tools(tools: Iterable[str]) -> list[str]:
    """The tools of `tools` that are not on PATH (sbin directories included)."""
    path = "/usr/local/sbin:/usr/sbin:/sbin:/usr/local/bin:/usr/bin:/bin"
    return [tool for tool in tools if shutil.which(tool) is None and shutil.which(tool, path=path) is None]
