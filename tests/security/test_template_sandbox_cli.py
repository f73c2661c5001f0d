"""Sandbox escapes through ``polyjudge judge --prompt-template`` exit 2, naming the file, leaking nothing."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from tests.helpers.cli import cli
from tests.helpers.openai_server import ScriptedServer

KEY = "sk-sandbox-test-9f8e7d6c5b4a39281706fedcba"
ESCAPES = [
    "{{ cycler.__init__.__globals__.os.popen('id').read() }}",
    "{{ lipsum.__globals__['os'].environ.get('OPENAI_API_KEY') }}",
    "{{ ''.__class__.__mro__[1].__subclasses__() }}",
    "{{ self.__init__.__globals__ }}",
    "{{ src.__class__.__init__.__globals__ }}",
    "{{ tgt | attr('__class__') }}",
]


def files_under(root: Path) -> list[Path]:
    return [p for p in root.rglob("*") if p.is_file()] if root.exists() else []


@pytest.mark.parametrize("escape", ESCAPES)
def test_escape_exits_2_and_leaks_nothing(escape, tmp_path, capsys, monkeypatch):
    monkeypatch.setenv("OPENAI_API_KEY", KEY)
    items = tmp_path / "in.jsonl"
    items.write_text(json.dumps({"src_lang": "en", "tgt_lang": "de",
                                 "src": "Hallo", "tgt": "Hello", "system": "S", "seg_id": "1"}) + "\n")
    template = tmp_path / "evil.jinja"
    template.write_text(f"<|user|>\nRate {{{{ tgt }}}}.\n{escape}\n")
    out = tmp_path / "run"
    with ScriptedServer(lambda body: json.dumps({"score": 50})) as srv:
        code = cli("judge", items, "--out", out, "--backend", "openai", "-m", "m", "--base-url", srv.base_url,
                   "--prompt-template", template, "-q")
        sent = json.dumps(srv.requests)
    captured = capsys.readouterr()
    assert code == 2
    assert str(template) in captured.err and "Traceback" not in captured.err
    assert len(captured.err.strip().splitlines()) == 1
    assert KEY not in captured.out + captured.err + sent
    assert "uid=" not in captured.out + captured.err + sent  # `id` never ran into the prompt
    for path in files_under(out):
        assert KEY.encode() not in path.read_bytes(), path


def test_dry_run_refuses_the_template_too(tmp_path, capsys, monkeypatch):
    monkeypatch.setenv("OPENAI_API_KEY", KEY)
    items = tmp_path / "in.jsonl"
    items.write_text(json.dumps({"src_lang": "en", "tgt_lang": "de", "src": "Hallo", "tgt": "Hello"}) + "\n")
    template = tmp_path / "evil.jinja"
    template.write_text("<|user|>\n{{ lipsum.__globals__['os'].environ['OPENAI_API_KEY'] }}\n")
    code = cli("judge", items, "--dry-run", "--backend", "openai", "-m", "m", "--prompt-template", template)
    captured = capsys.readouterr()
    assert code == 2 and str(template) in captured.err
    assert KEY not in captured.out + captured.err
