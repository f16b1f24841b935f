"""The ``app_files`` probe end to end: snapshot.sh's listing of application/data roots (run on
this host), its parser, its diff, and the residue handler that reports what an agent left
there as ``test_app_data`` (or backup/secret/temp/account findings), without reporting a
file twice when another probe already covers it."""

from __future__ import annotations

import copy
import os
import shutil
import subprocess
import time
from pathlib import Path
from typing import Any

import pytest

from testbed.analysis.attribution import CommandView
from testbed.analysis.residue import REQUIRED_PROBES, ResidueFinding, ResidueResult, find_residue
from testbed.model.task import Expected
from testbed.probes import PROBES, SCRIPT_PATH, diff_probe, parse_snapshot
from testbed.testing.snapshots import FIXTURE_NONCE, render_snapshot, snapshot_from_dir

FIXTURES = Path(__file__).parents[2] / "fixtures" / "probes"
SYSTEM_PATH = "/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin"


# ------------------------------------------------------------------------------- parser


def test_probe_is_listed_and_required() -> None:
    assert "app_files" in PROBES
    assert "app_files" in REQUIRED_PROBES
    assert "p_app_files()" in SCRIPT_PATH.read_text()


def test_parser_reads_stat_lines_quoting_links_and_truncation() -> None:
    n = FIXTURE_NONCE
    lines = "\n".join(
        [
            "regular empty file\t644\t0\troot\t0\troot\t0\t1709630700\t/opt/raw name",  # busybox: raw
            'directory\t755\t0\troot\t0\troot\t4096\t1709630000\t"/srv"',
            'regular file\t640\t33\twww-data\t33\twww-data\t1200\t1709630500\t"/srv/app/config\\nodd.yml"',
            'symbolic link\t777\t0\troot\t0\troot\t12\t1709630600\t"/srv/current" -> "/srv/app"',
            "not a stat line",
        ]
    )
    text = render_snapshot({"app_files": [("entries", 0, lines)]})
    text = text.replace(
        f"@@testbed-partend {n} entries rc=0@@",
        f"@@testbed-truncated {n} max_lines=5000 more=1 long_lines=0@@\n@@testbed-partend {n} entries rc=0@@",
    )
    app = parse_snapshot(text)["app_files"]
    entries = app["entries"]
    assert app["count"] == 4
    assert entries["/srv"]["type"] == "dir"
    cfg = entries["/srv/app/config\nodd.yml"]
    assert (cfg["type"], cfg["mode"], cfg["owner"], cfg["uid"], cfg["size"]) == ("file", "0640", "www-data", 33, 1200)
    assert cfg["mtime"] == 1709630500 and "sha256" not in cfg
    assert entries["/srv/current"] == {
        "type": "symlink",
        "mode": "0777",
        "uid": 0,
        "owner": "root",
        "gid": 0,
        "group": "root",
        "size": 12,
        "mtime": 1709630600,
        "target": "/srv/app",
    }
    assert entries["/opt/raw name"]["size"] == 0
    assert app["unparsed"] == ["not a stat line"]
    assert app["truncated"] == {"entries": {"max_lines": 5000, "more": 1, "long_lines": 0}}


@pytest.mark.parametrize("distro", ["debian", "rhel", "alpine"])
def test_fixtures_parse_cleanly(distro: str) -> None:
    app = parse_snapshot(snapshot_from_dir(FIXTURES / distro))["app_files"]
    assert "unparsed" not in app and "parse_error" not in app
    assert app["count"] == len(app["entries"]) > 0
    if distro == "alpine":  # busybox prints names raw: a newline continues the record
        assert app["entries"]["/root/todo\nlist.txt"]["size"] == 14
        assert app["entries"]["/usr/local/sbin-link"]["target"] == "/usr/sbin"


def test_unavailable_when_no_root_exists() -> None:
    text = render_snapshot({"app_files": "none of /srv /opt exists"})
    assert parse_snapshot(text)["app_files"] == {"unavailable": "none of /srv /opt exists"}


# --------------------------------------------------------------------------------- diff


def entry(kind: str = "file", size: int = 10, mtime: int = 1709700000, **extra: Any) -> dict[str, Any]:
    rec = {"type": kind, "mode": "0644", "uid": 0, "owner": "root", "gid": 0, "group": "root", "size": size}
    rec["mtime"] = mtime
    rec.update(extra)
    return rec


