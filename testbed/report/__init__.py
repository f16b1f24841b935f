"""Reports that reproduce the study's tables from the run database.

Public API (see each module's contract):

- `figures`: `compute_figures(session, selection) -> Figures` and one function per figure
  (`pass_rates`, `command_failures`, `residue`, `residue_by_category`, `impact_classes`,
  `completion_times`, `reboot_regressions`), each returning frozen dataclasses
- `render`: `render_markdown`, `render_html`, `write_report`, `format_for`
- `cli`: `report_command` (registered as `testbed report`)
"""

from __future__ import annotations

from testbed.report.figures import Figures, compute_figures
from testbed.report.render import format_for, render_html, render_markdown, write_report

__all__ = ["Figures", "compute_figures", "format_for", "render_html", "render_markdown", "write_report"]
