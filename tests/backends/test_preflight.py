"""Preflight (issue 33, item 2): each judge is checked before any request is sent or any model loaded.

A missing key for an official endpoint, a host that does not resolve, a missing model file and two judges
answering as one name exit 2 with one line, in a dry run too; the official clients' variables
(OPENAI_BASE_URL, ANTHROPIC_BASE_URL, OPENAI_ORG_ID, OPENAI_PROJECT_ID) are honoured, an @URL winning.
"""

from __future__ import annotations

import os
import subprocess
import sys
import time
from pathlib import Path

import pytest

from tests.helpers.anthropic_server import AnthropicServer
from tests.helpers.cli import cli
from tests.helpers.openai_server import ScriptedServer

SCORE = '{"score": 80}'
CLEAN = ("OPENAI_API_KEY", "ANTHROPIC_API_KEY", "OPENAI_BASE_URL", "ANTHROPIC_BASE_URL", "OPENAI_ORG_ID",
         "OPENAI_PROJECT_ID")


@pytest.fixture(autouse=True)
def _no_credentials(monkeypatch):
    for name in CLEAN:
        monkeypatch.delenv(name, raising=False)


@pytest.fixture
def inp(tmp_path: Path) -> Path:
    path = tmp_path / "in.tsv"
    path.write_text("src\ttgt\tsystem\tseg_id\nThe dog runs.\tDer Hund rennt.\tA\t1\n")
    return path


def polyjudge(*argv: object, env: dict[str, str] | None = None) -> tuple[int, str, float]:
    """``polyjudge ARGV`` in a child process: exit code, stderr and seconds taken."""
    child_env = {k: v for k, v in os.environ.items() if k not in CLEAN} | (env or {})
    start = time.monotonic()
    done = subprocess.run([sys.executable, "-m", "polyjudge.cli.main", *map(str, argv)], capture_output=True, text=True,
                          env=child_env, timeout=120)
    return done.returncode, done.stderr, time.monotonic() - start


def one_line(stderr: str) -> str:
    lines = [line for line in stderr.splitlines() if line.strip()]
    assert len(lines) == 1, stderr
    assert "Traceback" not in stderr
    return lines[0]


def test_official_openai_endpoint_without_its_key_is_refused_at_once_naming_the_variable(inp, tmp_path):
    for extra in ((), ("--dry-run",)):
        code, err, took = polyjudge("judge", inp, "--lp", "en-de", "-o", tmp_path / "r", "-q",
                                    "--judge", "openai:gpt-4o-mini", *extra)
        assert code == 2 and "OPENAI_API_KEY" in one_line(err)
        assert took < 10  # no retries (today: 6 attempts per request, 12.8 s, exit 3)


def test_official_anthropic_endpoint_without_its_key_names_anthropic_api_key(inp):
    assert cli("judge", inp, "--lp", "en-de", "--judge", "anthropic:claude-sonnet-4-5", "--dry-run") == 2


def test_the_missing_anthropic_key_is_named(inp, capsys):
    cli("judge", inp, "--lp", "en-de", "--judge", "anthropic:claude-sonnet-4-5", "--dry-run")
    assert "ANTHROPIC_API_KEY" in capsys.readouterr().err


def test_a_keyless_self_hosted_server_stays_keyless(inp, tmp_path):
    with ScriptedServer(lambda body: SCORE) as srv:
        assert cli("judge", inp, "--lp", "en-de", "-o", tmp_path / "r", "-q",
                   "--judge", f"openai:m@{srv.base_url}") == 0
        assert len(srv.requests) == 1 and "Authorization" not in srv.headers_seen[0]


def test_a_host_that_does_not_resolve_is_refused_in_a_dry_run_naming_it(inp):
    code, err, _ = polyjudge("judge", inp, "--lp", "en-de", "--judge", "openai:m@http://no-such-host.invalid/v1",
                             "--dry-run")
    assert code == 2 and "no-such-host.invalid" in one_line(err)


def test_a_missing_llamacpp_model_file_is_one_line_exit_2_in_a_dry_run(inp):
    code, err, _ = polyjudge("judge", inp, "--lp", "en-de", "--judge", "llamacpp:qwen", "--dry-run")
    assert code == 2 and "qwen" in one_line(err)  # today: ModelUnavailable traceback, exit 1


def test_one_model_on_two_servers_is_refused_saying_how_to_name_them(inp):
    code, err, _ = polyjudge("judge", inp, "--lp", "en-de", "--dry-run", "--judge", "openai:m@http://127.0.0.1:9/v1",
                             "--judge", "openai:m@http://127.0.0.1:10/v1")
    line = one_line(err)  # today: ValueError traceback, exit 1
    assert code == 2 and "distinct model names" in line and "openai:m@URL1,URL2" in line