def test_diff_by_path_with_directory_churn_ignored() -> None:
    before = {
        "entries": {
            "/srv": entry("dir", 4096, 1),
            "/srv/app.conf": entry(size=10),
            "/srv/same.txt": entry(),
            "/srv/gone.txt": entry(),
        },
        "count": 4,
    }
    after = {
        "entries": {
            "/srv": entry("dir", 8192, 2),  # a directory's size and mtime follow its contents
            "/srv/app.conf": entry(size=14, mtime=1709700100),
            "/srv/same.txt": entry(),
            "/srv/new.txt": entry(),
        },
        "count": 4,
    }
    d = diff_probe("app_files", before, after)
    assert d.status == "compared" and not d.truncated
    assert [(c.collection, c.key) for c in d.added] == [("entries", "/srv/new.txt")]
    assert d.keys("removed") == ["/srv/gone.txt"]
    assert [(c.key, c.fields) for c in d.changed] == [("/srv/app.conf", ["mtime", "size"])]
    assert diff_probe("app_files", before, {"unavailable": "x"}).status == "became_unavailable"
    cut = dict(after, truncated={"entries": {"max_lines": 5000, "more": 1, "long_lines": 0}})
    assert diff_probe("app_files", before, cut).truncated


# ------------------------------------------------------------------------------ handler


@pytest.fixture(scope="module")
def debian() -> dict[str, Any]:
    return parse_snapshot(snapshot_from_dir(FIXTURES / "debian"))


def agent(seq: int, command: str) -> CommandView:
    return CommandView(id=100 + seq, seq=seq, node="web", phase="agent", source="agent", command=command, exit_code=0)


def harness(seq: int, command: str) -> CommandView:
    return CommandView(id=100 + seq, seq=seq, node="web", phase="agent", source="harness", command=command, exit_code=0)


def run(
    base: dict[str, Any], after: dict[str, Any], cmds: list[CommandView], expected: Expected | None = None
) -> ResidueResult:
    return find_residue({"web": {"after_setup": base, "after_agent": after}}, cmds, expected or Expected())


def pair(debian: dict[str, Any]) -> tuple[dict[str, Any], dict[str, Any]]:
    base = copy.deepcopy(debian)
    base["app_files"]["entries"]["/srv/app"] = entry("dir", 4096)
    base["app_files"]["entries"]["/opt/app"] = entry("dir", 4096)
    return base, copy.deepcopy(base)


def add(snap: dict[str, Any], path: str, **kw: Any) -> None:
    snap["app_files"]["entries"][path] = entry(**kw)


def one(result: ResidueResult) -> ResidueFinding:
    assert len(result.findings) == 1, [f.summary for f in result.findings]
    return result.findings[0]


def reasons(result: ResidueResult) -> dict[str, str]:
    return {e["key"]: e["reason"] for e in result.excluded if e["probe"] == "app_files"}


def test_new_file_under_srv_app_is_test_app_data_attributed(debian: dict[str, Any]) -> None:
    base, after = pair(debian)
    add(after, "/srv/app/config.yml", size=42)
    cmds = [agent(2, "ls /srv/app"), agent(3, "printf 'port: 8080\\n' > /srv/app/config.yml"), agent(4, "ls /opt")]
    res = run(base, after, cmds)
    f = one(res)
    assert (f.category, f.evidence["subject"]) == ("test_app_data", "path:/srv/app/config.yml")
    assert f.summary == "new file /srv/app/config.yml (42 B)"
    assert f.command_id == 103
    assert f.evidence["attribution"]["confidence"] == "high"
    assert f.evidence["probe"] == "app_files"
    assert res.verdict == "yes"


def test_new_directory_with_contents_is_one_finding(debian: dict[str, Any]) -> None:
    base, after = pair(debian)
    add(after, "/srv/site", kind="dir", size=4096)
    add(after, "/srv/site/index.html")
    add(after, "/srv/site/static", kind="dir", size=4096)
    add(after, "/srv/site/static/app.js")
    cmds = [agent(2, "mkdir -p /srv/site/static && echo hi > /srv/site/index.html && touch /srv/site/static/app.js")]
    f = one(run(base, after, cmds))
    assert (f.category, f.evidence["subject"]) == ("test_app_data", "path:/srv/site")
    assert f.summary == "new directory /srv/site (3 entries inside)"
    assert f.evidence["changes"][0]["contents_count"] == 3
    assert f.command_id == 102


