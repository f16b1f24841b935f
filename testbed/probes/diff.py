"""Compare two parsed snapshots of one probe: what was added, removed or changed.

Each probe's parsed dict is reduced to *collections* (``{collection: {key: record}}``) with
stable keys — file path, unit name, ``proto:addr:port``, user name, package name, sysctl
key, ``file: line`` — and records that hold only the fields worth comparing (volatile
fields such as pids, uptime, directory mtimes and counters are left out). The diff of two
collections is a set difference on keys plus a field comparison of the common keys.

Contract: :func:`diff_probe` never raises on odd input; a probe unavailable on either side
yields a diff with that status and no items (a note says why), so that an unavailable tool
never shows up as "everything removed".
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Any

from testbed.probes.routerdiff import router_collections

Record = dict[str, Any]
Collections = dict[str, dict[str, Record]]


@dataclass
class ItemChange:
    """One added, removed or changed item of a probe's collection."""

    collection: str
    key: str
    change: str  # "added" | "removed" | "changed"
    before: Record | None = None
    after: Record | None = None
    fields: list[str] = field(default_factory=list)

    def to_dict(self) -> dict[str, Any]:
        """JSON-able form."""
        return {
            "collection": self.collection,
            "key": self.key,
            "change": self.change,
            "before": self.before,
            "after": self.after,
            "fields": list(self.fields),
        }


@dataclass
class ProbeDiff:
    """Differences of one probe between two snapshot points.

    ``status`` is ``compared`` (both sides parsed), ``unavailable`` (neither side),
    ``became_available`` / ``became_unavailable`` (only one side; no items listed).
    ``truncated`` is True when either side's listing was capped, so removals may be
    artefacts of the cap.
    """

    probe: str
    status: str = "compared"
    added: list[ItemChange] = field(default_factory=list)
    removed: list[ItemChange] = field(default_factory=list)
    changed: list[ItemChange] = field(default_factory=list)
    truncated: bool = False
    notes: list[str] = field(default_factory=list)

    @property
    def empty(self) -> bool:
        """True when nothing was added, removed or changed."""
        return not (self.added or self.removed or self.changed)

    def items(self) -> list[ItemChange]:
        """All changes: added, then removed, then changed."""
        return [*self.added, *self.removed, *self.changed]

    def keys(self, change: str | None = None, collection: str | None = None) -> list[str]:
        """Keys of the changes, optionally filtered by change kind and collection."""
        return [
            c.key
            for c in self.items()
            if (change is None or c.change == change) and (collection is None or c.collection == collection)
        ]

    def to_dict(self) -> dict[str, Any]:
        """JSON-able form."""
        return {
            "probe": self.probe,
            "status": self.status,
            "added": [c.to_dict() for c in self.added],
            "removed": [c.to_dict() for c in self.removed],
            "changed": [c.to_dict() for c in self.changed],
            "truncated": self.truncated,
            "notes": list(self.notes),
        }


# ------------------------------------------------------------------------ collections


def _pick(rec: Mapping[str, Any], *names: str) -> Record:
    """The named fields of *rec* that are present."""
    return {n: rec[n] for n in names if n in rec}


def _dict(value: Any) -> dict[str, Any]:
    """*value* if it is a dict, else an empty dict (odd input never raises)."""
    return value if isinstance(value, dict) else {}


def _list(value: Any) -> list[Any]:
    """*value* if it is a list, else an empty list."""
    return value if isinstance(value, list) else []


def _counted(keys: list[str]) -> dict[str, Record]:
    """Multiset of keys as ``{key: {"count": n}}``."""
    return {k: {"count": n} for k, n in Counter(keys).items()}


def _stat_record(entry: Mapping[str, Any]) -> Record:
    """Comparable part of a stat entry: directories ignore size and mtime (they change
    whenever their content does); hashed files ignore mtime (the hash says it all)."""
    rec = _pick(entry, "type", "mode", "owner", "group", "uid", "gid", "target", "sha256")
    if entry.get("type") != "dir":
        rec.update(_pick(entry, "size"))
        if "sha256" not in entry:
            rec.update(_pick(entry, "mtime"))
    return rec


def _c_boot(d: Mapping[str, Any]) -> Collections:
    return {"boot": {"boot_id": {"value": d.get("boot_id")}}}


def _c_os(d: Mapping[str, Any]) -> Collections:
    kernel = {k: {"value": v} for k, v in _dict(d.get("kernel")).items() if k != "version"}
    kernel["hostname"] = {"value": d.get("hostname")}
    return {
        "os_release": {k: {"value": v} for k, v in _dict(d.get("os_release")).items()},
        "kernel": kernel,
    }


def _c_entries(d: Mapping[str, Any]) -> Collections:
    """``tmp_files`` and ``app_files``: one ``entries`` collection keyed by path."""
    return {"entries": {p: _stat_record(e) for p, e in _dict(d.get("entries")).items()}}


