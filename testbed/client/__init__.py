"""Python clients of the environment API (`testbed serve`), for trainers and evaluators.

- `EnvClient` / `AsyncEnvClient` (`http`): reset, step, finish, state over HTTP.
- `trl`: `environment_factory(...)` builds the class TRL's `GRPOTrainer(environment_factory=…)`
  instantiates per rollout (one `run` tool), and `reward_func` reads each rollout's return.
- `verifiers`: `EpisodeEnvMixin`, the hooks of a `verifiers` `MultiTurnEnv` (mix it in
  before `vf.MultiTurnEnv`) and `episode_reward` for its rubric.

Neither TRL nor verifiers is a dependency: the adapters follow their interfaces.
"""

from testbed.client.core import EnvError, StepResult
from testbed.client.http import AsyncEnvClient, EnvClient

__all__ = ["AsyncEnvClient", "EnvClient", "EnvError", "StepResult"]
