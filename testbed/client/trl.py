"""TRL's `environment_factory` for testbed episodes.

TRL's `GRPOTrainer(environment_factory=Cls)` makes one `Cls()` per rollout, calls
`reset(**row)` with the dataset row's columns at its start (the returned text is appended
to the prompt), exposes every public method but `reset` as a tool the model may call, and
passes the instances to the reward functions as `environments`:

    from testbed.client.trl import environment_factory, reward_func
    Env = environment_factory("http://127.0.0.1:8090", token="T")
    dataset = Dataset.from_dict({"prompt": [[{"role": "user", "content": "Fix the lab."}]] * 8,
                                 "task": ["web-port-conflict"] * 8})
    GRPOTrainer(model=..., train_dataset=dataset, reward_funcs=reward_func, environment_factory=Env)

Contracts:

- `reset(**row)` starts an episode of the row's `task` (or `scenario_id`, else the
  factory's `task`) with the row's `seed` if any, ending the instance's previous episode,
  and returns the instruction and node names.
- The one tool is `run(command, node="")`: one shell command as root on a node (empty: the
  task's first node); it returns the result as testbed's LLM agent shows it. After the
  episode has ended it raises `ValueError` (TRL feeds the message back to the model).
- `reward` is the episode's return so far (shaped step rewards); `reward_func(environments)`
  ends every episode still running (the run verifies, so the success bonus arrives) and
  returns each episode's return.
"""

from __future__ import annotations

from typing import Any

from testbed.client.http import EnvClient


def environment_factory(
    base_url: str | None = None, token: str | None = None, *, task: str | None = None, agent: str = "trl"
) -> type:
    """A class for `GRPOTrainer(environment_factory=…)` bound to one server (see the module doc)."""

    class TestbedEnvironment:
        def __init__(self) -> None:
            self._client = EnvClient(base_url, token)
            self.reward = 0.0
            self.done = False
            self.task: str | None = None

        def reset(self, **kwargs: Any) -> str:
            chosen = kwargs.get("task") or kwargs.get("scenario_id") or task
            if not chosen:
                raise ValueError("no task: give the dataset a `task` column or the factory a task")
            seed = kwargs.get("seed")
            first = self._client.reset(str(chosen), seed=int(seed) if seed is not None else None, agent=agent)
            self.task, self.reward, self.done = str(chosen), 0.0, False
            return first.text

        def run(self, command: str, node: str = "") -> str:
            """
            Run one shell command (bash, as root) on a node of the lab.

            Args:
                command: The shell command to run.
                node: The node to run it on (empty: the first node).

            Returns:
                The node, exit status, stdout and stderr of the command.
            """
            if self.done:
                raise ValueError("The episode is over: no further command runs.")
            result = self._client.step(command, node or None)
            self._take(result.reward, result.done)
            return result.text

        def _take(self, reward: float | None, done: bool) -> None:
            self.reward = round(self.reward + (reward or 0.0), 6)
            self.done = done

        def _conclude(self) -> float:
            if not self.done and self._client.episode is not None:
                final = self._client.finish()
                self._take(final.reward, True)
            return self.reward

    TestbedEnvironment.__qualname__ = TestbedEnvironment.__name__
    return TestbedEnvironment


def reward_func(environments: list[Any], **kwargs: Any) -> list[float]:
    """Each rollout's return, ending the episodes that still run (see the module doc)."""
    return [float(env._conclude()) for env in environments]