def _c_services(d: Mapping[str, Any]) -> Collections:
    openrc = _dict(d.get("openrc"))
    return {
        "failed": {u: {} for u in _list(d.get("failed"))},
        "unit_files": {u: {"state": s} for u, s in _dict(d.get("unit_files")).items()},
        "units": {u: _pick(r, "load", "active", "sub") for u, r in _dict(d.get("units")).items()},
        "openrc_services": {n: _pick(r, "state") for n, r in _dict(openrc.get("services")).items()},
        "openrc_runlevels": {n: {"runlevels": lv} for n, lv in _dict(openrc.get("runlevels")).items()},
    }


def _c_listening(d: Mapping[str, Any]) -> Collections:
    out: dict[str, set[str]] = {}
    for s in _list(d.get("sockets")):
        names = {str(p.get("name")) for p in _list(_dict(s).get("processes"))}
        out.setdefault(str(_dict(s).get("key")), set()).update(names)
    return {"sockets": {k: {"processes": sorted(v)} for k, v in out.items()}}


def _c_processes(d: Mapping[str, Any]) -> Collections:
    keys = [f"{_dict(p).get('user')} {_dict(p).get('command')}" for p in _list(d.get("processes"))]
    return {"processes": _counted(keys)}


def _c_users(d: Mapping[str, Any]) -> Collections:
    return {
        "users": {n: dict(_dict(r)) for n, r in _dict(d.get("users")).items()},
        "groups": {n: dict(_dict(r)) for n, r in _dict(d.get("groups")).items()},
    }


def _c_files(d: Mapping[str, Any]) -> dict[str, Record]:
    return {p: _stat_record(_dict(e)) for p, e in _dict(d.get("files")).items()}


def _c_sudoers(d: Mapping[str, Any]) -> Collections:
    rules = [f"{_dict(r).get('file')}: {_dict(r).get('line')}" for r in _list(d.get("rules"))]
    return {"files": _c_files(d), "rules": _counted(rules)}


def _c_authorized_keys(d: Mapping[str, Any]) -> Collections:
    keys: dict[str, Record] = {}
    for k in _list(d.get("keys")):
        k = _dict(k)
        ident = k.get("fingerprint") or k.get("line_sha256")
        keys[f"{k.get('file')} {ident}"] = _pick(k, "type", "comment", "options", "line_sha256")
    return {"files": _c_files(d), "keys": keys}


def _c_packages(d: Mapping[str, Any]) -> Collections:
    pkgs = [_dict(p) for p in _list(d.get("packages"))]
    archs: dict[str, set[str]] = {}
    for p in pkgs:
        archs.setdefault(str(p.get("name")), set()).add(str(p.get("arch")))
    grouped: dict[str, list[Record]] = {}
    for p in pkgs:
        name = str(p.get("name"))
        key = f"{name}:{p.get('arch')}" if len(archs[name]) > 1 else name
        grouped.setdefault(key, []).append(p)
    return {
        "packages": {
            k: {
                "version": ", ".join(sorted(str(p.get("version")) for p in ps)),
                "status": ", ".join(sorted({str(p.get("status")) for p in ps})),
            }
            for k, ps in grouped.items()
        }
    }


def repo_key(repo: Mapping[str, Any]) -> str:
    """Stable key of a repository record: ``file: types uris suites`` (apt, deb822),
    ``file: [id]`` (yum) or ``file: uri`` (apk)."""
    file = repo.get("file")
    if repo.get("format") == "yum":
        return f"{file}: [{repo.get('id')}]"
    if repo.get("format") == "apk":
        tag = f"@{repo['tag']} " if repo.get("tag") else ""
        return f"{file}: {tag}{' '.join(_list(repo.get('uris')))}"
    parts = [" ".join(_list(repo.get(k))) for k in ("types", "uris", "suites")]
    return f"{file}: {' '.join(parts)}"


def _c_repos(d: Mapping[str, Any]) -> Collections:
    repos: dict[str, Record] = {}
    for r in _list(d.get("repos")):
        r = _dict(r)
        repos[repo_key(r)] = {k: v for k, v in r.items() if k != "file"}
    return {"repos": repos}


def _c_pkg_health(d: Mapping[str, Any]) -> Collections:
    return {"checks": {n: _pick(_dict(c), "ok", "rc", "output") for n, c in _dict(d.get("checks")).items()}}


def _c_firewall(d: Mapping[str, Any]) -> Collections:
    return {"rules": _counted([str(r) for r in _list(d.get("rules"))])}


def _c_cron(d: Mapping[str, Any]) -> Collections:
    entries = [f"{_dict(e).get('file')}: {_dict(e).get('line')}" for e in _list(d.get("entries"))]
    return {
        "entries": _counted(entries),
        "scripts": {p: {"sha256": h} for p, h in _dict(d.get("scripts")).items()},
        "timers": {u: _pick(_dict(r), "load") for u, r in _dict(d.get("timers")).items()},
    }


def _c_mounts(d: Mapping[str, Any]) -> Collections:
    mounts: dict[str, Record] = {}
    for m in _list(d.get("mounts")):
        m = _dict(m)
        key = str(m.get("mountpoint"))
        n = 1
        while key in mounts:
            n += 1
            key = f"{m.get('mountpoint')}#{n}"
        mounts[key] = _pick(m, "device", "fstype", "options")
    df = {
        str(_dict(r).get("mountpoint")): _pick(_dict(r), "filesystem", "size_kb", "capacity_pct")
        for r in _list(d.get("df"))
    }
    return {"mounts": mounts, "df": df}


