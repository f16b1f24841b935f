"""A GRPO-style group: 4 episodes of one task against `testbed serve`, with a scripted
policy instead of a model, through the same environment class TRL's GRPOTrainer uses
(`testbed.client.trl.environment_factory`). Prints each episode's reward and its
group-relative advantage (reward minus the group mean, over the group's standard deviation).

    testbed serve --token T &
    python examples/grpo_group.py --token T --task web-port-conflict \\
        --solve-file tasks/web-port-conflict/solution/solve.sh

The scripted policy: every episode looks first (`--probe`); the odd-numbered ones then
apply the fix (`--solve`, or the text of `--solve-file`), the even-numbered ones stop
there, so the group has something to compare.
"""

from __future__ import annotations

import argparse
import statistics
import sys
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

from testbed.client.trl import environment_factory, reward_func


def rollout(env: Any, task: str, index: int, probe: str, solve: str) -> None:
    """One scripted episode, as TRL drives one rollout: reset, then tool calls."""
    env.reset(task=task, seed=index)
    env.run(probe)
    if index % 2 == 1:
        env.run(solve)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--url", default=None, help="server URL (default $TESTBED_ENV_URL or http://127.0.0.1:8090)")
    parser.add_argument("--token", default=None, help="token (default $TESTBED_ENV_TOKEN)")
    parser.add_argument("--task", required=True)
    parser.add_argument("--group", type=int, default=4, help="episodes in the group (default 4)")
    parser.add_argument("--probe", default="systemctl --failed --no-pager; ss -ltnp")
    parser.add_argument("--solve", default=None, help="the fixing command")
    parser.add_argument("--solve-file", type=Path, default=None, help="a file holding the fixing command(s)")
    args = parser.parse_args(argv)
    solve = args.solve or (args.solve_file.read_text() if args.solve_file else None)
    if not solve:
        parser.error("give --solve or --solve-file")
    Env = environment_factory(args.url, args.token, task=args.task, agent="grpo-example")
    environments = [Env() for _ in range(args.group)]
    with ThreadPoolExecutor(max_workers=args.group) as pool:  # the group's episodes run side by side
        list(pool.map(lambda i: rollout(environments[i], args.task, i + 1, args.probe, solve), range(args.group)))
    rewards = reward_func(environments)
    mean = statistics.fmean(rewards)
    spread = statistics.pstdev(rewards) or 1.0
    for i, reward in enumerate(rewards, 1):
        print(f"episode {i}: reward={reward:.3f} advantage={(reward - mean) / spread:+.3f}")
    print(f"group mean={mean:.3f} std={statistics.pstdev(rewards):.3f}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