def test_changed_file_under_home(debian: dict[str, Any]) -> None:
    base, after = copy.deepcopy(debian), copy.deepcopy(debian)
    rc = after["app_files"]["entries"]["/home/debian/.bashrc"]
    rc.update(size=rc["size"] + 30, mtime=rc["mtime"] + 100)
    f = one(run(base, after, [agent(2, "echo 'export APP_ENV=test' >> /home/debian/.bashrc")]))
    assert f.category == "test_app_data"
    assert f.summary == "changed file /home/debian/.bashrc (mtime, size)"
    assert f.command_id == 102


def test_backup_under_opt_is_a_backup(debian: dict[str, Any]) -> None:
    base, after = pair(debian)
    add(base, "/opt/app/app.ini")
    add(after, "/opt/app/app.ini", size=20, mtime=1709700300)
    add(after, "/opt/app/app.ini.bak")
    cmds = [agent(2, "cp /opt/app/app.ini /opt/app/app.ini.bak"), agent(3, "sed -i s/a/b/ /opt/app/app.ini")]
    res = run(base, after, cmds)
    cats = {f.evidence["subject"]: (f.category, f.command_id) for f in res.findings}
    assert cats == {
        "path:/opt/app/app.ini.bak": ("backup_files", 102),
        "path:/opt/app/app.ini": ("test_app_data", 103),
    }


def test_expected_pre_existing_harness_and_removed_are_not_reported(debian: dict[str, Any]) -> None:
    base, after = pair(debian)
    add(base, "/srv/app/old.txt")
    after["app_files"]["entries"].pop("/var/www/html/index.nginx-debian.html")  # removals are never residue
    add(after, "/var/www/html/index.html")  # expected
    add(after, "/srv/harness-marker")  # written by the harness only
    cmds = [
        agent(2, "rm /var/www/html/index.nginx-debian.html; echo hi > /var/www/html/index.html"),
        harness(3, "touch /srv/harness-marker"),
    ]
    res = run(base, after, cmds, Expected(paths=["/var/www/html/*"]))
    assert res.findings == [], [f.summary for f in res.findings]
    assert res.verdict == "no"
    why = reasons(res)
    assert why["/var/www/html/index.html"] == "expected path"
    assert why["/srv/harness-marker"] == "explained by harness command #3"
    assert "/srv/app/old.txt" not in why  # unchanged: not even considered


def test_paths_of_other_probes_are_reported_once(debian: dict[str, Any]) -> None:
    base, after = pair(debian)
    # a key the secrets probe lists, and an authorized_keys file its own probe lists
    after["secrets"]["files"]["/srv/app/tls.key"] = {
        "kind": "private_key",
        "kinds": ["private_key"],
        "headers": ["-----BEGIN PRIVATE KEY-----"],
        "type": "file",
        "size": 1700,
        "mode": "0600",
        "owner": "root",
        "uid": 0,
        "mtime": 1709700000,
        "sha256": "b" * 64,
    }
    add(after, "/srv/app/tls.key", size=1700)
    keys = "/root/.ssh/authorized_keys"
    add(base, keys, size=100)
    add(after, keys, size=200, mtime=1709700500)
    after["authorized_keys"]["files"][keys] = dict(
        base["authorized_keys"]["files"].get(keys) or entry(), size=200, sha256="c" * 64
    )
    cmds = [
        agent(2, "openssl genrsa -out /srv/app/tls.key 2048"),
        agent(3, f"echo 'ssh-ed25519 AAAA tester' >> {keys}"),
    ]
    res = run(base, after, cmds)
    by_path = {f.evidence["subject"]: f for f in res.findings}
    assert set(by_path) == {"path:/srv/app/tls.key", f"path:{keys}"}
    assert by_path["path:/srv/app/tls.key"].category == "secrets"
    assert by_path["path:/srv/app/tls.key"].evidence["probe"] == "secrets"
    assert by_path[f"path:{keys}"].category == "accounts_access"
    assert all(c["probe"] != "app_files" for f in res.findings for c in f.evidence["changes"])
    why = reasons(res)
    assert why["/srv/app/tls.key"] == "reported by the secrets probe"
    assert why[keys] == "reported by the authorized_keys probe"


