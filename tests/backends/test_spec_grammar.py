"""The judge spec grammar is strict (issue 43, items 7 and 9): through the command line, each bad spec is
exit 2 with one line, before any request, and a key pasted where a variable's name belongs is never echoed
nor written.

Before: ``openai:m@http://host/v1?structured=none`` judged with the option silently dropped (the query
became part of the URL), ``file://`` and ``gopher://`` servers passed the preflight (a dry run planned
them, a run failed every request and exited 3), and ``key_env=sk-...`` / ``--api-key-env sk-...`` quoted the
key in the error line and stored it in ``manifest.json``.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from polyjudge.backends.registry import BackendSettings, JudgeSpec
from polyjudge.data.errors import InputError
from polyjudge.data.secrets import MASK, redact
from tests.helpers.cli import cli
from tests.helpers.openai_server import Reply, ScriptedServer

KEY = "sk-proj-Q9w8E7r6T5y4U3i2O1pAsDfGhJkL0987"  # shaped like a provider key
PLAIN_KEY = "Zx81-plainsecret-value"  # no provider shape: only its place says it is a key


def _items(tmp_path: Path) -> Path:
    path = tmp_path / "in.jsonl"
    path.write_text(json.dumps({"src_lang": "en", "tgt_lang": "de", "src": "Hello", "tgt": "Hallo",
                                "system": "S", "seg_id": "1"}) + "\n")
    return path


def _judge(tmp_path: Path, capsys: pytest.CaptureFixture[str], *args: object) -> tuple[int, str]:
    code = cli("judge", _items(tmp_path), "-o", tmp_path / "run", "-q", "--no-cache", *args)
    captured = capsys.readouterr()
    return code, captured.out + captured.err


def _one_error_line(text: str) -> str:
    lines = [line for line in text.splitlines() if line.strip()]
    assert len(lines) == 1, text
    assert "Traceback" not in text
    return lines[0]


@pytest.mark.parametrize("url, said", [
    ("{base}?structured=none", "option 'structured' is written after the URL"),
    ("{base}?per_server=2&structured=none", "option 'per_server' is written after the URL"),
    ("{base}?api-version=2024-02-01", "has a query string"),
    ("{base}#frag", "has a fragment"),
    ("file:///etc/passwd", "is not an http:// or https:// URL (its scheme is 'file')"),
    ("gopher://127.0.0.1:70/v1", "is not an http:// or https:// URL (its scheme is 'gopher')"),
    ("127.0.0.1:8000/v1", "is not an http:// or https:// URL (it has no scheme)"),
    ("http:///v1", "names no host"),
    ("http://127.0.0.1:99999/v1", "is not a valid URL"),
])
def test_a_bad_server_in_a_judge_is_exit_2_with_one_line_before_any_request(url, said, tmp_path, capsys):
    with ScriptedServer(lambda body: Reply(content="80")) as srv:
        code, text = _judge(tmp_path, capsys, "--judge", f"openai:m@{url.format(base=srv.base_url)}")
        assert srv.requests == []
    assert code == 2, text
    assert said in _one_error_line(text)
    assert not (tmp_path / "run").exists()


def test_an_option_after_the_url_says_where_it_goes():
    with pytest.raises(ValueError, match=r"options go between the model and the '@': "
                                         r"openai:MODEL\?structured=VALUE@http://h/v1$"):
        JudgeSpec.parse("openai:m@http://h/v1?structured=none")
    # written where it belongs, the same option is taken
    assert JudgeSpec.parse("openai:m?structured=none@http://h/v1").option("structured") == "none"


@pytest.mark.parametrize("flags", [
    ("--backend", "openai", "-m", "m", "--base-url", "file:///tmp/x", "--dry-run"),
    ("--judge", "anthropic:m@gopher://h/v1", "--dry-run"),
])
def test_a_bad_server_is_refused_by_the_dry_run_too(flags, tmp_path, capsys):
    code, text = _judge(tmp_path, capsys, *flags)
    assert code == 2, text
    assert "is not an http:// or https:// URL" in _one_error_line(text)


def test_a_server_named_by_the_environment_is_checked_too(tmp_path, capsys, monkeypatch):
    monkeypatch.setenv("OPENAI_BASE_URL", "file:///etc/passwd")
    code, text = _judge(tmp_path, capsys, "--backend", "openai", "-m", "m", "--dry-run")
    assert code == 2, text
    assert "server 'file:///etc/passwd' of judge 'openai:m' is not an http:// or https:// URL" in \
        _one_error_line(text)


def _assert_nowhere(secret: str, root: Path, text: str) -> None:
    assert secret not in text and secret[:10] not in text, text
    for path in (p for p in root.rglob("*") if p.is_file()):
        assert secret.encode() not in path.read_bytes(), path


@pytest.mark.parametrize("secret", [KEY, PLAIN_KEY])
@pytest.mark.parametrize("how", [
    lambda url, key: ("--judge", f"openai:m?key_env={key}@{url}"),
    lambda url, key: ("--judge", f"openai:m?structured=none,key_env={key}@{url}"),
    lambda url, key: ("--judge", f"openai:m?bogus=1,key_env={key}@{url}"),  # another error quotes the judge
    lambda url, key: ("--judge", f"openai:m@{url}", "--api-key-env", key),
    lambda url, key: ("--backend", "openai", "-m", "m", "--base-url", url, "--api-key-env", key),
])
def test_a_key_given_for_its_variable_is_exit_2_and_never_echoed_or_written(how, secret, tmp_path, capsys):
    with ScriptedServer(lambda body: Reply(content="80")) as srv:
        code, text = _judge(tmp_path, capsys, *how(srv.base_url, secret))
        assert srv.requests == []
    assert code == 2, text
    line = _one_error_line(text)
    assert "not the key itself" in line or "unknown option 'bogus'" in line
    _assert_nowhere(secret, tmp_path, text)
    assert not (tmp_path / "run").exists()


def test_a_variable_name_is_still_taken(tmp_path, capsys, monkeypatch):
    monkeypatch.setenv("MY_JUDGE_KEY", "k" * 20)
    with ScriptedServer(lambda body: Reply(content="80")) as srv:
        code, text = _judge(tmp_path, capsys, "--judge", f"openai:m?key_env=MY_JUDGE_KEY@{srv.base_url}",
                            "-p", "da")
        assert srv.headers_seen[0]["Authorization"] == f"Bearer {'k' * 20}"
    assert code == 0, text
    manifest = json.loads((tmp_path / "run" / "manifest.json").read_text())
    assert manifest["judges"][0]["options"] == {"key_env": "MY_JUDGE_KEY"}


@pytest.mark.parametrize("value, ok", [
    ("OPENAI_API_KEY", True), ("MY_KEY", True), ("_x", True), ("ANTHROPIC_API_KEY", True),
    ("sk-abc", False), ("1ABC", False), ("", False), ("A" * 65, False), ("MY KEY", False),
    ("sk_live_abcdefghijklmnopqrstuvwxyz0123456789", False),  # a valid name by its letters, a key by its shape
    ("hf_abcdefghijklmnopqrstuv12345", False), ("AbCdEfGh1234567890XyZwq12", False),
])
def test_what_counts_as_a_variable_name(value, ok):
    from polyjudge.data.secrets import check_env_name, is_env_name

    assert is_env_name(value) is ok
    if not ok:
        with pytest.raises(ValueError) as exc:
            check_env_name(value, "option key_env")
        assert value == "" or value not in str(exc.value)


def test_settings_refuse_a_key_for_its_variable_without_quoting_it():
    with pytest.raises(InputError) as exc:
        BackendSettings(api_key_env=PLAIN_KEY)
    assert exc.value.field == "api_key_env" and PLAIN_KEY not in str(exc.value)


@pytest.mark.parametrize("text, shown", [
    (f"openai:m?key_env={PLAIN_KEY}@http://h/v1", f"openai:m?key_env={MASK}@http://h/v1"),
    (f'{{"api_key_env": "{PLAIN_KEY}"}}', f'{{"api_key_env": "{MASK}"}}'),
    (f"polyjudge judge --api-key-env {PLAIN_KEY} x", f"polyjudge judge --api-key-env {MASK} x"),
    ("openai:m?key_env=MY_KEY,structured=none", "openai:m?key_env=MY_KEY,structured=none"),
    ('{"api_key_env": "OPENAI_API_KEY"}', '{"api_key_env": "OPENAI_API_KEY"}'),
    ("name the variable with key_env or --api-key-env", "name the variable with key_env or --api-key-env"),
])
def test_redact_masks_a_key_written_where_a_variable_name_belongs(text, shown):
    assert redact(text) == shown


def test_a_spec_built_in_code_shows_no_pasted_key():
    spec = JudgeSpec("openai", "m", "http://h/v1", options=(("key_env", PLAIN_KEY),))
    assert spec.describe()["options"] == {"key_env": MASK}
