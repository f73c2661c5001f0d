"""The HTML report masks secrets in everything it shows, as a last line of defence, and keeps its script exact."""

from __future__ import annotations

import base64
import hashlib
import json
import re

from tests.helpers.cli import cli
from tests.helpers.openai_server import ScriptedServer

KEY = "sk-proj-RePoRt0123456789abcdefGHIJKLmnop"


def test_report_masks_secrets_found_in_run_data(tmp_path, capsys, monkeypatch):
    monkeypatch.setenv("OPENAI_API_KEY", KEY)
    items = tmp_path / "in.jsonl"
    rows = [{"src": f"Quelle {i} {KEY}", "tgt": f"target http://u:secretpass@h/{i}", "system": f"S{i % 2}",
             "seg_id": str(i), "src_lang": "de", "tgt_lang": "en"} for i in range(4)]
    items.write_text("".join(json.dumps(r) + "\n" for r in rows))
    answer = json.dumps({"errors": [{"span": "target", "severity": "minor", "category": "fluency/grammar"}]})
    with ScriptedServer(lambda b: answer) as srv:
        cli("judge", items, "--out", tmp_path / "run", "--backend", "openai", "-m", "m", "--base-url", srv.base_url,
            "-p", "gemba-spans", "-q")
    out = tmp_path / "report.html"
    assert cli("report", tmp_path / "run", "-o", out, "--plots-dir", tmp_path / "plots") == 0
    capsys.readouterr()
    html = out.read_text()
    assert KEY not in html and KEY[:16] not in html and "secretpass" not in html
    assert "[REDACTED]" in html and "Quelle 0" in html
    for svg in (tmp_path / "plots").glob("*.svg"):
        assert KEY not in svg.read_text()
    # the page's own script is untouched: its hash still matches the Content-Security-Policy
    script = re.search(r"<script>(.*?)</script>", html, re.S)
    csp = re.search(r"script-src &#39;sha256-([^&]+)&#39;", html)
    assert script and csp
    assert base64.b64encode(hashlib.sha256(script.group(1).encode()).digest()).decode() == csp.group(1)
