"""Secret redaction: the corpus of secret forms and look-alikes, shell words, idempotence."""

from __future__ import annotations

import random
import tomllib
from pathlib import Path
from typing import Any

import pytest

from testbed.analysis.redact import redact, redact_json, work

CORPUS = tomllib.loads((Path(__file__).parents[1] / "fixtures" / "redaction_corpus.toml").read_text())
SECRETS: list[dict[str, Any]] = CORPUS["secret"]
PLAIN: list[str] = [entry["text"] for entry in CORPUS["plain"]]


def test_corpus_is_big_enough() -> None:
    assert len(SECRETS) >= 70 and len(PLAIN) >= 30
    assert len({entry["form"] for entry in SECRETS}) == len(SECRETS)


@pytest.mark.parametrize("entry", SECRETS, ids=[entry["form"] for entry in SECRETS])
def test_corpus_secret_is_masked(entry: dict[str, Any]) -> None:
    result = redact(entry["text"])
    for secret in entry["secrets"]:
        assert secret in entry["text"]  # the fixture names what is in the text
        assert secret not in result.text, result.text
    assert f"[REDACTED:{entry['kind']}]" in result.text, result.text
    assert entry["kind"] in result.kinds and result.count >= 1
    again = redact(result.text)
    assert again.text == result.text and again.count == 0


@pytest.mark.parametrize("text", PLAIN)
def test_corpus_look_alike_is_unchanged(text: str) -> None:
    result = redact(text)
    assert (result.text, result.count, result.kinds) == (text, 0, ())


PEM = (
    "-----BEGIN OPENSSH PRIVATE KEY-----\n"
    "b3BlbnNzaC1rZXktdjEAAAAABG5vbmUAAAAEbm9uZQAAAAAAAAABAAAAMwAAAAtzc2gtZW\n"
    "QyNTUxOQAAACDx2yJ0aW1lIjoxNjk5OTk5OTk5fQ==\n"
    "-----END OPENSSH PRIVATE KEY-----\n"
)
SHADOW = (
    "root:$6$Zq3xY2cS$0a1b2c3d4e5f6g7h8i9j0k1l2m3n4o5p6q7r8s9t0u1v2w3x4y5z6A7B8C9D0"
    "E1F2G3H4I5J6K7L8M9N0.:19700:0:99999:7:::"
)
JWT = "eyJhbGciOiJIUzI1NiIsInR5cCI6IkpXVCJ9.eyJzdWIiOiIxMjM0NTY3ODkwIn0.SflKxwRJSMeKKF2QT4fwpMeJf36POk6yJV_adQssw5c"

POSITIVES = [
    (PEM, "private_key", "b3BlbnNzaC1rZXkt"),
    (
        "-----BEGIN RSA PRIVATE KEY-----\nMIIEpAIBAAKCAQEAu1SU1LfVLPHCozMxH2Mo\n4lgOEePzNm0tRgeLezV6",
        "private_key",
        "MIIEpAIBAAKCAQEA",
    ),
    ("password=hunter2 user=bob", "password", "hunter2"),
    ("PASSWORD: s3cr3t!", "password", "s3cr3t!"),
    ("MYSQL_ROOT_PASSWORD='correct horse'", "password", "correct horse"),
    ('{"db_password": "abc123", "user": "app"}', "password", "abc123"),
    ("passwd=Sup3rS3cret", "password", "Sup3rS3cret"),
    ("mysqladmin --password=Xyz789 status", "password", "Xyz789"),
    ("app --db-password Xyz789 --port 5432", "password", "Xyz789"),
    ("mysql -u root -pS3cret -e 'show databases'", "password", "S3cret"),
    ("mysql -uroot -p'Sp ace' db", "password", "Sp ace"),
    ("CREATE USER 'app'@'%' IDENTIFIED BY 'Pa55word!';", "password", "Pa55word!"),
    ("ALTER ROLE app WITH PASSWORD 'pgpass1';", "password", "pgpass1"),
    ("curl -H 'Authorization: Bearer abcdef1234567890abcdef' https://api", "bearer_token", "abcdef1234567890abcdef"),
    ("Authorization: Basic dXNlcjpwYXNzd29yZA==", "bearer_token", "dXNlcjpwYXNzd29yZA=="),
    ("AWS_ACCESS_KEY_ID=AKIAIOSFODNN7EXAMPLE", "aws_access_key", "AKIAIOSFODNN7EXAMPLE"),
    ("aws_secret_access_key = wJalrXUtnFEMI/K7MDENG/bPxRfiCYEXAMPLEKEY", "aws_secret_key", "wJalrXUtnFEMI"),
    ("git remote add o https://x:ghp_abcdefghijklmnopqrstuvwxyz0123456789@github.com/a/b", "github_token", "ghp_abc"),
    ("token glpat-abcdefghij0123456789", "gitlab_token", "glpat-"),
    ("SLACK=xoxb-123456789012-abcdefABCDEF", "slack_token", "xoxb-"),
    ("OPENAI_API_KEY=sk-proj-abc123def456ghi789jkl", "api_key", "sk-proj"),
    ("using sk-ant-api03-abcDEF123456ghiJKL789 now", "api_key", "sk-ant"),
    ("git clone https://deploy:t0ps3cret@git.example.com/r.git", "url_credentials", "t0ps3cret"),
    ("postgresql://app:pgPass9@db:5432/app", "url_credentials", "pgPass9"),
    (SHADOW, "password_hash", "$6$Zq3xY2cS"),
    ("bob:$y$j9T$abcdefghijklmnop$ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopq:19700::::::", "password_hash", "$y$j9T"),
    ("$2b$12$KIXQJhC9s0Oq7lN1pB6pRe1Ew1cYH7sCq3gqV9bqVqWnX0ZfYk9bG", "password_hash", "KIXQ"),
    (f"token: {JWT}", "jwt", "SflKxwRJ"),
    ("sshpass -p 'pw123!' ssh root@h", "password", "pw123!"),
    ("curl -u admin:s3cret http://h/api", "password", "s3cret"),
    ("echo 'alice:Secr3t' | chpasswd", "password", "Secr3t"),
    ("echo hunter2 | passwd --stdin bob", "password", "hunter2"),
]


