"""Presentation helpers shared by the CLI, the dashboard, the report and the export card.

- `format`: durations, byte sizes, percentages, timestamps and one-line previews, as text
  for people (one home for each; no other module formats these).
- `terminal`: stored text made safe for a terminal (no Rich markup, no control or escape
  sequences) and the Rich console every CLI table prints to.
- `palette`: the one set of colours, keyed by outcome (and phase status).
- `svg`: inline SVG charts (dashboard and HTML report) drawn with that palette.

This package imports nothing else from testbed: any layer may use it.
"""
