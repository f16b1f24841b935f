"""wget and curl: the files they write; curl -k."""

from __future__ import annotations

from testbed.analysis.command import effects_of
from testbed.analysis.command.effects import Fact


def writes(text: str) -> list[tuple[str, str, str]]:
    return [(w.value, w.mode, w.verb) for w in effects_of(text).steps[-1].writes]


def test_wget() -> None:
    assert writes("wget -O /tmp/get.sh https://x/get.sh") == [("/tmp/get.sh", "abs", "wget -O")]
    assert writes("wget -P /opt https://x/a.tgz") == [("/opt/a.tgz", "abs", "wget -P"), ("/opt", "tree", "wget -P")]
    # bug fix: a URL ending in / is saved as index.html (was: the host or directory name)
    assert writes("wget https://x/") == [("index.html", "suffix", "wget")]
    assert writes("wget https://x/docs/?a=1") == [("index.html", "suffix", "wget")]
    assert writes("wget https://x/a/b.tgz#frag") == [("b.tgz", "suffix", "wget")]
    assert writes("wget -q -o /tmp/log https://x/a") == [("/tmp/log", "abs", "wget -o"), ("a", "suffix", "wget")]


def test_curl() -> None:
    assert writes("curl -fsSL -o /usr/local/bin/t https://x/t") == [("/usr/local/bin/t", "abs", "curl -o")]
    assert writes("curl --output-dir /tmp -O https://x/a.tgz") == [("/tmp/a.tgz", "abs", "curl -O")]
    assert writes("curl -H 'X: y' https://x") == []
    assert writes("curl -O https://x/") == []  # bug fix: was a write of "x"


def test_curl_insecure_in_any_cluster() -> None:
    assert effects_of("curl -sSLk https://x").steps[0].bypasses == [Fact("curl-insecure", ("-k",))]
    assert effects_of("curl -H -k https://x").steps[0].bypasses == []  # -k is -H's value