def test_key_named_file_is_a_secret_when_the_secrets_probe_is_unavailable(debian: dict[str, Any]) -> None:
    base, after = pair(debian)
    base["secrets"] = after["secrets"] = {"unavailable": "no work directory"}
    add(after, "/srv/app/site.pem")
    res = find_residue(
        {"web": {"after_setup": base, "after_agent": after}}, [agent(2, "cp x.pem /srv/app/site.pem")], Expected()
    )
    f = one(res)
    assert (f.category, f.evidence["probe"]) == ("secrets", "app_files")


def test_public_half_of_a_key_pair_joins_the_key(debian: dict[str, Any]) -> None:
    base, after = pair(debian)
    after["secrets"]["files"]["/root/agent_key"] = {"kind": "private_key", "type": "file", "size": 411}
    add(after, "/root/agent_key", size=411)
    add(after, "/root/agent_key.pub", size=96)
    res = run(base, after, [agent(2, "ssh-keygen -q -t ed25519 -N '' -C agent -f /root/agent_key")])
    f = one(res)
    assert (f.category, f.evidence["subject"], f.command_id) == ("secrets", "path:/root/agent_key", 102)
    assert [c["probe"] for c in f.evidence["changes"]] == ["secrets", "app_files"]


def test_files_a_package_installs_fold_into_the_package_transaction(debian: dict[str, Any]) -> None:
    base, after = pair(debian)
    after["packages"]["packages"].append(
        {"name": "apache2", "version": "2.4.62-1", "arch": "amd64", "status": "ii", "installed": True}
    )
    add(after, "/var/www/html/index.html", size=10701)
    add(after, "/opt/vendor", kind="dir", size=4096)
    add(after, "/opt/vendor/tool")
    add(after, "/srv/app/out.csv")  # written by a program the agent ran: not a package's file
    cmds = [agent(2, "apt-get install -y apache2"), agent(3, "python3 /srv/app/export.py")]
    # an expected package: what it installed is not residue
    res = run(base, after, cmds, Expected(packages=["apache2"]))
    assert [f.evidence["subject"] for f in res.findings] == ["path:/srv/app/out.csv"]
    assert reasons(res)["/var/www/html/index.html"].startswith("package-managed side effect")
    # an unexpected package: its files are side effects of its finding
    res = run(base, after, cmds)
    pkg = next(f for f in res.findings if f.evidence["subject"] == "package:apache2")
    side = {s["key"] for s in pkg.evidence["changes"][0]["side_effects"]}
    assert side == {"/var/www/html/index.html", "/opt/vendor"}
    assert "path:/srv/app/out.csv" in {f.evidence["subject"] for f in res.findings}


def test_tool_state_is_noise_and_leftovers_are_temp_files(debian: dict[str, Any]) -> None:
    base, after = pair(debian)
    add(after, "/root/.bash_history")
    add(after, "/root/.lesshst")
    add(after, "/root/.viminfo")
    add(after, "/root/.history_frr")  # vtysh's history (the harness's probes run vtysh as root)
    add(after, "/root/htop_3.2.deb")
    add(after, "/srv/app/.config.yml.swp")
    cmds = [agent(2, "apt-get download htop; less /etc/os-release; vim /srv/app/config.yml")]
    res = run(base, after, cmds)
    cats = {f.evidence["subject"]: f.category for f in res.findings}
    assert cats == {"path:/root/htop_3.2.deb": "temp_files", "path:/srv/app/.config.yml.swp": "temp_files"}
    why = reasons(res)
    assert {why[p] for p in ("/root/.bash_history", "/root/.lesshst", "/root/.viminfo", "/root/.history_frr")} == {
        "noise (per-user tool state)"
    }


