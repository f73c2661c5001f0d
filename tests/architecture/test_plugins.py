"""A third-party package adds a protocol, a backend and an aggregator through entry points.

The test builds a real (tiny) installed distribution: a module plus a
``*.dist-info`` folder with ``METADATA`` and ``entry_points.txt`` on a
``PYTHONPATH`` entry, which is what ``pip install`` leaves behind. Then the
real ``polyjudge`` command must list the plugins in ``--help`` and judge with them.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import textwrap
from pathlib import Path

PLUGIN = '''
"""A polyjudge plugin made by a test."""
from dataclasses import dataclass
from polyjudge.backends.base import GenerateRequest, GenerateResult, Message, Usage
from polyjudge.backends.registry import RegisteredBackend
from polyjudge.protocols.base import JudgeProtocol, ParseFailure


@dataclass(frozen=True)
class LengthOptions:
    scale: float = 1.0


class LengthRatio(JudgeProtocol):
    """Length ratio times the judge's number (a plugin protocol)."""

    name = "length-ratio"
    options_type = LengthOptions

    def messages(self, item, context):
        return [Message("user", f"Rate: {item.tgt}")]

    def parse(self, text, item):
        try:
            return {"n": float(text)}
        except ValueError:
            raise ParseFailure(f"not a number: {text!r}") from None

    def score(self, annotation, item):
        return self.settings.scale * annotation["n"] * len(item.tgt) / max(1, len(item.src))


class ConstantJudge(RegisteredBackend):
    """Answers every request with the same text (a plugin backend)."""

    name = "constant"

    def __init__(self, text):
        self.model = f"constant-{text}"
        self.text = text

    @classmethod
    def from_spec(cls, spec, settings):
        return cls(spec.model or "1")

    async def generate(self, request: GenerateRequest) -> GenerateResult:
        return GenerateResult(self.text, "stop", Usage(len(request.messages[0].content), 1))

    async def aclose(self):
        pass


def halfway(scores):
    """Midpoint of the lowest and highest run (a plugin aggregator)."""
    return (min(scores) + max(scores)) / 2
'''

ENTRY_POINTS = '''
[polyjudge.protocols]
length-ratio = pj_plugin_demo:LengthRatio

[polyjudge.backends]
constant = pj_plugin_demo:ConstantJudge

[polyjudge.aggregators]
halfway = pj_plugin_demo:halfway
'''


def _install(site: Path) -> dict[str, str]:
    (site / "pj_plugin_demo.py").write_text(textwrap.dedent(PLUGIN), encoding="utf-8")
    dist = site / "pj_plugin_demo-0.1.dist-info"
    dist.mkdir()
    (dist / "METADATA").write_text("Metadata-Version: 2.1\nName: pj-plugin-demo\nVersion: 0.1\n", encoding="utf-8")
    (dist / "entry_points.txt").write_text(ENTRY_POINTS, encoding="utf-8")
    env = dict(os.environ)
    env["PYTHONPATH"] = os.pathsep.join([str(site), env.get("PYTHONPATH", "")])
    return env


def _polyjudge(env: dict[str, str], *args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "polyjudge.cli.main", *args], env=env, capture_output=True,
                          text=True, timeout=120)


def test_plugin_protocol_backend_and_aggregator_are_listed_and_run(tmp_path):
    site = tmp_path / "site"
    site.mkdir()
    env = _install(site)
    help_text = _polyjudge(env, "judge", "--help")
    assert help_text.returncode == 0, help_text.stderr
    assert "length-ratio" in help_text.stdout and "Length ratio times the judge's number" in help_text.stdout
    assert "constant" in help_text.stdout and "halfway" in help_text.stdout

    inp = tmp_path / "in.jsonl"
    inp.write_text(json.dumps({"src": "abcd", "tgt": "ab", "system": "S", "seg_id": "1"}) + "\n"
                   + json.dumps({"src": "ab", "tgt": "abcd", "system": "S", "seg_id": "2"}) + "\n")
    run = tmp_path / "run"
    res = _polyjudge(env, "judge", str(inp), "-o", str(run), "-p", "length-ratio", "--judge", "constant:3",
                     "--protocol-option", "scale=2", "--runs", "2", "--aggregate", "halfway", "-q")
    assert res.returncode == 0, res.stderr
    rows = [json.loads(x) for x in (run / "judgments.jsonl").read_text().splitlines()]
    assert [r["score"] for r in rows] == [3.0, 3.0, 12.0, 12.0]  # 2 * 3 * len(tgt)/len(src)
    seg = (run / "segments.tsv").read_text().splitlines()
    assert seg[1].split("\t")[5] == "3.0" and seg[2].split("\t")[5] == "12.0"
    manifest = json.loads((run / "manifest.json").read_text())
    assert manifest["protocol"] == "length-ratio" and manifest["config"]["aggregator"] == "halfway"

    bad = _polyjudge(env, "judge", str(inp), "-o", str(run), "-p", "length-ratio", "--judge", "constant",
                     "--protocol-option", "scal=2", "-q")
    assert bad.returncode == 2 and "scale" in bad.stderr and "Traceback" not in bad.stderr


def test_without_the_plugin_its_names_are_unknown(tmp_path):
    res = _polyjudge(dict(os.environ), "judge", str(tmp_path / "x.jsonl"), "-o", str(tmp_path / "r"),
                     "-p", "length-ratio")
    assert res.returncode == 2 and "unknown protocol 'length-ratio'" in res.stderr
