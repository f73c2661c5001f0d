"""``polyjudge compare-formats``: four span formats judged against the scripted server,
then F1/P/R, failure rates and tokens side by side, checked by hand."""

from __future__ import annotations

import json

import click
import pytest
from click.testing import CliRunner

from polyjudge.api import CompareFormatsConfig, compare_formats
from polyjudge.cli.main import cli, main
from polyjudge.data.errors import InputError
from polyjudge.rundir import RunDir
from tests.helpers.openai_server import ScriptedServer

ITEMS = [
    {"src": "Er kam am Dienstag an.", "tgt": "He arrived on Monday.", "seg_id": "1"},
    {"src": "Das Haus ist rot.", "tgt": "The house is red.", "seg_id": "2"},
]
GOLD = [[{"start": 14, "end": 20, "severity": "major"}], []]  # "Monday"

# format -> (answer for segment 1, answer for segment 2)
ANSWERS = {
    # exact: P = R = 1
    "tsa": ({"annotated_translation": "He arrived on <v0>Monday</v0>.",
             "errors": [{"severity": "major", "category": "accuracy/mistranslation"}]},
            {"annotated_translation": "The house is red.", "errors": []}),
    # right place, wrong severity: half credit on 6 characters, P = R = 3/6
    "gemba-spans": ({"errors": [{"span": "Monday", "severity": "minor", "category": "accuracy/mistranslation"}]},
                    {"errors": []}),
    # segment 2 fails (offsets past the text); its gold is empty, so scored as empty it costs nothing
    "direct-index": ({"errors": [{"start": 14, "end": 20, "severity": "major", "category": "accuracy"}]},
                     {"errors": [{"start": 5, "end": 99, "severity": "minor", "category": "style"}]}),
    # a span too wide: 17 characters marked, 6 right: P = 6/17, R = 1
    "gemba-esa": ({"errors": [{"span": "arrived on Monday", "severity": "major"}], "score": 30},
                  {"errors": [], "score": 95}),
}


def _judge(tmp, fmt: str) -> tuple[str, list[str]]:
    inp = tmp / "items.jsonl"
    inp.write_text("\n".join(json.dumps(it | {"src_lang": "de", "tgt_lang": "en", "system": "S", "doc_id": "d"})
                             for it in ITEMS) + "\n")
    replies: list[str] = []

    def responder(body: dict) -> str:
        seg = 0 if "Monday" in body["messages"][-1]["content"] else 1
        text = json.dumps(ANSWERS[fmt][seg])
        replies.append(text)
        return text

    out = tmp / fmt
    with ScriptedServer(responder) as srv:
        res = CliRunner().invoke(cli, ["judge", str(inp), "--out", str(out), "--protocol", fmt, "--backend",
                                       "openai", "--model", "m", "--base-url", srv.base_url, "-q", "-c", "1",
                                       "--max-failure-rate", "1"])  # the failures are compared too
    assert res.exit_code == 0, res.output + str(res.exception)
    return str(out), replies


@pytest.fixture(scope="module")
def runs(tmp_path_factory):
    tmp = tmp_path_factory.mktemp("formats")
    mp = pytest.MonkeyPatch()
    mp.setenv("OPENAI_API_KEY", "test-key")
    try:
        judged = {fmt: _judge(tmp, fmt) for fmt in ANSWERS}
    finally:
        mp.undo()
    gold = tmp / "gold.jsonl"
    gold.write_text("\n".join(json.dumps({"system": "S", "doc_id": "d", "seg_id": it["seg_id"], "lp": "de-en",
                                          "hypothesis": it["tgt"], "spans": sp}) for it, sp in zip(ITEMS, GOLD))
                    + "\n")
    return judged, gold


def _run(argv, capsys):
    with pytest.raises(SystemExit) as exc:
        main([str(a) for a in argv])
    out = capsys.readouterr()
    return exc.value.code, out.out, out.err


