"""Benchmark of the redactor (`testbed.analysis.redact`) on ordinary and on adversarial text.

Texts, each at 16 KiB and 64 KiB:

- clean: command output without a secret (apt, systemctl, ss, ls, journal lines);
- mixed: the same with a secret of a common form every twenty lines;
- adversarial: every text of `ADVERSARIAL` (one unit repeated to the size: the forms that
  made the former regex redactor backtrack or rescan, such as `'x.password'` repeated,
  which took 169 s at 64 KiB, and the key words of every rule); the slowest one is reported.

Each figure is the best of `--repeat` runs (wall clock, `time.perf_counter`). Throughput is
MiB/s; the adversarial figure is the slowest text's seconds. Last line: name=value pairs,
e.g. `clean16k_mibs=… clean64k_mibs=… mixed64k_mibs=… adversarial16k_s=… adversarial64k_s=…
worst=…` (goal: adversarial64k_s < 1).

Usage: python benchmarks/redact.py [--repeat N]
"""

from __future__ import annotations

import argparse
import sys
import time

from testbed.analysis.redact import redact

GOAL_S = 1.0
SIZES = {"16k": 16 * 1024, "64k": 64 * 1024}

CLEAN_LINES = [
    "Reading package lists... Done",
    "Building dependency tree... Done",
    "Setting up nginx (1.22.1-9) ...",
    "● nginx.service - A high performance web server and a reverse proxy server",
    "     Active: active (running) since Mon 2024-05-06 10:12:33 UTC; 33s ago",
    'LISTEN 0      511          0.0.0.0:80      0.0.0.0:*    users:(("nginx",pid=812,fd=6))',
    "drwxr-xr-x 2 root root 4096 May  6 10:12 html",
    "-rw-r--r-- 1 root root  615 May  6 10:12 index.nginx-debian.html",
    "May 06 10:12:33 web systemd[1]: Started nginx.service - A high performance web server.",
    "/dev/vda1        20G  3.1G   16G  17% /",
]
SECRET_LINES = [
    "export DB_PASSWORD=Hunter2Hunter2",
    "mysql -uroot -pS3cretPw -e 'select 1'",
    "curl -H 'Authorization: Bearer abcdef0123456789ABCDEF' https://api",
    "git clone https://deploy:t0ps3cret@git.example.com/r.git",
    "AWS_ACCESS_KEY_ID=AKIAIOSFODNN7EXAMPLE",
]
ADVERSARIAL = [
    "x.password", "password=", "password=a&", "x-password", "token:", "pass:", "password ", "--password ",
    "set password for ", "identified by ", "Authorization: ", "Bearer ", "-----BEGIN RSA PRIVATE KEY-----\n",
    "mysql -p'", '"mysql -p', "redis-cli -a ", "htpasswd -b ", "curl -u a:", "echo a | chpasswd ", "a://b:",
    "$1$a", "eyJ", "AKIA", "s.", "sk-", "Q~", "<password>", '\\"password\\": \\"', "'", "a&",
]  # fmt: skip


def sized(lines: list[str], size: int) -> str:
    """`lines` repeated (joined by newlines) and cut to `size` characters."""
    block = "\n".join(lines) + "\n"
    return (block * (size // len(block) + 1))[:size]


def mixed(size: int) -> str:
    lines = [SECRET_LINES[i // 20 % len(SECRET_LINES)] if i % 20 == 19 else CLEAN_LINES[i % 10] for i in range(400)]
    return sized(lines, size)


def best_seconds(text: str, repeat: int) -> float:
    best = float("inf")
    for _ in range(repeat):
        start = time.perf_counter()
        redact(text)
        best = min(best, time.perf_counter() - start)
    return best


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--repeat", type=int, default=5)
    args = parser.parse_args()
    figures: dict[str, str] = {}
    worst_name = ""
    for label, size in SIZES.items():
        mib = size / 2**20
        for name, text in (("clean", sized(CLEAN_LINES, size)), ("mixed", mixed(size))):
            seconds = best_seconds(text, args.repeat)
            figures[f"{name}{label}_mibs"] = f"{mib / seconds:.1f}"
            print(f"{name} {label}: {seconds * 1000:.2f} ms = {mib / seconds:.1f} MiB/s", flush=True)
        times = {unit: best_seconds(sized([unit], size), max(1, args.repeat // 2)) for unit in ADVERSARIAL}
        worst_name = max(times, key=lambda u: times[u])
        worst = times[worst_name]
        for unit, seconds in sorted(times.items(), key=lambda kv: -kv[1])[:5]:
            print(f"adversarial {label} {unit!r}: {seconds * 1000:.1f} ms = {mib / seconds:.2f} MiB/s", flush=True)
        figures[f"adversarial{label}_s"] = f"{worst:.3f}"
        figures[f"adversarial{label}_mibs"] = f"{mib / worst:.2f}"
    ok = float(figures["adversarial64k_s"]) < GOAL_S
    figures["worst"] = repr(worst_name).replace(" ", "\\x20")
    figures["goal_adversarial64k_s"] = f"{GOAL_S:.0f}"
    figures["ok"] = "yes" if ok else "no"
    print(" ".join(f"{k}={v}" for k, v in figures.items()))
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
