"""A plugin package adds a protocol, a backend, an aggregator, a statistic, an input reader, a score format,
a span format and an output writer by entry points.

The plugin imports only :mod:`polyjudge.plugins` (the stable surface). The test
builds a real (tiny) installed distribution: a module plus a ``*.dist-info``
folder with ``METADATA`` and ``entry_points.txt`` on a ``PYTHONPATH`` entry,
which is what ``pip install`` leaves behind. Then the real ``polyjudge``
command must list the plugins in ``--help`` and in ``polyjudge
protocols|backends|aggregators|statistics|readers``, judge with them, and show the
statistic (label and value, checked against numpy) in meta-eval's per-LP table
and in the report.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import textwrap
from pathlib import Path

import numpy as np
import pytest

PLUGIN = '''
"""A polyjudge plugin made by a test."""
from dataclasses import dataclass
import numpy as np
from polyjudge.plugins import (GenerateRequest, GenerateResult, Item, JudgeProtocol, Message, ParseFailure,
                               RegisteredBackend, ScoreTable, Span, SpanSegment, Usage, lines_body,
                               register_reader, register_score_format, register_span_format,
                               register_statistic, register_writer)


@dataclass(frozen=True)
class LengthOptions:
    scale: float = 1.0


class LengthRatio(JudgeProtocol):
    """Length ratio times the judge's number (a plugin protocol)."""

    name = "length-ratio"
    options_type = LengthOptions

    def missing_languages(self, item):
        return ()  # a length ratio names no language: items need none

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


@register_statistic("mean_abs_diff", label="mad", title="mean absolute difference", levels=("seg",),
                    range=(0.0, 100.0))
def mean_abs_diff(level, human, metric):
    """Mean absolute difference of segment scores over the cells both scored (a plugin statistic)."""
    h = np.concatenate([s.seg.ravel() for s in human])
    m = np.concatenate([s.seg.ravel() for s in metric])
    both = ~np.isnan(h) & ~np.isnan(m)
    return float(np.abs(h[both] - m[both]).mean())


@register_reader("pipes", extensions=(".pipes",))
def read_pipes(path, defaults):
    """One item per line: system|source|translation (a plugin input reader)."""
    items = []
    for n, line in enumerate(path.read_text(encoding="utf-8").splitlines(), 1):
        system, src, tgt = line.split("|")
        items.append(Item(src=src, tgt=tgt, system=system, seg_id=str(n), src_lang=defaults.src_lang,
                          tgt_lang=defaults.tgt_lang))
    return items


def _is_pscores(probe):
    \"\"\"a file named *.pscores\"\"\"
    return probe.name.endswith(".pscores")


@register_score_format("pipescores", detect=_is_pscores)
def read_pipescores(path, choice):
    \"\"\"system|seg_id|score lines (a plugin score format).\"\"\"
    rows = []
    for n, line in enumerate(path.read_text(encoding="utf-8").splitlines(), 1):
        system, seg, score = line.split("|")
        rows.append((system, None, seg, float(score), n))
    return ScoreTable(str(path), tuple(rows), has_doc_id=False)


@register_span_format("spanmarks")
def read_spanmarks(path, request):
    \"\"\"seg_id start end severity lines (a plugin span format).\"\"\"
    segs = [SpanSegment(system="S", doc_id=None, seg_id=seg, spans=(Span(int(a), int(b), sev),), lp=request.lp)
            for seg, a, b, sev in (line.split() for line in path.read_text(encoding="utf-8").splitlines())]
    return segs, []


@register_writer("pipes-out", writes="scores.pipes")
def render_pipes(run):
    \"\"\"system|seg_id|score lines of the run's final scores (a plugin writer).\"\"\"
    return {"scores.pipes": lines_body(f"{r.system}|{r.seg_id}|{r.score}\\n" for r in run.segment_rows)}
'''

ENTRY_POINTS = '''
[polyjudge.protocols]
length-ratio = pj_plugin_demo:LengthRatio

[polyjudge.backends]
constant = pj_plugin_demo:ConstantJudge

[polyjudge.aggregators]
halfway = pj_plugin_demo:halfway

[polyjudge.statistics]
mean_abs_diff = pj_plugin_demo:mean_abs_diff

[polyjudge.readers]
pipes = pj_plugin_demo:read_pipes

[polyjudge.score_formats]
pipescores = pj_plugin_demo:read_pipescores

[polyjudge.span_formats]
spanmarks = pj_plugin_demo:read_spanmarks