def test_openai_base_url_is_honoured_and_an_explicit_url_wins(inp, tmp_path, monkeypatch):
    with ScriptedServer(lambda body: SCORE) as srv:
        monkeypatch.setenv("OPENAI_BASE_URL", srv.base_url)
        assert cli("judge", inp, "--lp", "en-de", "-o", tmp_path / "a", "-q", "--judge", "openai:m") == 0
        assert len(srv.requests) == 1  # today: sent to api.openai.com
        with ScriptedServer(lambda body: SCORE) as other:
            assert cli("judge", inp, "--lp", "en-de", "-o", tmp_path / "b", "-q", "--judge",
                       f"openai:m@{other.base_url}") == 0
            assert len(other.requests) == 1 and len(srv.requests) == 1


def test_the_dry_run_shows_the_endpoint_the_environment_names(inp, monkeypatch, capsys):
    monkeypatch.setenv("OPENAI_BASE_URL", "http://127.0.0.1:9/v1")
    monkeypatch.setenv("OPENAI_API_KEY", "sk-secret-value-123456")
    assert cli("judge", inp, "--lp", "en-de", "--judge", "openai:m", "--dry-run") == 0
    out = capsys.readouterr()
    assert "http://127.0.0.1:9/v1" in out.out and "sk-secret" not in out.out + out.err


def test_openai_organisation_and_project_are_sent_as_headers(inp, tmp_path, monkeypatch):
    monkeypatch.setenv("OPENAI_ORG_ID", "org-abc")
    monkeypatch.setenv("OPENAI_PROJECT_ID", "proj-xyz")
    with ScriptedServer(lambda body: SCORE) as srv:
        assert cli("judge", inp, "--lp", "en-de", "-o", tmp_path / "r", "-q",
                   "--judge", f"openai:m@{srv.base_url}") == 0
        seen = {k.lower(): v for k, v in srv.headers_seen[0].items()}
        assert seen["openai-organization"] == "org-abc" and seen["openai-project"] == "proj-xyz"


def test_anthropic_base_url_is_honoured(inp, tmp_path, monkeypatch):
    with AnthropicServer(lambda body: SCORE) as srv:
        monkeypatch.setenv("ANTHROPIC_BASE_URL", srv.base_url)
        assert cli("judge", inp, "--lp", "en-de", "-o", tmp_path / "r", "-q", "--judge", "anthropic:claude-x") == 0
        assert len(srv.requests) == 1


def test_a_name_that_does_not_resolve_is_not_retried_like_a_dropped_connection():
    import asyncio

    from polyjudge.backends import GenerateRequest, Message
    from polyjudge.backends.base import BackendError
    from polyjudge.backends.openai import OpenAIBackend
    from polyjudge.engine.runner import is_fatal

    async def send() -> BackendError:
        backend = OpenAIBackend("m", "http://no-such-host.invalid/v1")
        try:
            await backend.generate(GenerateRequest((Message("user", "hi"),)))
        except BackendError as exc:
            return exc
        finally:
            await backend.aclose()
        raise AssertionError("no error")

    exc = asyncio.run(send())
    # today: "connection error: ConnectError: ..." retryable, sent six times before the run gives up
    assert is_fatal(exc) and "no-such-host.invalid" in str(exc)


def test_a_run_whose_host_stops_resolving_is_unreachable_after_one_request(tmp_path):
    from polyjudge.backends.openai import OpenAIBackend
    from polyjudge.data.records import Item
    from polyjudge.engine import run
    from polyjudge.protocols import get_protocol

    items = [Item(src=f"s{i}", tgt="t", src_lang="en", tgt_lang="de", seg_id=str(i)) for i in range(20)]
    start = time.monotonic()
    result = run(items, get_protocol("da"), [OpenAIBackend("m", "http://no-such-host.invalid/v1")])
    # today: retried with backoff for 10.6 s before the streak rule gave up
    assert time.monotonic() - start < 3
    assert result.stop_kind == "unreachable" and "no-such-host.invalid" in (result.stop_reason or "")


def test_a_pool_server_that_stops_resolving_hands_its_requests_to_the_others():
    from polyjudge.backends import BackendSettings, JudgeSpec, build_judge
    from polyjudge.data.records import Item
    from polyjudge.engine import run
    from polyjudge.protocols import get_protocol

    items = [Item(src=f"s{i}", tgt="t", src_lang="en", tgt_lang="de", seg_id=str(i)) for i in range(6)]
    with ScriptedServer(lambda body: SCORE) as srv:
        pool = build_judge(JudgeSpec("openai", "m", f"http://no-such-host.invalid/v1,{srv.base_url}"),
                           BackendSettings())
        result = run(items, get_protocol("da"), [pool])
    assert result.stop_kind is None and result.answered_count() == 6


def closed_port() -> int:
    """A port on 127.0.0.1 that nothing listens on (bound, then let go)."""
    import socket

    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def test_a_run_whose_self_hosted_port_takes_no_connection_is_refused_before_anything_is_written(inp, tmp_path):
    port = closed_port()
    out = tmp_path / "r"
    code, err, took = polyjudge("judge", inp, "--lp", "en-de", "-o", out, "-q",
                                "--judge", f"openai:m@http://127.0.0.1:{port}/v1")
    line = one_line(err)
    # before: the run directory was created, then the engine gave up on the refused connection (exit 3)
    assert code == 2 and f"unreachable: 127.0.0.1:{port}" in line and "start the server" in line
    assert not out.exists()
    assert took < 30  # one refused connection, no retries (a generous bound for a busy machine)


