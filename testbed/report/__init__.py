"""Reports that reproduce the study's tables from the run database.

Public API (see each module's contract):

- the figures come from the read model: `testbed.db.read.figures.compute_figures(session,
  selection) -> Figures` (frozen dataclasses; each figure's definition is documented there)
- `render`: `render_markdown`, `render_html`, `write_report`, `format_for`
- `cli`: `report_command` (registered as `testbed report`)
"""

from __future__ import annotations

from testbed.db.read.figures import Figures, compute_figures
from testbed.report.render import format_for, render_html, render_markdown, write_report

__all__ = ["Figures", "compute_figures", "format_for", "render_html", "render_markdown", "write_report"]