[polyjudge.writers]
pipes-out = pj_plugin_demo:render_pipes
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

    piped = tmp_path / "in.pipes"  # the plugin reader, chosen by the extension, then by --input-format
    piped.write_text("S|abcd|ab\nS|ab|abcd\n", encoding="utf-8")
    for args in ([str(piped)], [str(piped), "--input-format", "pipes"]):
        res = _polyjudge(env, "judge", *args, "-o", str(tmp_path / "run-pipes"), "-p", "length-ratio",
                         "--judge", "constant:3", "--src-lang", "en", "--tgt-lang", "de", "-q")
        assert res.returncode == 0, res.stderr
        seg = (tmp_path / "run-pipes" / "segments.tsv").read_text().splitlines()
        assert [r.split("\t")[5] for r in seg[1:]] == ["1.5", "6.0"]  # 3 * len(tgt)/len(src)
    assert "--input-format [jsonl|csv|tsv|wmt25|wmt26|mtme|parquet|hf|pipes]" in help_text.stdout

    bad = _polyjudge(env, "judge", str(inp), "-o", str(run), "-p", "length-ratio", "--judge", "constant",
                     "--protocol-option", "scal=2", "-q")
    assert bad.returncode == 2 and "scale" in bad.stderr and "Traceback" not in bad.stderr


def test_without_the_plugin_its_names_are_unknown(tmp_path):
    res = _polyjudge(dict(os.environ), "judge", str(tmp_path / "x.jsonl"), "-o", str(tmp_path / "r"),
                     "-p", "length-ratio")
    assert res.returncode == 2 and "unknown protocol 'length-ratio'" in res.stderr


def test_plugins_are_listed_with_their_options(tmp_path):
    site = tmp_path / "site"
    site.mkdir()
    env = _install(site)
    listed = {kind: _polyjudge(env, kind, "--format", "json") for kind in
              ("protocols", "backends", "aggregators", "statistics", "readers")}
    assert all(r.returncode == 0 for r in listed.values()), [r.stderr for r in listed.values()]
    by_kind = {kind: {e["name"]: e for e in json.loads(r.stdout)} for kind, r in listed.items()}
    ratio = by_kind["protocols"]["length-ratio"]
    assert ratio["source"] == "plugin (pj_plugin_demo)"
    assert ratio["options"] == [{"name": "scale", "type": "float", "default": "1.0", "help": ""}]
    assert by_kind["backends"]["constant"]["source"].startswith("plugin")
    assert by_kind["aggregators"]["halfway"]["summary"].startswith("Midpoint of the lowest")
    mad = by_kind["statistics"]["mean_abs_diff"]
    assert mad["source"] == "plugin (pj_plugin_demo)"
    assert {o["name"]: o["default"] for o in mad["options"]}["label"] == "mad"
    assert by_kind["readers"]["pipes"]["options"][0]["default"] == ".pipes"
    assert by_kind["protocols"]["da"]["source"] == "built-in"  # built-ins stay listed beside plugins
    text = _polyjudge(env, "statistics")
    assert "mean_abs_diff  [plugin (pj_plugin_demo)]" in text.stdout


def _write_scores(root: Path) -> tuple[np.ndarray, np.ndarray]:
    """A small mt-metrics-eval folder (one LP, five systems, one metric) and its two matrices."""
    rng = np.random.default_rng(7)
    human = np.round(rng.normal(size=(5, 12)) * 10, 1)
    human[:, :2] = np.nan
    metric = np.round(human + rng.normal(size=human.shape) * 5, 1)
    metric[:, :2] = rng.normal(size=(5, 2))
    systems = [f"sys{i}" for i in range(5)]
    (root / "human-scores").mkdir(parents=True)
    (root / "metric-scores" / "en-de").mkdir(parents=True)

    def dump(path: Path, values: np.ndarray) -> None:
        path.write_text("".join(f"{s}\t{'None' if np.isnan(v) else repr(float(v))}\n"
                                for s, row in zip(systems, values) for v in row), encoding="utf-8")

    dump(root / "human-scores" / "en-de.mqm.seg.score", human)
    dump(root / "metric-scores" / "en-de" / "Judge-src.seg.score", metric)
    return human, metric


