"""Explicit Arrow schemas of the exported dataset (one Parquet file per table).

Contracts:

- `SCHEMAS[table]` is the exact schema written to `OUT/<table>.parquet` (field names, types,
  nullability); it never depends on the data. Field-level metadata carries a one-line
  `description`; schema-level metadata carries `testbed.table` and
  `testbed.schema_version`. `pq.read_schema(path).equals(SCHEMAS[t])` holds for every
  exported file (metadata included).
- Timestamps are `timestamp[us, tz=UTC]`. Ids of `commands`/`nodes`/`snapshots`/`checks`/
  `findings`/`model_turns` are int64, run and job ids 32-character strings.
- A field is nullable exactly where the database column is nullable, or where the value is
  derived and can be missing (e.g. `runs.duration_s` of an unfinished run). `impact` and
  `redacted` are never null (empty list when there is nothing).
- JSON columns of the database are JSON text (`string`) here, except `commands.impact`
  which is `list<string>`; a JSON column the database never leaves NULL is never null here
  (a stored JSON `null` is the text `null`).
- `SCHEMA_VERSION` changes whenever a schema changes incompatibly.
"""

from __future__ import annotations

import pyarrow as pa

SCHEMA_VERSION = "4"
"""Version of the exported layout; stored in each file's schema metadata and in the card.
2: `model_turns` table; `runs.retry`, `runs.retry_of`, `runs.not_before`.
3: `trajectories` table (chat-format conversations).
4: `egress` table (every request guests made through the egress proxy)."""

TABLE_NAMES: tuple[str, ...] = (
    "runs",
    "tasks",
    "nodes",
    "commands",
    "snapshots",
    "checks",
    "findings",
    "model_turns",
    "egress",
    "trajectories",
)
"""Every exported table, in export order."""

TIMESTAMP = pa.timestamp("us", tz="UTC")
STRINGS = pa.list_(pa.field("element", pa.string(), nullable=False))
"""list<string> with non-null items, named `element` as Parquet names list items (so schemas round-trip)."""

_TABLE_DESCRIPTIONS: dict[str, str] = {
    "runs": "One row per run: one attempt of one task variant with one agent.",
    "tasks": "One row per task seen in the exported runs (from tasks/ID/task.toml when present, else from runs).",
    "nodes": "One row per guest of a run's lab.",
    "commands": "One row per command executed on a guest, by the harness or the agent.",
    "snapshots": "Machine state of one node at one point of a run (JSON keyed by probe name).",
    "checks": "One verification of one task requirement at one point of a run.",
    "findings": "Residue, high-impact commands and safety violations the analysis found.",
    "model_turns": "One row per model call of an LLM agent: messages sent, the reply, tool calls, tokens, latency.",
    "egress": "One row per request a guest made through the lab host's egress proxy (allowed, denied or DNS failure).",
    "trajectories": "One row per run: its conversation in chat format (any agent), reward, outcome; for SFT/DPO/GRPO.",
}


TOOL_CALL = pa.struct(
    [
        pa.field("id", pa.string()),
        pa.field("type", pa.string()),
        pa.field("function", pa.struct([pa.field("name", pa.string()), pa.field("arguments", pa.string())])),
    ]
)
MESSAGE = pa.struct(
    [
        pa.field("role", pa.string()),
        pa.field("content", pa.string()),
        pa.field("reasoning", pa.string()),
        pa.field("tool_calls", pa.list_(pa.field("element", TOOL_CALL))),
        pa.field("tool_call_id", pa.string()),
        pa.field("name", pa.string()),
    ]
)
"""A chat message: role, content, reasoning, tool_calls [{id, type, function {name, arguments}}], tool_call_id, name."""
MESSAGES = pa.list_(pa.field("element", MESSAGE, nullable=False))


def _f(name: str, type_: pa.DataType, nullable: bool, description: str) -> pa.Field:
    return pa.field(name, type_, nullable=nullable, metadata={"description": description})


_REDACTED = "Kinds of secrets redacted from this row's text (see the card); empty if none."


def _schema(table: str, fields: list[pa.Field]) -> pa.Schema:
    return pa.schema(
        fields,
        metadata={
            "testbed.table": table,
            "testbed.schema_version": SCHEMA_VERSION,
            "description": _TABLE_DESCRIPTIONS[table],
        },
    )


