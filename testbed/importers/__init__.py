"""Importers of other harnesses' published runs into testbed's run database.

- `infraset`: reads a checkout of the InfraSet study's dataset (`find_trials`).
- `observations`: the study collector's observations as testbed snapshot data.
- `store`: one run per trial, idempotent, then testbed's residue analysis (`import_trials`).
- `cli`: `testbed import infraset PATH`.
"""
