"""The run identity (the resume check) and the signature, pinned for a few runs as the code wrote them
before both were derived from the settings' declarations (``Setting.identity``, issue 44 item 1): a run
directory written before must resume now, and its signature must read the same."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from polyjudge import __version__
from polyjudge.cli.main import main
from polyjudge.engine.store import Store
from tests.helpers.openai_server import ScriptedServer

ITEM = '{"src": "Hallo.", "tgt": "Hello.", "src_lang": "de", "tgt_lang": "en"}\n'

CASES = [
    ([], {"protocol": "da", "judges": ["m"], "template_hash": "ca474f33cf", "protocol_options": {},
          "temperature": 0.0, "seed": 0, "use_context": True},
     "da|judge:m|prompt:ca474f33cf|runs:1|agg:mean|T:0"),
    (["-T", "0.7", "--seed", "3", "--no-context", "--reasoning-effort", "low", "--runs", "2"],
     {"protocol": "da", "judges": ["m"], "template_hash": "ca474f33cf", "protocol_options": {},
      "temperature": 0.7, "seed": 3, "use_context": False, "reasoning_effort": "low"},
     "da|judge:m|prompt:ca474f33cf|runs:2|agg:mean|T:0.7|effort:low"),
    (["-p", "mqm", "--protocol-option", "max_errors_per_severity=5", "--max-failure-rate", "1", "--runs", "1"],
     {"protocol": "mqm", "judges": ["m"], "template_hash": "469add65c2",
      "protocol_options": {"max_errors_per_severity": 5}, "temperature": 0.4, "seed": 0, "use_context": True},
     "mqm|judge:m|prompt:469add65c2|runs:1|agg:rrwa|T:0.4|weights:25/5/1/p0.1/nt25/n0|context:doc|schema_cap:5"),
]


def _judge(tmp_path: Path, flags: list[str]) -> tuple[dict, str]:
    items = tmp_path / "items.jsonl"
    items.write_text(ITEM)
    run = tmp_path / "run"
    with ScriptedServer(lambda body: "80") as srv:
        with pytest.raises(SystemExit) as done:
            main(["judge", str(items), "--judge", f"openai:m@{srv.base_url}", "-o", str(run), "-q", *flags])
    assert done.value.code in (0, None)
    store = Store(run / "store.sqlite", readonly=True)
    try:
        identity = json.loads(store.get_meta("run_identity") or "{}")
    finally:
        store.close()
    identity.pop("request_forms", None)
    return identity, json.loads((run / "manifest.json").read_text())["signature"]


@pytest.mark.parametrize(("flags", "identity", "signature"), CASES)
def test_identity_and_signature_are_those_written_before(tmp_path, monkeypatch, flags, identity, signature):
    monkeypatch.setenv("OPENAI_API_KEY", "k")
    found, signed = _judge(tmp_path, flags)
    assert found == identity
    assert signed == f"{signature}|version:{__version__}"