def test_scores_failures_and_tokens_by_hand(runs, capsys):
    judged, gold = runs
    code, out, err = _run(["compare-formats", *(p for p, _ in judged.values()), "--gold", gold, "--format", "json"],
                          capsys)
    assert code == 0, err
    rows = {r["format"]: r for r in json.loads(out)["runs"]}
    assert list(rows) == list(ANSWERS)
    expected = {"tsa": (1.0, 1.0, 1.0), "gemba-spans": (0.5, 0.5, 0.5), "direct-index": (1.0, 1.0, 1.0),
                "gemba-esa": (12 / 23, 6 / 17, 1.0)}
    for fmt, (f1, p, r) in expected.items():
        assert (rows[fmt]["f1"], rows[fmt]["precision"], rows[fmt]["recall"]) == (
            pytest.approx(f1), pytest.approx(p), pytest.approx(r)), fmt
    assert [rows[f]["failure_rate"] for f in ANSWERS] == [0.0, 0.0, 0.5, 0.0]
    assert rows["direct-index"]["failures"] == {"parse_failed": 1} and rows["direct-index"]["missing_predictions"] == 1
    for fmt, (path, replies) in judged.items():
        judgments = RunDir.open(path).judgments
        # the scripted server counts words: the completion tokens are the replies' words
        assert rows[fmt]["completion_tokens"] == sum(len(t.split()) for t in replies)
        assert rows[fmt]["prompt_tokens"] == sum(j.prompt_tokens for j in judgments) > 0
        assert rows[fmt]["judgments"] == 2 and rows[fmt]["wall_time_s"] > 0
    assert rows["tsa"]["run"] == "tsa" and rows["tsa"]["signature"].startswith("tsa|")


def test_text_and_tsv_and_out(runs, capsys, tmp_path):
    judged, gold = runs
    paths = [p for p, _ in judged.values()]
    code, out, err = _run(["compare-formats", *paths, "--gold", gold], capsys)
    assert code == 0, err
    lines = out.splitlines()
    assert lines[0].split()[:5] == ["format", "run", "f1", "precision", "recall"]
    assert [ln.split()[0] for ln in lines[1:5]] == list(ANSWERS)
    assert lines[3].split()[2:5] == ["1.0000", "1.0000", "1.0000"] and "0.5000" in lines[3].split()
    assert "scored as predicting no errors" in out
    target = tmp_path / "formats.tsv"
    code, out, err = _run(["compare-formats", *paths, "--gold", gold, "--format", "tsv", "-o", target], capsys)
    assert code == 0 and out == "" and "wrote" in err
    tsv = target.read_text().splitlines()
    assert tsv[0].split("\t")[0] == "format" and len(tsv) == 5
    # leaving failed segments out instead changes nothing here but the policy shown
    code, out, _ = _run(["compare-formats", paths[2], "--gold", gold, "--missing", "skip"], capsys)
    assert code == 0 and "is left out" in out


def test_runs_without_spans_and_bad_input_exit_2(runs, tmp_path, capsys):
    judged, gold = runs
    code, _, err = _run(["compare-formats", tmp_path, "--gold", gold], capsys)
    assert code == 2 and "not a polyjudge run directory" in err
    mqm_like = tmp_path / "mqm"
    mqm_like.mkdir()
    (mqm_like / "judgments.jsonl").write_text("")
    (mqm_like / "manifest.json").write_text(json.dumps({"protocol": "mqm"}))
    code, _, err = _run(["compare-formats", mqm_like, "--gold", gold], capsys)
    assert code == 2 and "produces no error spans" in err and len(err.strip().splitlines()) == 1
    with pytest.raises(InputError, match="at least one run"):
        compare_formats(CompareFormatsConfig(runs=(), gold=gold))


def test_python_api(runs):
    judged, gold = runs
    res = compare_formats(CompareFormatsConfig(runs=(judged["tsa"][0], judged["gemba-esa"][0]), gold=gold))
    assert [r.format for r in res.rows] == ["tsa", "gemba-esa"]
    assert res.rows[1].failure_rate == 0.0 and res.rows[1].per_lp["de-en"]["pred_chars"] == 17
    assert res.format("tsv") == res.to_tsv()


def test_the_flags_compare_formats_shares_with_span_f1_mean_and_say_the_same():
    """docs/reference/conventions.md: the same flag means the same thing in every command, with the same --help."""
    from polyjudge.cli.compare_cmd import compare_formats as compare_command
    from polyjudge.cli.spans_cmd import span_f1 as span_command

    def described(command):
        ctx = click.Context(command)
        return {p.name: (p.opts, p.get_help_record(ctx), p.default, p.type.to_info_dict()) for p in command.params
                if isinstance(p, click.Option)}

    compare, spans = described(compare_command), described(span_command)
    shared = {"gold", "gold_format", "lp", "judge", "set_id", "missing", "raters", "vote_threshold"}
    assert shared <= set(compare) & set(spans)
    for name in shared | {"fmt", "out"}:
        if name in ("fmt", "out"):  # shared flags whose help and default are the command's own
            assert compare[name][0] == spans[name][0]
            continue
        assert compare[name] == spans[name], name
    pred, gold = spans["pred_format"], spans["gold_format"]
    assert (pred[1][1], *pred[2:]) == (gold[1][1], *gold[2:])  # the same help, default and choices
