"""Batches of runs across VM budgets and lab hosts: jobs, a coordinator, retries, recovery.

Modules: `resources` (demands, budgets, placement), `bootgate` (boot caps and stagger),
`store` (claims, leases, retries on the run database; `memstore` in memory), `coordinator`
(the single owner of scheduling state), `executor` (the executor protocol), `real` (the
runner-backed executor and task catalog), `fake` (fake executor, virtual clock), `images`
(base images on hosts, verified by checksum), `progress` (live view), `launch` and `cli`.
"""