@pytest.mark.parametrize(("text", "kind", "secret"), POSITIVES)
def test_secret_is_redacted(text: str, kind: str, secret: str) -> None:
    result = redact(text)
    assert secret not in result.text
    assert f"[REDACTED:{kind}]" in result.text
    assert kind in result.kinds
    assert result.count >= 1


def test_context_is_kept() -> None:
    assert redact("password=hunter2 user=bob").text == "password=[REDACTED:password] user=bob"
    assert redact(SHADOW).text == "root:[REDACTED:password_hash]:19700:0:99999:7:::"
    assert redact("https://u:p4ss@h/x").text == "https://u:[REDACTED:url_credentials]@h/x"
    assert redact(PEM + "after\n").text == "[REDACTED:private_key]\nafter\n"


TRAPS = [
    "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855  /tmp/file.iso",
    "d41d8cd98f00b204e9800998ecf8427e",
    "550e8400-e29b-41d4-a716-446655440000",
    "password required pam_unix.so sha512 shadow try_first_pass",
    "password   [success=1 default=ignore]  pam_unix.so obscure sha512",
    "PasswordAuthentication no",
    "#PermitEmptyPasswords no",
    "Password: ",
    "[sudo] password for deploy: ",
    "Enter passphrase for key '/root/.ssh/id_ed25519':",
    "password=$DB_PASS",
    "password: ${POSTGRES_PASSWORD}",
    "password_required: false",
    "passwd:         files systemd",
    "max_tokens=100",
    "ssh-ed25519 AAAAC3NzaC1lZDI1NTE5AAAAIGx0cEPa9nFXYp1vWk7 root@host",
    "-----BEGIN CERTIFICATE-----\nMIIBszCCAVmgAwIBAgIU\n-----END CERTIFICATE-----",
    "-----BEGIN PUBLIC KEY-----\nMFkwEwYHKoZIzj0CAQYIKoZIzj0DAQcDQgAE\n-----END PUBLIC KEY-----",
    "http://example.com:8080/path?q=1",
    "docker login --password-stdin -u ci registry.example.com",
    "mysql --password-file /etc/mysql/pw --user root",
    "mysql -u root -p app_db",
    "disk-by-uuid-0b3a",
    "sk-learn-is-a-package",
    "Oct 12 10:00:01 host sshd[123]: Failed password for root from 10.0.0.9 port 22 ssh2",
    "Linux host 6.1.0-18-amd64 #1 SMP PREEMPT_DYNAMIC Debian 6.1.76-1 x86_64 GNU/Linux",
]


@pytest.mark.parametrize("text", TRAPS)
def test_ordinary_output_is_untouched(text: str) -> None:
    result = redact(text)
    assert result.text == text
    assert result.count == 0
    assert result.kinds == ()


@pytest.mark.parametrize("text", [t for t, _, _ in POSITIVES] + TRAPS)
def test_idempotent(text: str) -> None:
    once = redact(text)
    twice = redact(once.text)
    assert twice.text == once.text
    assert twice.count == 0


def test_counts_and_kinds_over_a_whole_output() -> None:
    text = "\n".join(["ok", "password=a1b2c3", "AKIAIOSFODNN7EXAMPLE", "token=zz9zz9zz9", "done"])
    result = redact(text)
    assert result.count == 3
    assert result.kinds == ("aws_access_key", "password")
    assert result.text.splitlines()[0] == "ok" and result.text.splitlines()[-1] == "done"


