"""The dataset card (`README.md`) written beside the Parquet files.

Contract: `write_card(result)` renders `templates/card.md.j2` into `result.card`. The card
starts with the YAML front matter of a Hugging Face Hub dataset card: `pretty_name`,
`license` (`--license`, default `unknown`), `task_categories`, `size_categories` (from the
trajectories' row count), tags, and `configs:` with one config per table that has rows
(data file = `<table>.parquet`, split `train`; `trajectories` is the default), so the
`datasets` loader picks every table up. An empty table has no config (`datasets` refuses
a split of no rows: "corresponds to no data"), so it never breaks loading the card's
configs; its file is still written, with its schema. The body gives the selection,
redaction mode, row counts, how the data was made and every table's schema (taken from
`SCHEMAS`, so it cannot drift from the files).
"""

from __future__ import annotations

from importlib.metadata import PackageNotFoundError, version
from typing import TYPE_CHECKING, Any

import jinja2

from testbed.export.schema import SCHEMA_VERSION, SCHEMAS, TABLE_NAMES, table_description, type_name
from testbed.render.format import size

if TYPE_CHECKING:
    from testbed.export.dataset import ExportResult


DEFAULT_CONFIG = "trajectories"
"""The config `load_dataset(directory)` loads when none is named (when it has rows; else
the first table that has)."""
SIZE_CATEGORIES = ((1_000, "n<1K"), (10_000, "1K<n<10K"), (100_000, "10K<n<100K"), (1_000_000, "100K<n<1M"))


def size_category(rows: int) -> str:
    """The Hub's size category for `rows` examples."""
    return next((name for bound, name in SIZE_CATEGORIES if rows < bound), "1M<n<10M")


def _environment() -> jinja2.Environment:
    return jinja2.Environment(
        loader=jinja2.PackageLoader("testbed.export", "templates"),
        autoescape=False,
        trim_blocks=True,
        lstrip_blocks=True,
        keep_trailing_newline=True,
        undefined=jinja2.StrictUndefined,
    )


def _cell(text: str) -> str:
    return text.replace("|", "\\|").replace("\n", " ")


def _testbed_version() -> str:
    try:
        return version("testbed")
    except PackageNotFoundError:
        return "unknown"


def card_context(result: ExportResult) -> dict[str, Any]:
    """The values the card template renders."""
    tables = []
    for name in TABLE_NAMES:
        written = result.tables.get(name)
        tables.append(
            {
                "name": name,
                "file": f"{name}.parquet",
                "rows": written.rows if written else 0,
                "size": size(written.bytes) if written else "-",
                "redacted": written.rows_redacted if written else 0,
                "description": table_description(name),
                "columns": [
                    {
                        "name": f.name,
                        "type": type_name(f.type),
                        "nullable": f.nullable,
                        "description": _cell((f.metadata or {}).get(b"description", b"").decode()),
                    }
                    for f in SCHEMAS[name]
                ],
            }
        )
    return {
        "tables": tables,
        "exported_at": result.finished_at.isoformat(timespec="seconds"),
        "database": result.database,
        "selection": result.selection.describe(),
        "redact": result.redact,
        "redaction": "on (testbed.analysis.redact)" if result.redact else "off (--no-redact: text as stored)",
        "schema_version": SCHEMA_VERSION,
        "testbed_version": _testbed_version(),
        "warnings": [_cell(w) for w in result.warnings],
        "license": result.license,
        "passed_only": result.passed_only,
        "configs": [t for t in tables if t["rows"]],
        "empty": [t["name"] for t in tables if not t["rows"]],
        "default_config": next((t["name"] for t in tables if t["rows"] and t["name"] == DEFAULT_CONFIG), None)
        or next((t["name"] for t in tables if t["rows"]), None),
        "size_category": size_category(result.tables["trajectories"].rows if "trajectories" in result.tables else 0),
    }


def render_card(result: ExportResult) -> str:
    """The card's Markdown text."""
    return _environment().get_template("card.md.j2").render(**card_context(result))


def write_card(result: ExportResult) -> None:
    """Write the card to `result.card`."""
    result.card.write_text(render_card(result), encoding="utf-8")
