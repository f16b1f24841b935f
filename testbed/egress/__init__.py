"""Controlled guest egress: a lab's guests reach package mirrors (and allowed hosts) only
through a Squid forward proxy run by testbed, and every request is logged per run.

Data path (nothing is routed; see `testbed.egress.relay`):

    guest -> LabListener on the management bridge address (lab's network namespace)
          -> Unix socket -> UpstreamRelay (proxy's namespace) -> Squid on 127.0.0.1
          -> package mirrors

Modules, one job each:
- `hosts`      which hosts a policy (`testbed.model.egress.EgressSpec`) allows, as Squid values
- `squidconf`  the generated squid.conf (per-lab ACLs and access logs)
- `proxy`      `SquidProxy`: Squid as a child process (start, reload, stop by pid)
- `relay`      the relay pair over a Unix socket (and its `python -m` entry point)
- `hub`        `EgressHub`: one lab host's Squid + relay, one listener per lab
- `lab`        a running lab's spec for the hub, its guests' configuration, `start_egress`
- `guestconf`  the commands that point a guest at the proxy
- `accesslog`  Squid's log lines as `egress` rows, attributed to nodes
- `analysis`   repositories used (and whether their hosts resolved), downloads
- `query`, `render`, `export`  reading rows back, `runs show` section, Parquet table
"""