def test_empty_text() -> None:
    assert redact("").count == 0


# Shell words and quoted strings: the whole secret is masked, up to the end of its word or
# quoted string, and no further (the next field, command or closing quote stays).
SHELL_WORDS = [
    ("mysql -pS3cr&t99", "mysql -p[REDACTED:password]"),
    ("mysql -u root -pS3cr&t99 -e 'select 1'", "mysql -u root -p[REDACTED:password] -e 'select 1'"),
    ("mysql -pab;cd|ef db", "mysql -p[REDACTED:password] db"),
    ("mysql -pabc&&ls", "mysql -p[REDACTED:password]&&ls"),
    ("mysql -pabc; ls", "mysql -p[REDACTED:password]; ls"),
    ("mysql -p'a b'c db", "mysql -p[REDACTED:password] db"),
    ("sh -c 'mysql -pab&cd -e x'", "sh -c 'mysql -p[REDACTED:password] -e x'"),
    ("PASSWORD='ab&cd'", "PASSWORD='[REDACTED:password]'"),
    ('PASSWORD="a;b|c&d"', 'PASSWORD="[REDACTED:password]"'),
    ("PASSWORD=ab&cd", "PASSWORD=[REDACTED:password]"),
    ("export DB_PASSWORD=ab;cd|ef", "export DB_PASSWORD=[REDACTED:password]"),
    ("export PASSWORD=ab&cd && echo ok", "export PASSWORD=[REDACTED:password] && echo ok"),
    ("password=abc&& ls", "password=[REDACTED:password]&& ls"),
    ("password=abc; ls", "password=[REDACTED:password]; ls"),
    ("password=abc|", "password=[REDACTED:password]|"),
    ("password=abc &", "password=[REDACTED:password] &"),
    ("echo 'PASSWORD=ab&cd' | tee /etc/app.env", "echo 'PASSWORD=[REDACTED:password]' | tee /etc/app.env"),
    ("https://h/x?user=bob&password=Hunter2&next=1", "https://h/x?user=bob&password=[REDACTED:password]&next=1"),
    ("Server=db;Password=Pa;ss;Database=app", "Server=db;Password=[REDACTED:password];Database=app"),
    ("password=a&b&token=c1d2", "password=[REDACTED:password]&token=[REDACTED:password]"),
    ("PASSWORD=abc;echo u:pw9 | chpasswd", "PASSWORD=[REDACTED:password];echo u:[REDACTED:password] | chpasswd"),
    ("mysqladmin --password=Xy&z9 status", "mysqladmin --password=[REDACTED:password] status"),
    ("app --db-password Xy|z9 --port 5432", "app --db-password [REDACTED:password] --port 5432"),
    ("sshpass -p pa&ss ssh root@h", "sshpass -p [REDACTED:password] ssh root@h"),
    ("curl -u user:pa&ss", "curl -u user:[REDACTED:password]"),
    ("curl -u user:pa&ss http://h/api", "curl -u user:[REDACTED:password] http://h/api"),
    ("curl -u user:pass&&echo ok", "curl -u user:[REDACTED:password]&&echo ok"),
    ('curl -u "admin:pa ss&x" http://h', 'curl -u "admin:[REDACTED:password]" http://h'),
    ("curl -u 'admin:pa\"ss' http://h", "curl -u 'admin:[REDACTED:password]' http://h"),
    ("echo alice:pa&ss | chpasswd", "echo alice:[REDACTED:password] | chpasswd"),
    ("echo 'alice:correct horse' | chpasswd", "echo 'alice:[REDACTED:password]' | chpasswd"),
    ('echo "pa ss;x" | passwd --stdin bob', 'echo "[REDACTED:password]" | passwd --stdin bob'),
    ("CREATE USER 'a'@'%' IDENTIFIED BY 'pa\"s&s';", "CREATE USER 'a'@'%' IDENTIFIED BY '[REDACTED:password]';"),
]


@pytest.mark.parametrize(("text", "expected"), SHELL_WORDS)
def test_shell_words_and_quotes_are_masked_whole(text: str, expected: str) -> None:
    result = redact(text)
    assert result.text == expected
    assert redact(result.text).text == expected and redact(result.text).count == 0


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("pa\u017f\u017fword=abc123", "pa\u017f\u017fword=[REDACTED:password]"),  # re: long s == s
        ("İDENTIFIED BY 'pw1'", "İDENTIFIED BY '[REDACTED:password]'"),
        ("\u212aEY... api_\u212aey=abc123", "\u212aEY... api_\u212aey=[REDACTED:password]"),
        ("[REDACTED:password] token=abc123", "[REDACTED:password] token=[REDACTED:password]"),
        (
            "● nginx.service\n  Active: active\n  password=hunter22\n",
            "● nginx.service\n  Active: active\n  password=[REDACTED:password]\n",
        ),
    ],
)
def test_unicode_case_and_markers(text: str, expected: str) -> None:
    assert redact(text).text == expected