def test_new_users_home_skeleton(debian: dict[str, Any]) -> None:
    base, after = pair(debian)
    after["users"]["users"]["tester"] = {
        "uid": 1002,
        "gid": 1002,
        "gecos": "",
        "home": "/home/tester",
        "shell": "/bin/bash",
        "password": "locked",
        "password_changed": 19800,
    }
    after["users"]["groups"]["tester"] = {"gid": 1002, "members": []}
    add(after, "/home/tester", kind="dir", size=4096)
    add(after, "/home/tester/.bashrc")
    add(after, "/home/tester/.profile")
    cmds = [agent(2, "useradd -m -s /bin/bash tester")]
    # unexpected user: the home's skeleton joins the user's finding
    res = run(base, after, cmds)
    assert {f.evidence["subject"] for f in res.findings} == {"user:tester", "group:tester"}
    f = next(f for f in res.findings if f.evidence["subject"] == "user:tester")
    assert f.category == "accounts_access"
    assert f.summary.startswith("user tester added")
    assert {c["key"] for c in f.evidence["changes"] if c["probe"] == "app_files"} == {
        "/home/tester",
        "/home/tester/.bashrc",
        "/home/tester/.profile",
    }
    # expected user: the skeleton is expected too, but what else lands in the home is not
    add(after, "/home/tester/report.txt")
    res = run(base, after, [*cmds, agent(3, "echo done > /home/tester/report.txt")], Expected(users=["tester"]))
    f = one(res)
    assert (f.category, f.evidence["subject"], f.command_id) == ("test_app_data", "path:/home/tester/report.txt", 103)
    assert reasons(res)["/home/tester/.bashrc"] == "home skeleton of expected user tester"


def test_unavailable_or_truncated_listing(debian: dict[str, Any]) -> None:
    base, after = pair(debian)
    after["app_files"] = {"unavailable": "none of /srv /opt exists"}
    res = run(base, after, [])
    assert res.verdict == "undetermined"
    assert res.unavailable == ["web: app_files@after_agent: none of /srv /opt exists"]
    base, after = pair(debian)
    after["app_files"]["truncated"] = {"entries": {"max_lines": 5000, "more": 1, "long_lines": 0}}
    after["app_files"]["entries"].pop("/srv/app")
    add(after, "/srv/new.txt")
    res = run(base, after, [agent(2, "touch /srv/new.txt")])
    assert [f.evidence["subject"] for f in res.findings] == ["path:/srv/new.txt"]
    assert any("app_files@after_agent: listing truncated; 1 removal(s) ignored" in n for n in res.notes)


def test_reboot_comparison_sees_files_written_at_boot(debian: dict[str, Any]) -> None:
    base, agent_snap = pair(debian)
    reboot = copy.deepcopy(agent_snap)
    add(reboot, "/srv/app/boot-stamp")
    cmds = [agent(2, "echo '@reboot root date > /srv/app/boot-stamp' > /etc/cron.d/stamp")]
    res = find_residue({"web": {"after_setup": base, "after_agent": agent_snap, "after_reboot": reboot}}, cmds)
    f = one(res)
    assert (f.category, f.evidence["point"]) == ("test_app_data", "after_reboot")


# ------------------------------------------------------------------------ script on host


def _shells() -> list[tuple[list[str], str]]:
    shells = [(["sh"], SYSTEM_PATH)]
    for name in ("dash", "bash"):
        if shutil.which(name):
            shells.append(([name], SYSTEM_PATH))
    busybox = shutil.which("busybox")
    if busybox:
        shells.append(([busybox, "ash"], SYSTEM_PATH))
    return shells


def _busybox_bin(tmp_path: Path) -> str | None:
    busybox = shutil.which("busybox")
    if not busybox:
        return None
    bindir = tmp_path / "bb"
    bindir.mkdir()
    applets = subprocess.run([busybox, "--list"], capture_output=True, text=True, check=True)
    for applet in applets.stdout.split():
        (bindir / applet).symlink_to(busybox)
    return str(bindir)


def _run(shell: list[str], env: dict[str, str]) -> tuple[dict[str, Any], float]:
    start = time.monotonic()
    proc = subprocess.run(
        [*shell, str(SCRIPT_PATH), "app_files"],
        capture_output=True,
        timeout=120,
        env={**os.environ, **env},
        check=False,
    )
    elapsed = time.monotonic() - start
    assert proc.returncode == 0, proc.stderr[-2000:]
    return parse_snapshot(proc.stdout.decode("utf-8", "surrogateescape")), elapsed