def test_a_plugin_statistic_reaches_the_meta_eval_table_and_the_report(tmp_path):
    site = tmp_path / "site"
    site.mkdir()
    env = _install(site)
    human, metric = _write_scores(tmp_path / "mtme")
    both = ~np.isnan(human) & ~np.isnan(metric)
    expected = float(np.abs(human[both] - metric[both]).mean())  # numpy, outside polyjudge
    args = ["meta-eval", "--mtme", str(tmp_path / "mtme"), "--lp", "en-de", "-k", "0"]
    text = _polyjudge(env, *args)
    assert text.returncode == 0, text.stderr
    lines = text.stdout.splitlines()
    at = next(i for i, line in enumerate(lines) if "seg_mean_abs_diff" in line)  # the per-LP table's header
    cells = dict(zip(lines[at].split(), lines[at + 2].split()))
    assert cells["Metric"] == "Judge-src"
    assert float(cells["seg_mean_abs_diff"]) == pytest.approx(expected, abs=1e-4)

    out = tmp_path / "me.json"
    res = _polyjudge(env, *args, "--format", "json", "-o", str(out))
    assert res.returncode == 0, res.stderr
    per_lp = json.loads(out.read_text())["language_pairs"]["en-de"]["Judge-src"]
    assert per_lp["seg_mean_abs_diff"] == pytest.approx(expected, rel=1e-12)
    html_path = tmp_path / "report.html"
    rep = _polyjudge(env, "report", "--metaeval", str(out), "-o", str(html_path))
    assert rep.returncode == 0, rep.stderr
    page = html_path.read_text(encoding="utf-8")
    table = page[page.index("<caption>seg mean absolute difference"):]
    table = table[:table.index("</table>")]
    assert "<td>Judge-src</td>" in table and f">{expected:.3g}</td>" in table

    plain = _polyjudge(dict(os.environ), *args)  # without the plugin: the standard table only
    assert plain.returncode == 0 and "mean_abs_diff" not in plain.stdout


def test_plugin_formats_and_writer_are_choices_listed_and_used(tmp_path):
    site = tmp_path / "site"
    site.mkdir()
    env = _install(site)
    listed = {kind: _polyjudge(env, kind, "--format", "json") for kind in ("score-formats", "span-formats", "writers")}
    assert all(r.returncode == 0 for r in listed.values()), [r.stderr for r in listed.values()]
    names = {kind: {e["name"]: e["source"] for e in json.loads(r.stdout)} for kind, r in listed.items()}
    assert names["score-formats"]["pipescores"] == "plugin (pj_plugin_demo)"
    assert names["span-formats"]["spanmarks"] == "plugin (pj_plugin_demo)"
    assert names["writers"]["pipes-out"] == "plugin (pj_plugin_demo)"
    assert "tsv|csv|jsonl|sys|pipescores]" in _polyjudge(env, "meta-eval", "--help").stdout
    assert "run|spanmarks]" in _polyjudge(env, "span-f1", "--help").stdout

    rng = np.random.default_rng(3)
    human = np.round(rng.normal(size=(4, 6)), 3)
    metric = np.round(human + rng.normal(size=human.shape) / 3, 3)
    (tmp_path / "h.pscores").write_text("".join(f"S{i}|{j}|{v}\n" for i, row in enumerate(human)
                                                for j, v in enumerate(row)), encoding="utf-8")
    (tmp_path / "m.tsv").write_text("system\tseg_id\tscore\n" + "".join(
        f"S{i}\t{j}\t{v}\n" for i, row in enumerate(metric) for j, v in enumerate(row)), encoding="utf-8")
    res = _polyjudge(env, "meta-eval", "--human", str(tmp_path / "h.pscores"), "--metric", f"J={tmp_path / 'm.tsv'}",
                     "--lp", "en-de", "-k", "0", "--format", "json")
    assert res.returncode == 0, res.stderr
    pearson = json.loads(res.stdout)["language_pairs"]["en-de"]["J"]["seg_pearson"]
    assert pearson == pytest.approx(np.corrcoef(human.ravel(), metric.ravel())[0, 1], rel=1e-9)  # no grouping

    fixture = Path(__file__).resolve().parents[1] / "fixtures" / "run-0.1.0"
    code = ("import sys\nfrom polyjudge.rundir import RunDir\nfrom polyjudge.rundir.writers import WRITERS\n"
            "WRITERS.get('pipes-out').write(RunDir.open(sys.argv[1]), sys.argv[2])")
    out = tmp_path / "export"
    res = subprocess.run([sys.executable, "-c", code, str(fixture), str(out)], env=env, capture_output=True,
                         text=True, timeout=120)
    assert res.returncode == 0, res.stderr
    first = (fixture / "segments.tsv").read_text(encoding="utf-8").splitlines()[1].split("\t")
    assert (out / "scores.pipes").read_text(encoding="utf-8").splitlines()[0] == f"{first[0]}|{first[2]}|{first[5]}"
