"""``polyjudge span-f1 --match/--matching/--average`` and ``--rank``: variants and rankings end to end."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from polyjudge.cli.main import main


def run(argv: list[str], capsys: pytest.CaptureFixture[str]) -> tuple[int, str, str]:
    with pytest.raises(SystemExit) as exc:
        main(argv)
    out = capsys.readouterr()
    return int(exc.value.code or 0), out.out, out.err


def write(path: Path, spans_per_seg: list[list[tuple[int, int]]], *, hyp: bool) -> str:
    rows = []
    for i, spans in enumerate(spans_per_seg):
        row = {"system": "A", "doc_id": "d", "seg_id": str(i), "lp": "en-de",
               "spans": [{"start": a, "end": b, "severity": "major"} for a, b in spans]}
        if hyp:
            row["hypothesis"] = "x" * 40
        rows.append(row)
    path.write_text("".join(json.dumps(r) + "\n" for r in rows))
    return str(path)


@pytest.fixture
def files(tmp_path: Path) -> dict[str, str]:
    # "wide" covers each gold span with one broad span (overlaps, never exact);
    # "exact" finds one gold span exactly and misses the other
    return {"gold": write(tmp_path / "gold.jsonl", [[(0, 4), (10, 14)], [(5, 9)]], hyp=True),
            "wide": write(tmp_path / "wide.jsonl", [[(0, 20)], [(0, 20)]], hyp=False),
            "exact": write(tmp_path / "exact.jsonl", [[(0, 4)], []], hyp=False)}


def test_default_output_is_the_official_scorer(files: dict[str, str], capsys: pytest.CaptureFixture[str]):
    code, out, err = run(["span-f1", "--gold", files["gold"], "--pred", files["exact"], "--format", "json"], capsys)
    assert code == 0, err
    res = json.loads(out)
    assert "variant" not in res and res["en-de"]["tp"] == 4.0 and res["en-de"]["gold_chars"] == 12.0


def test_a_variant_is_scored_and_named(files: dict[str, str], capsys: pytest.CaptureFixture[str]):
    code, out, err = run(["span-f1", "--gold", files["gold"], "--pred", files["wide"], "--match", "overlap",
                          "--matching", "greedy", "--format", "json"], capsys)
    assert code == 0, err
    res = json.loads(out)
    # one-to-one: each wide span takes one of the gold spans it overlaps (2 of 3 gold found)
    assert res["variant"] == {"match": "overlap", "matching": "greedy", "average": "micro"}
    assert res["en-de"]["precision"] == 1.0 and res["en-de"]["recall"] == pytest.approx(2 / 3)
    code, out, _ = run(["span-f1", "--gold", files["gold"], "--pred", files["wide"], "--match", "overlap",
                        "--matching", "many", "--format", "tsv"], capsys)
    head, row = out.splitlines()[:2]
    assert head.split("\t")[:4] == ["lp", "precision", "recall", "f1"] and "recall_den" in head
    assert row.split("\t")[2] == "1"  # many-to-many: every gold span is overlapped


def test_wmt25_pairs_no_spans(files: dict[str, str], capsys: pytest.CaptureFixture[str]):
    code, _, err = run(["span-f1", "--gold", files["gold"], "--pred", files["wide"], "--matching", "greedy"], capsys)
    assert code == 2 and "pairs no spans" in err and "Traceback" not in err


def test_rank_shows_where_the_ranking_changes(files: dict[str, str], capsys: pytest.CaptureFixture[str]):
    code, out, err = run(["span-f1", "--gold", files["gold"], "--pred", files["exact"],
                          "--rank", f"broad={files['wide']}", "--variants", "exact,overlap/many",
                          "--format", "json"], capsys)
    assert code == 0, err
    res = json.loads(out)
    assert res["reference"] == "exact/optimal/micro" and res["metrics"] == ["exact", "broad"]
    first, second = res["variants"]
    assert first["ranks"] == {"exact": 1, "broad": 2} and second["ranks"] == {"exact": 2, "broad": 1}
    assert res["changes"][0]["moved"] == ["exact", "broad"] and res["changes"][0]["kendall_tau"] == -1.0
    code, out, err = run(["span-f1", "--gold", files["gold"], "--pred", files["exact"], "--rank", files["wide"],
                          "--variants", "exact,overlap/many", "--format", "text"], capsys)
    assert code == 0, err
    assert "overlap/many/micro: exact, wide ranked otherwise than under exact/optimal/micro" in out


def test_rank_refuses_bad_input(files: dict[str, str], capsys: pytest.CaptureFixture[str]):
    base = ["span-f1", "--gold", files["gold"], "--pred", files["exact"]]
    code, _, err = run([*base, "--rank", "x=/no/such/file"], capsys)
    assert code == 2 and "no such file" in err
    code, _, err = run([*base, "--rank", f"exact={files['wide']}"], capsys)
    assert code == 2 and "labelled" in err
    code, _, err = run([*base, "--rank", files["wide"], "--variants", "mpp/hungarian"], capsys)
    assert code == 2 and "unknown span matching" in err