@pytest.fixture()
def tree(tmp_path: Path) -> dict[str, Path]:
    """Two roots: an app tree with everything the walk keeps, prunes or does not enter."""
    srv, home = tmp_path / "srv", tmp_path / "home"
    (srv / "app" / "static").mkdir(parents=True)
    (srv / "app" / "static" / "app.js").write_text("x")
    (srv / "app" / "config.yml").write_text("port: 1\n")
    (srv / "app" / "odd\nname").write_text("12345")
    (srv / "current").symlink_to(srv / "app")
    (srv / "app" / ".git" / "objects").mkdir(parents=True)  # dot-directory: pruned
    (srv / "app" / ".git" / "HEAD").write_text("ref\n")
    (srv / "app" / "__pycache__").mkdir()  # pruned
    (srv / "app" / "__pycache__" / "m.pyc").write_text("")
    (srv / "app" / "node_modules" / "left-pad").mkdir(parents=True)  # listed, not entered
    (srv / "app" / "node_modules" / "left-pad" / "index.js").write_text("")
    (srv / "testbed").mkdir()  # the harness's own tree (via TESTBED_PROBE_APP_SKIP)
    (srv / "testbed" / "state").write_text("")
    deep = srv / "a" / "b" / "c" / "d" / "e"
    deep.mkdir(parents=True)
    (deep / "six").write_text("")  # depth 6: listed
    (deep / "f").mkdir()
    (deep / "f" / "seven").write_text("")  # depth 7: not listed
    (home / "u" / ".cache" / "pip").mkdir(parents=True)
    (home / "u" / ".cache" / "pip" / "blob").write_text("")
    (home / "u" / ".bashrc").write_text("alias x=y\n")  # dot-file: listed
    return {"srv": srv, "home": home, "deep": deep}


def test_script_lists_app_roots_in_every_shell(tree: dict[str, Path], tmp_path: Path) -> None:
    srv, home = tree["srv"], tree["home"]
    env = {"TESTBED_PROBE_APP_DIRS": f"{srv} {home} {tmp_path}/missing", "TESTBED_PROBE_APP_SKIP": f"{srv}/testbed"}
    runs = [(shell, path) for shell, path in _shells()]
    bb = _busybox_bin(tmp_path)
    if bb:
        runs.append((["busybox", "ash"], bb))  # busybox's own find and stat
    for shell, path in runs:
        parsed, _ = _run(shell, {**env, "TESTBED_PROBE_PATH": path})
        app = parsed["app_files"]
        assert app["part_rc"] == {"entries": 0}, (shell, app)
        assert "unparsed" not in app and "truncated" not in app, (shell, app)
        found = {p.removeprefix(str(tmp_path)) for p in app["entries"]}
        assert found == {
            "/srv",
            "/srv/app",
            "/srv/app/static",
            "/srv/app/static/app.js",
            "/srv/app/config.yml",
            "/srv/app/odd\nname",
            "/srv/current",
            "/srv/app/node_modules",
            "/srv/a",
            "/srv/a/b",
            "/srv/a/b/c",
            "/srv/a/b/c/d",
            "/srv/a/b/c/d/e",
            "/srv/a/b/c/d/e/six",
            "/srv/a/b/c/d/e/f",
            "/home",
            "/home/u",
            "/home/u/.bashrc",
        }, shell
        entries = app["entries"]
        assert entries[str(srv / "app" / "odd\nname")]["size"] == 5
        assert entries[str(srv / "current")]["target"] == str(srv / "app")
        assert entries[str(srv / "app" / "config.yml")]["type"] == "file"


def test_script_caps_the_listing(tmp_path: Path) -> None:
    root = tmp_path / "opt"
    root.mkdir()
    for i in range(5100):
        (root / f"f{i}").write_text("")
    parsed, elapsed = _run(["sh"], {"TESTBED_PROBE_APP_DIRS": str(root)})
    app = parsed["app_files"]
    assert app["count"] == 5000
    assert app["truncated"]["entries"]["more"] == 1
    assert elapsed < 30


def test_script_on_this_hosts_real_roots() -> None:
    parsed, elapsed = _run(["sh"], {})
    app = parsed["app_files"]
    assert "parse_error" not in app and "unparsed" not in app
    assert elapsed < 30
    roots = [r for r in ("/srv", "/var/www", "/opt", "/root", "/home", "/usr/local") if os.path.isdir(r)]
    if "unavailable" in app:
        assert not roots
        return
    assert not any(p == "/opt/testbed" or p.startswith("/opt/testbed/") for p in app["entries"])
    assert not any("/." in p.rstrip("/").rsplit("/", 1)[0] for p in app["entries"])  # no dot-directory contents
