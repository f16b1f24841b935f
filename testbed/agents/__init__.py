"""Agents: who decides the next command.

- `base`: the interface (`Agent`, `AgentContext`, `Action`, `Observation`, `AgentBinding`).
- `scripted`: `noop`, `oracle`, `replay:FILE`, and `make_agent`, which resolves an `--agent`
  spec: a built-in first, else an installed plug-in (`registry`, entry point group
  `testbed.agents`).
- `openai_agent`: `openai:MODEL`, an LLM agent for any OpenAI-compatible endpoint; its
  package docstring states the outcome rules for model-side failures.
- `turns`: how an LLM agent stores its model calls (`model_turns` rows) with the run.
"""
