"""tar and unzip: what they create and the trees they extract into."""

from __future__ import annotations

from testbed.analysis.command import effects_of


def writes(text: str) -> list[tuple[str, str, str]]:
    return [(w.value, w.mode, w.verb) for w in effects_of(text).steps[-1].writes]


def test_tar() -> None:
    assert writes("tar xzf app.tgz -C /opt") == [("/opt", "tree", "tar -x")]
    assert writes("tar -x -f app.tgz --directory=/srv") == [("/srv", "tree", "tar -x")]
    assert writes("tar czf /backup/etc.tgz /etc") == [("/backup/etc.tgz", "abs", "tar -c")]
    assert writes("cd /opt && tar xf /tmp/a.tar") == [("/opt", "tree", "tar -x")]
    assert writes("tar tf a.tar") == []


def test_unzip() -> None:
    assert writes("unzip -o site.zip -d /var/www") == [("/var/www", "tree", "unzip -d")]
    assert writes("cd /srv && unzip a.zip") == [("/srv", "tree", "unzip")]
    assert writes("unzip a.zip") == []
