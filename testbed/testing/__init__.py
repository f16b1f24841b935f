"""Test support: fakes and sample data for tests and demos, public so that users' own tests
can use them too.

Contract: every module here stands in for a real component or writes realistic data, and
keeps the interface of what it replaces (a fake executor has the `Executor` interface, the
in-memory store the `SqlRunStore` contract, sample runs are written through `RunRecorder`
like the runner writes them). Names and signatures change only with a note in the commit,
so they are stable enough to build tests on.

- `clock`: `VirtualClockLoop`, an event loop on simulated time; `run_simulated`.
- `scheduler`: `FakeExecutor`, `FakeRun`, `FakeCatalog`, `make_hosts` for the coordinator.
- `memstore`: `MemoryRunStore`, the in-memory `RunStore`.
- `sample_run`: `record_sample_run` / `check_sample_run`, one realistic finished run.
- `demo`: `seed_demo`, a small, varied database for the dashboard; `demo_snapshots`: the
  parsed snapshots of its guests (`base_snapshot`, `evolve`).
- `demo_models`: `seed_models`, a model-evaluation demo (two LLM agents and the oracle,
  agent x task x release x attempt, with model turns, task records that change between
  jobs and residue from the real engine); `demo_stories`: what each of its runs does.
  `testbed demo` and `testbed dashboard --demo` write both.
- `images`: `cache_image`, a placeholder disk committed to a real image cache.
- `snapshots`: snapshot-script output built without a guest (`render_snapshot`, fixture
  directories).

Product code never imports this package: nothing in testbed outside it imports
`testbed.testing`. A product feature that serves sample data (a dashboard demo mode, say)
imports it in its command-line module only, never in the domain package; tests/unit/
test_layering.py checks this.
"""