# --- linear time ---------------------------------------------------------------------------------
# `work(text)` counts the characters the rules examine (see `Scan.ops`); every primitive costs
# time in proportion to what it adds, so a rule that rescans its input shows here as work
# growing faster than the text. No wall clock: benchmarks/redact.py measures the time.

ADVERSARIAL_UNITS = [
    "x.password", "password=", "password=a&", "password='x", 'password="', "x-password", "token:", "pass:",
    "password ", "--password ", "set password for ", "identified by ", "Authorization: ", "Bearer ",
    "-----BEGIN RSA PRIVATE KEY-----\n", "-----BEGIN RSA PRIVATE KEY-----", "Private-Lines: 9999\n",
    "mysql ", "mysql -p'", '"mysql -p', "sh -c 'mysql ", "redis-cli -a ", "htpasswd -b ", "curl -u a:",
    "echo a | chpasswd ", "sudo -S ", "<<< ", "a://b:", "a://b:c@", "$1$a", "$6$", "{SSHA}", "*", "eyJ",
    "eyJabcdefgh.", "AKIA", "s.", "ghp_", "sk-", "glpat-", "Q~", "machine ", "<password>", '\\"password\\": \\"',
    "'", '"', "\\\n", "&&", "a&", "|", "a",
]  # fmt: skip


def _sized(unit: str, size: int) -> str:
    return (unit * (size // len(unit) + 1))[:size]


@pytest.mark.parametrize("unit", ADVERSARIAL_UNITS)
def test_work_grows_linearly_on_adversarial_text(unit: str) -> None:
    small, large = work(_sized(unit, 2048)), work(_sized(unit, 16384))
    assert large <= 8 * small * 1.2 + 2048, (small, large)
    assert large <= 64 * 16384, large


def test_work_grows_linearly_on_mixed_text() -> None:
    """Random mixtures of every rule's key words, quotes and operators."""
    pieces = [*ADVERSARIAL_UNITS, " ", "\n", "=", ":", ";", "-p", "pass:", "@", "/", "x" * 20, "Ab1" * 8]
    rng = random.Random(13)
    for _ in range(40):
        chosen = rng.sample(pieces, 6)
        text = "".join(rng.choice(chosen) for _ in range(300))
        small, large = work(text), work(text * 8)
        assert large <= 8 * small * 1.2 + 2048, (chosen, small, large)


# --- JSON values ---------------------------------------------------------------------------------


def test_redact_json_masks_secret_keys_and_strings() -> None:
    kinds: set[str] = set()
    value = {
        "password": "x1y2z3",
        "private_key_id": "1a2b3c4d5e6f",
        "nested": [{"api_key": "abc123", "tokens": 5, "token_type": "bearer"}, "mysql -pS3cret db"],
        "credentials": "/root/.smbcred",
        "empty": "",
        "auth": "short",
    }
    out = redact_json(value, kinds)
    assert out == {
        "password": "[REDACTED:password]",
        "private_key_id": "[REDACTED:gcp_key]",
        "nested": [
            {"api_key": "[REDACTED:password]", "tokens": 5, "token_type": "bearer"},
            "mysql -p[REDACTED:password] db",
        ],
        "credentials": "/root/.smbcred",
        "empty": "",
        "auth": "short",
    }
    assert kinds == {"password", "gcp_key"}
    again: set[str] = set()
    assert redact_json(out, again) == out and not again


def test_random_text_never_raises_and_keeps_markers_whole() -> None:
    """Every rule's key words glued to quotes, operators, markers, NULs, lone surrogates and
    non-ASCII letters: `redact` never raises, never redacts inside a marker, and a second
    pass only masks more (real text, as in the corpus, needs no second pass)."""
    pieces = [
        *ADVERSARIAL_UNITS, *(entry["text"] for entry in SECRETS[::7]), " ", "\n", "\t", "=", ":", "\x00",
        "\udcff", "é", "İ", "\u017f", "😀", "[REDACTED:password]", "[REDACTED:", "Ab1x9Kq2",
        "-----END RSA PRIVATE KEY-----",
    ]  # fmt: skip
    rng = random.Random(29)
    for _ in range(300):
        text = "".join(rng.choice(pieces) for _ in range(rng.randint(1, 40)))
        once = redact(text)
        twice = redact(once.text)
        assert "[REDACTED:[REDACTED:" not in twice.text, text
        assert twice.text.count("[REDACTED:") == once.text.count("[REDACTED:") + twice.count, text