SCHEMAS: dict[str, pa.Schema] = {
    "runs": _schema(
        "runs",
        [
            _f("id", pa.string(), False, "Run id (uuid4 hex, 32 characters)."),
            _f("job_id", pa.string(), True, "Job the run belongs to."),
            _f("job_name", pa.string(), True, "Name of that job."),
            _f("task_id", pa.string(), False, "Task id (directory name under tasks/)."),
            _f("task_category", pa.string(), True, "Task category recorded with the run."),
            _f("variant", pa.string(), True, "Image variant of the task."),
            _f("image", pa.string(), True, "Image the nodes were cloned from."),
            _f("agent", pa.string(), False, "Agent that worked on the task."),
            _f("attempt", pa.int32(), False, "Attempt number within the job's matrix cell (1, 2, ...)."),
            _f("retry", pa.int32(), False, "Harness-error retries of the cell before this run (0 = first try)."),
            _f(
                "retry_of",
                pa.string(),
                True,
                "Run this one replaces (same cell; it ended in a harness error or was interrupted).",
            ),
            _f("state", pa.string(), False, "Lifecycle state (finished once done)."),
            _f("outcome", pa.string(), True, "passed | failed | error | cancelled; null until finished."),
            _f("reward", pa.float64(), True, "Reward given to the agent."),
            _f("residue", pa.string(), True, "yes | no | undetermined: whether the agent left residue."),
            _f("host", pa.string(), True, "Lab host the run ran on."),
            _f("created_at", TIMESTAMP, False, "When the run was created (UTC)."),
            _f("not_before", TIMESTAMP, True, "A retry's backoff: not started before this time (UTC)."),
            _f("started_at", TIMESTAMP, True, "When the run left pending (UTC)."),
            _f("finished_at", TIMESTAMP, True, "When the run finished (UTC)."),
            _f("duration_s", pa.float64(), True, "finished_at - started_at in seconds."),
            _f("error", pa.string(), True, "Harness error text (outcome error)."),
            _f("config", pa.string(), True, "Run configuration (JSON text)."),
            _f("redacted", STRINGS, False, _REDACTED),
        ],
    ),
    "tasks": _schema(
        "tasks",
        [
            _f("task_id", pa.string(), False, "Task id."),
            _f("category", pa.string(), True, "Category (task.toml, else the most frequent one recorded)."),
            _f("difficulty", pa.string(), True, "easy | medium | hard (task.toml only)."),
            _f("tags", STRINGS, True, "Tags (task.toml only)."),
            _f("description", pa.string(), True, "Description (task.toml only)."),
            _f("declared_variants", STRINGS, True, "Image variants the task declares (task.toml only)."),
            _f("variants_seen", STRINGS, False, "Variants of the exported runs, sorted."),
            _f("requirements", STRINGS, True, "Requirement (check) ids (task.toml only)."),
            _f("persistence_required", pa.bool_(), True, "Some requirement must survive a reboot (task.toml only)."),
            _f("runs", pa.int64(), False, "Exported runs of the task."),
            _f("passed", pa.int64(), False, "Of which passed."),
            _f("failed", pa.int64(), False, "Of which failed."),
            _f("error", pa.int64(), False, "Of which ended in a harness error."),
            _f("cancelled", pa.int64(), False, "Of which were cancelled."),
            _f("unfinished", pa.int64(), False, "Of which have no outcome yet."),
            _f("first_run_at", TIMESTAMP, False, "created_at of the first exported run."),
            _f("last_run_at", TIMESTAMP, False, "created_at of the last exported run."),
            _f("source", pa.string(), False, "task.toml | runs: where the definition columns come from."),
        ],
    ),
    "nodes": _schema(
        "nodes",
        [
            _f("id", pa.int64(), False, "Node row id."),
            _f("run_id", pa.string(), False, "Run the node belongs to."),
            _f("name", pa.string(), False, "Node name in the topology (unique per run)."),
            _f("image", pa.string(), True, "Image the node was cloned from."),
            _f("os_release", pa.string(), True, "PRETTY_NAME of the guest's os-release."),
            _f("domain_name", pa.string(), True, "libvirt domain name."),
            _f("mgmt_ip", pa.string(), True, "Management address."),
        ],
    ),
    "commands": _schema(
        "commands",
        [
            _f("id", pa.int64(), False, "Command row id (increases in recording order)."),
            _f("run_id", pa.string(), False, "Run the command belongs to."),
            _f("seq", pa.int32(), False, "1, 2, 3, ... per run, in recording order."),
            _f("node", pa.string(), True, "Node the command ran on."),
            _f("phase", pa.string(), False, "setup | agent | verify | probe | teardown."),
            _f("source", pa.string(), False, "harness | agent: who issued the command."),
            _f("command", pa.string(), False, "Shell text of the command."),
            _f("exit_code", pa.int32(), True, "Exit status; null when the command did not finish."),
            _f("stdout", pa.string(), False, "Standard output (bounded; see stdout_truncated)."),
            _f("stderr", pa.string(), False, "Standard error (bounded; see stderr_truncated)."),
            _f("stdout_truncated", pa.bool_(), False, "stdout was cut at the capture bound."),
            _f("stderr_truncated", pa.bool_(), False, "stderr was cut at the capture bound."),
            _f("timed_out", pa.bool_(), False, "The command hit its time limit."),
            _f("started_at", TIMESTAMP, False, "When the command started (UTC)."),
            _f("duration_ms", pa.int64(), False, "Wall time in milliseconds."),
            _f("impact", STRINGS, False, "High-impact classes of the command (empty if none)."),
            _f("error", pa.string(), True, "Transport failure (the command may not have run)."),
            _f("redacted", STRINGS, False, _REDACTED),
        ],
    ),
    "snapshots": _schema(
        "snapshots",
        [
            _f("id", pa.int64(), False, "Snapshot row id."),
            _f("run_id", pa.string(), False, "Run the snapshot belongs to."),
            _f("node", pa.string(), False, "Node the snapshot was taken on."),
            _f("point", pa.string(), False, "before_setup | after_setup | after_agent | after_reboot."),
            _f("taken_at", TIMESTAMP, False, "When the snapshot was taken (UTC)."),
            _f("data", pa.string(), True, "Probe results keyed by probe name (JSON text)."),
            _f("redacted", STRINGS, False, _REDACTED),
        ],
    ),
    "checks": _schema(
        "checks",
        [
            _f("id", pa.int64(), False, "Check row id."),
            _f("run_id", pa.string(), False, "Run the check belongs to."),
            _f("requirement", pa.string(), False, "Requirement id of the task."),
            _f("description", pa.string(), True, "What the requirement asks."),
            _f("point", pa.string(), True, "Snapshot point the check was made at (after_agent, after_reboot)."),
            _f("node", pa.string(), True, "Node the check ran on, if node-bound."),
            _f("status", pa.string(), False, "passed | failed | indeterminate."),
            _f("detail", pa.string(), True, "Verifier detail (JSON text)."),
            _f("redacted", STRINGS, False, _REDACTED),
        ],
    ),
    "findings": _schema(
        "findings",
        [
            _f("id", pa.int64(), False, "Finding row id."),
            _f("run_id", pa.string(), False, "Run the finding belongs to."),
            _f("node", pa.string(), True, "Node concerned."),
            _f("kind", pa.string(), False, "residue | impact | safety."),
            _f("category", pa.string(), False, "Class within the kind (e.g. file, package, service-restart)."),
            _f("summary", pa.string(), False, "One-line summary."),
            _f("evidence", pa.string(), True, "Evidence (JSON text)."),
            _f("command_id", pa.int64(), True, "commands.id of the command that caused it, when known."),
            _f("command_seq", pa.int32(), True, "commands.seq of that command."),
            _f("redacted", STRINGS, False, _REDACTED),
        ],
    ),
    "model_turns": _schema(
        "model_turns",
        [
            _f("id", pa.int64(), False, "Model turn row id (increases in recording order)."),
            _f("run_id", pa.string(), False, "Run the turn belongs to."),
            _f("seq", pa.int32(), False, "1, 2, 3, ... per run, in call order."),
            _f("model", pa.string(), False, "Model that answered (as the endpoint named it, else as asked for)."),
            _f("started_at", TIMESTAMP, False, "When the call was made (UTC)."),
            _f("latency_ms", pa.int64(), False, "Wall time of the call in milliseconds."),
            _f(
                "messages",
                pa.string(),
                False,
                "Chat messages added since the previous turn (JSON list); the conversation is the "
                "concatenation, in seq order, of messages and response.",
            ),
            _f("response", pa.string(), True, "The assistant message returned (JSON); null if the call failed."),
            _f("tool_calls", pa.string(), False, "Actions parsed from the response (JSON list, [] when none)."),
            _f("finish_reason", pa.string(), True, "The endpoint's finish_reason."),
            _f("prompt_tokens", pa.int64(), True, "Prompt tokens (endpoint usage; null when not reported)."),
            _f("completion_tokens", pa.int64(), True, "Completion tokens (endpoint usage; null when not reported)."),
            _f("total_tokens", pa.int64(), True, "Total tokens (endpoint usage; null when not reported)."),
            _f("error", pa.string(), True, "Why the call failed, if it did."),
            _f("redacted", STRINGS, False, _REDACTED),
        ],
    ),
    "egress": _schema(
        "egress",
        [
            _f("id", pa.int64(), False, "Egress row id (increases in recording order)."),
            _f("run_id", pa.string(), False, "Run the request belongs to."),
            _f("node", pa.string(), True, "Node whose management address made the request (null: none of the run's)."),
            _f("at", TIMESTAMP, False, "When the proxy logged the request (UTC)."),
            _f("method", pa.string(), False, "HTTP method (CONNECT for HTTPS tunnels)."),
            _f("host", pa.string(), True, "Requested host name or address."),
            _f("url", pa.string(), False, "Requested URL; host:port for CONNECT."),
            _f("status", pa.int32(), False, "HTTP status the proxy answered (0: none)."),
            _f("bytes", pa.int64(), False, "Bytes the proxy sent back."),
            _f("decision", pa.string(), False, "allowed | denied | dns_failure."),
            _f("redacted", STRINGS, False, _REDACTED),
        ],
    ),
    "trajectories": _schema(
        "trajectories",
        [
            _f("run_id", pa.string(), False, "Run id (runs.id)."),
            _f("job_id", pa.string(), True, "Job the run belongs to."),
            _f("task_id", pa.string(), False, "Task id."),
            _f("split", pa.string(), False, "train | heldout: the task's split (train unless the task says so)."),
            _f("agent", pa.string(), False, "Agent that worked on the task."),
            _f("image", pa.string(), True, "Image the nodes were cloned from."),
            _f("release", pa.string(), True, "os-release names of the run's nodes (PRETTY_NAME, '; '-joined)."),
            _f("outcome", pa.string(), True, "passed | failed | error | cancelled; null until finished."),
            _f("reward", pa.float64(), True, "Reward given to the agent (runs.reward)."),
            _f("passed", pa.bool_(), False, "outcome is passed."),
            _f("residue", pa.string(), True, "yes | no | undetermined: whether the agent left residue."),
            _f("source", pa.string(), False, "model_turns (an LLM's own conversation) | commands (rebuilt from them)."),
            _f("turns", pa.int32(), False, "Assistant messages in the conversation."),
            _f(
                "messages",
                MESSAGES,
                False,
                "The whole conversation: system, instruction, assistant turns, tool results.",
            ),
            _f("prompt", MESSAGES, False, "The leading system and user messages (what a policy is prompted with)."),
            _f("completion", MESSAGES, False, "The rest of the conversation (the policy's turns and the results)."),
            _f("created_at", TIMESTAMP, False, "When the run was created (UTC)."),
            _f("redacted", STRINGS, False, _REDACTED),
        ],
    ),
}
"""The exported schemas, by table name."""


def table_description(table: str) -> str:
    """One-sentence description of an exported table."""
    return _TABLE_DESCRIPTIONS[table]


def type_name(type_: pa.DataType) -> str:
    """A short, readable name of an Arrow type for the dataset card."""
    if type_.equals(MESSAGES):
        return "list<message>"
    if pa.types.is_list(type_):
        return f"list<{type_name(type_.value_type)}>"
    if pa.types.is_timestamp(type_):
        return f"timestamp[{type_.unit}, UTC]"
    return str(type_)
