"""What the model reads: the system prompt, command results, and the agent's own notes.

Contracts: the system prompt names the nodes, the limits, how to act (the `run` tool, or
`<bash>` blocks in text mode) and how to finish (a reply that asks for no command). A
command's result is its node, exit status (or why it has none), stdout and stderr; each
stream is cut in the middle beyond `OUTPUT_CHARS` characters, saying how many were left out.
"""

from __future__ import annotations

from testbed.agents.base import AgentContext, Observation

OUTPUT_CHARS = 8000

TRUNCATED_REPLY = (
    "Your reply was cut off at the completion token limit before it asked for a command. "
    "Reply more briefly: one command at a time, or a short summary when the task is complete."
)


def system_prompt(context: AgentContext, tools: bool) -> str:
    """The system prompt: role, nodes, limits, how to act and how to finish."""
    nodes = ", ".join(context.nodes)
    how = (
        "Use the `run` tool to execute one shell command on a node; you may call it several times per reply."
        if tools
        else 'Put each shell command in a block <bash node="NODE">COMMAND</bash>; several blocks per reply are '
        "allowed and run in order."
    )
    return (
        "You are a Linux system administrator working on a lab of virtual machines over SSH, as root.\n"
        f"Nodes: {nodes}.\n"
        f"{how}\n"
        f"Limits: at most {context.max_commands} commands, {context.command_time_s:.0f} s per command, "
        f"{context.agent_time_s:.0f} s in total. Commands are non-interactive: never start editors or pagers.\n"
        "When the task is complete, reply with a short summary and run no further command."
    )


def format_observation(obs: Observation, limit: int = OUTPUT_CHARS) -> str:
    """An observation as text for the model, each stream cut in the middle beyond `limit`."""

    def cut(text: str) -> str:
        if len(text) <= limit:
            return text
        half = limit // 2
        return f"{text[:half]}\n[... {len(text) - limit} characters omitted ...]\n{text[-half:]}"

    status = "timed out" if obs.timed_out else ("not run" if obs.exit_code is None else str(obs.exit_code))
    parts = [f"node: {obs.node}", f"exit status: {status}"]
    if obs.message:
        parts.append(f"note: {obs.message}")
    parts.append(f"stdout:\n{cut(obs.stdout)}")
    if obs.stderr:
        parts.append(f"stderr:\n{cut(obs.stderr)}")
    return "\n".join(parts)
