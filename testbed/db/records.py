"""Plain records handed to the recorder (no SQLAlchemy objects cross the runner boundary)."""

from __future__ import annotations

from dataclasses import dataclass, field
from datetime import datetime
from typing import Any


@dataclass(frozen=True, kw_only=True, slots=True)
class CommandRecord:
    """One executed command, as the guest layer reports it.

    Contract (checked by `RunRecorder.record_command`, which raises `ValueError`):
    `phase` ∈ `models.COMMAND_PHASES`, `source` ∈ `models.COMMAND_SOURCES`, `started_at` is
    timezone-aware, `duration_ms >= 0`. `exit_code` is None when the command did not finish
    (timeout, transport failure); `error` then says why (transport failure). `stdout` and
    `stderr` are already bounded by the guest layer (`*_truncated` says whether they were
    cut); `redacted` lists kinds of secrets the caller already removed (the recorder adds those
    it removes itself).
    `impact` lists the command's high-impact classes (empty if none). NUL characters and
    unencodable surrogates in text are replaced by U+FFFD when stored.
    """

    node: str | None
    phase: str
    source: str
    command: str
    started_at: datetime
    duration_ms: int
    exit_code: int | None = None
    stdout: str = ""
    stderr: str = ""
    stdout_truncated: bool = False
    stderr_truncated: bool = False
    timed_out: bool = False
    impact: list[str] = field(default_factory=list)
    redacted: list[str] | None = None
    error: str | None = None
    background: list[dict[str, object]] | None = None


@dataclass(frozen=True, slots=True)
class StoredCommand:
    """A command row as it was committed: its id, its `seq` in the run, and the record
    exactly as stored (text cleaned and, when the recorder redacts, redacted)."""

    id: int
    seq: int
    record: CommandRecord


@dataclass(frozen=True, kw_only=True, slots=True)
class EgressRecord:
    """One request a guest made through the lab host's egress proxy (`egress` table).

    Contract (checked by `RunRecorder.record_egress`, which raises `ValueError`): `at` is
    timezone-aware, `decision` ∈ `models.EGRESS_DECISIONS`, `status >= 0`, `bytes >= 0`.
    `url` is `host:port` for CONNECT; `node` is None when no node of the run had the
    client's address.
    """

    node: str | None
    at: datetime
    method: str
    host: str | None
    url: str
    status: int
    bytes: int
    decision: str


@dataclass
class TurnRecord:
    """One model call of an LLM agent, as stored (`RunRecorder.record_model_turn`).

    `messages` are the chat messages appended since the previous turn, `response` the
    assistant message (None for a failed call, whose `error` says why), `tool_calls` the
    parsed actions, `usage` the endpoint's token counts (`prompt_tokens`, …).
    `started_at` is timezone-aware."""

    model: str
    started_at: datetime
    latency_ms: int
    messages: list[dict[str, Any]]
    response: dict[str, Any] | None
    tool_calls: list[dict[str, Any]] = field(default_factory=list)
    finish_reason: str | None = None
    usage: dict[str, int] = field(default_factory=dict)
    error: str | None = None
    cost_usd: float | None = None  # at the agent's per-token prices (testbed.agents.turns.turn_cost)