def test_a_dry_run_plans_but_marks_the_server_that_is_not_up(inp, tmp_path):
    """One plans before starting the server: the plan is printed (exit 0) with its endpoint marked (a host
    that does not resolve, a spec error, stops the dry run: exit 2); the run itself is refused."""
    port = closed_port()
    done = subprocess.run([sys.executable, "-m", "polyjudge.cli.main", "judge", str(inp), "--lp", "en-de",
                           "--judge", f"openai:m@http://127.0.0.1:{port}/v1", "--dry-run"],
                          capture_output=True, text=True, timeout=120, env={k: v for k, v in os.environ.items()
                                                                             if k not in CLEAN})
    assert done.returncode == 0, done.stderr
    # before: the same plan, with nothing said of the server
    warned = [x for x in done.stdout.splitlines() if x.startswith(f"warning: unreachable: 127.0.0.1:{port}")]
    assert len(warned) == 1 and "start the server before the run" in warned[0]
    assert "Traceback" not in done.stderr


def test_a_pool_is_refused_only_when_none_of_its_servers_is_up_and_anthropic_urls_are_checked(inp, tmp_path,
                                                                                                capsys):
    port, other = closed_port(), closed_port()
    code, err, _ = polyjudge("judge", inp, "--lp", "en-de", "-o", tmp_path / "a", "-q",
                             "--judge", f"openai:m@http://127.0.0.1:{port}/v1,http://127.0.0.1:{other}/v1")
    assert code == 2 and f"unreachable: 127.0.0.1:{port}" in one_line(err) and not (tmp_path / "a").exists()
    with ScriptedServer(lambda body: SCORE) as srv:  # one server up: the pool sends to it, as it does mid-run
        code, err, _ = polyjudge("judge", inp, "--lp", "en-de", "-o", tmp_path / "b", "-q",
                                 "--judge", f"openai:m@http://127.0.0.1:{port}/v1,{srv.base_url}")
        assert code == 0, err
        assert len(srv.requests) == 1
        capsys.readouterr()
        assert cli("judge", inp, "--lp", "en-de", "--dry-run",  # the plan names the one that is down
                   "--judge", f"openai:m@http://127.0.0.1:{port}/v1,{srv.base_url}") == 0
        warned = [x for x in capsys.readouterr().out.splitlines() if x.startswith("warning: unreachable:")]
        assert len(warned) == 1 and f"127.0.0.1:{port}" in warned[0]  # nothing said of the one that is up
    code, err, _ = polyjudge("judge", inp, "--lp", "en-de", "-o", tmp_path / "c", "-q",
                             "--judge", f"anthropic:claude-x@http://127.0.0.1:{port}")
    assert code == 2 and f"unreachable: 127.0.0.1:{port}" in one_line(err)


def test_a_listening_server_passes_and_is_sent_nothing_by_a_dry_run(inp, capsys):
    with ScriptedServer(lambda body: SCORE) as srv:
        assert cli("judge", inp, "--lp", "en-de", "--judge", f"openai:m@{srv.base_url}", "--dry-run") == 0
        assert srv.requests == []
    out = capsys.readouterr()
    assert "unreachable" not in out.out + out.err


def test_the_api_raises_input_error_naming_the_port_and_its_estimate_marks_it(inp, tmp_path):
    from polyjudge.api import InputError, JudgeConfig, estimate, judge

    port = closed_port()
    config = JudgeConfig(judges=(f"openai:m@http://127.0.0.1:{port}/v1",), src_lang="en", tgt_lang="de")
    with pytest.raises(InputError, match=f"unreachable: 127.0.0.1:{port}"):
        judge(str(inp), config, out=tmp_path / "r")
    assert not (tmp_path / "r").exists()
    planned = estimate(str(inp), config)
    assert len(planned.unreachable) == 1 and f"unreachable: 127.0.0.1:{port}" in planned.unreachable[0]
    assert planned.to_dict()["unreachable"] == list(planned.unreachable)


def test_the_port_check_leaves_the_official_host_and_proxied_urls_to_the_run(monkeypatch):
    from polyjudge.backends.registry import check_port_open

    port = closed_port()
    check_port_open(f"http://api.example.test:{port}/v1", official_host="api.example.test")  # no connection tried
    monkeypatch.setenv("HTTP_PROXY", "http://127.0.0.1:1")
    monkeypatch.delenv("NO_PROXY", raising=False)
    monkeypatch.delenv("no_proxy", raising=False)
    check_port_open(f"http://10.0.0.1:{port}/v1", official_host="api.openai.com")  # the proxy connects, not us