def _c_sysctl(d: Mapping[str, Any]) -> Collections:
    return {"values": {k: {"value": v} for k, v in _dict(d.get("values")).items()}}


def _c_secrets(d: Mapping[str, Any]) -> Collections:
    return {
        "files": {
            p: _pick(_dict(r), "kind", "sha256", "size", "mode", "owner") for p, r in _dict(d.get("files")).items()
        }
    }


def _c_network(d: Mapping[str, Any]) -> Collections:
    return {
        "addresses": {str(_dict(a).get("key")): _pick(_dict(a), "scope") for a in _list(d.get("addresses"))},
        "routes": {r: {} for r in _list(d.get("routes"))},
        "routes6": {r: {} for r in _list(d.get("routes6"))},
    }


def _c_generic(d: Mapping[str, Any]) -> Collections:
    """Fallback for probes without a rule: each top-level field is one item."""
    return {"fields": {k: {"value": v} for k, v in d.items() if k not in _DIAGNOSTIC_KEYS}}


_DIAGNOSTIC_KEYS = frozenset({"unparsed", "stderr", "truncated", "unavailable_parts", "part_rc", "parse_error", "raw"})

COLLECTORS: dict[str, Callable[[Mapping[str, Any]], Collections]] = {
    "boot": _c_boot,
    "os": _c_os,
    "tmp_files": _c_entries,
    "services": _c_services,
    "listening": _c_listening,
    "processes": _c_processes,
    "users": _c_users,
    "sudoers": _c_sudoers,
    "authorized_keys": _c_authorized_keys,
    "packages": _c_packages,
    "repos": _c_repos,
    "pkg_health": _c_pkg_health,
    "firewall": _c_firewall,
    "cron": _c_cron,
    "mounts": _c_mounts,
    "sysctl": _c_sysctl,
    "etc_files": lambda d: {"files": _c_files(d)},
    "secrets": _c_secrets,
    "app_files": _c_entries,
    "network": _c_network,
    "router": router_collections,
}
"""Probe name → function reducing its parsed dict to comparable collections."""


def collections(name: str, parsed: Mapping[str, Any]) -> Collections:
    """The comparable collections of one probe's parsed dict (see :data:`COLLECTORS`)."""
    return COLLECTORS.get(name, _c_generic)(parsed)


# ------------------------------------------------------------------------------- diffing


def _changed_fields(before: Record, after: Record) -> list[str]:
    """Names of fields whose values differ (a field missing on one side counts)."""
    return sorted(k for k in before.keys() | after.keys() if before.get(k) != after.get(k))


def _diff_collection(name: str, before: dict[str, Record], after: dict[str, Record], out: ProbeDiff) -> None:
    """Append the changes of one collection to *out*, in key order."""
    for key in sorted(after.keys() - before.keys()):
        out.added.append(ItemChange(name, key, "added", after=after[key]))
    for key in sorted(before.keys() - after.keys()):
        out.removed.append(ItemChange(name, key, "removed", before=before[key]))
    for key in sorted(before.keys() & after.keys()):
        fields = _changed_fields(before[key], after[key])
        if fields:
            out.changed.append(ItemChange(name, key, "changed", before=before[key], after=after[key], fields=fields))


def _unavailable(value: Any) -> str | None:
    """The unavailability reason of a parsed probe value, or None if it is usable."""
    if not isinstance(value, dict):
        return "no data"
    if "unavailable" in value:
        return str(value["unavailable"])
    return None


def diff_probe(name: str, before: Mapping[str, Any] | None, after: Mapping[str, Any] | None) -> ProbeDiff:
    """Diff one probe's parsed values taken at two snapshot points. Never raises."""
    out = ProbeDiff(probe=name)
    why_before, why_after = _unavailable(before), _unavailable(after)
    if why_before and why_after:
        out.status = "unavailable"
        out.notes.append(f"unavailable: {why_after}")
        return out
    if why_before or why_after:
        out.status = "became_available" if why_before else "became_unavailable"
        out.notes.append(f"unavailable {'before' if why_before else 'after'}: {why_before or why_after}")
        return out
    assert before is not None and after is not None
    if before.get("truncated") or after.get("truncated"):
        out.truncated = True
        out.notes.append("a listing was truncated; removals may be artefacts of the cap")
    cb, ca = collections(name, before), collections(name, after)
    for coll in sorted(cb.keys() | ca.keys()):
        _diff_collection(coll, cb.get(coll, {}), ca.get(coll, {}), out)
    return out


def diff_snapshots(before: Mapping[str, Any], after: Mapping[str, Any]) -> dict[str, ProbeDiff]:
    """Diff every probe present in either parsed snapshot (``_``-prefixed keys skipped)."""
    names = sorted(k for k in before.keys() | after.keys() if not k.startswith("_"))
    return {n: diff_probe(n, before.get(n), after.get(n)) for n in names}
