"""The comparable collections of the ``router`` probe (see `testbed.probes.diff`).

- ``config``: running-configuration paths (a multiset: a line may repeat in two blocks'
  paths only if FRR prints it twice); ``saved``: the saved file's paths; ``unsaved``: the
  running paths the saved file lacks (what a reboot would lose).
- ``rib``: ``PREFIX PROTOCOL`` → selected flag and next hops (uptime left out).
- ``ospf_neighbors``: ``ROUTER-ID IFNAME`` → the adjacency's state without its DR/BDR role
  (``Full/DR`` and ``Full/Backup`` are both ``Full``: roles move at every election).
- ``bgp_peers``: ``AFI PEER`` → remote AS and whether the session is established
  (``Active``, ``Connect`` and ``Idle`` alternate while a session is down: all ``down``).
- ``bfd_peers``: peer → status; ``links``: interface → state, admin and carrier flags.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Mapping
from typing import Any

Record = dict[str, Any]


def _dict(value: Any) -> dict[str, Any]:
    return value if isinstance(value, dict) else {}


def _list(value: Any) -> list[Any]:
    return value if isinstance(value, list) else []


def _lines(value: Any) -> dict[str, Record]:
    return {str(k): {"count": n} for k, n in Counter(str(x) for x in _list(value)).items()}


def _rib(rib: Any) -> dict[str, Record]:
    out: dict[str, Record] = {}
    for prefix, routes in _dict(rib).items():
        for route in _list(routes):
            route = _dict(route)
            out[f"{prefix} {route.get('protocol')}"] = {
                "selected": route.get("selected"),
                "nexthops": _list(route.get("nexthops")),
            }
    return out


def _session(state: Any) -> str:
    return "established" if state == "Established" else "down"


def router_collections(d: Mapping[str, Any]) -> dict[str, dict[str, Record]]:
    """See module docstring."""
    return {
        "config": _lines(d.get("running")),
        "saved": _lines(d.get("saved")),
        "unsaved": {str(k): {} for k in _list(d.get("unsaved"))},
        "rib": _rib(d.get("rib")),
        "ospf_neighbors": {
            k: {"state": str(_dict(v).get("state") or "").split("/", 1)[0], "address": _dict(v).get("address")}
            for k, v in _dict(d.get("ospf_neighbors")).items()
        },
        "bgp_peers": {
            k: {"remote_as": _dict(v).get("remote_as"), "session": _session(_dict(v).get("state"))}
            for k, v in _dict(d.get("bgp_peers")).items()
        },
        "bfd_peers": {k: {"status": _dict(v).get("status")} for k, v in _dict(d.get("bfd_peers")).items()},
        "links": {
            k: {
                "state": _dict(v).get("state"),
                "admin_up": _dict(v).get("admin_up"),
                "lower_up": _dict(v).get("lower_up"),
            }
            for k, v in _dict(d.get("links")).items()
        },
    }
