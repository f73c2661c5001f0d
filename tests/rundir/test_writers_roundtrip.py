"""``polyjudge export`` writers read back equal through the readers the docs name (issue 43, item 5): a run
of two systems over two documents whose seg_ids restart, texts holding ``<v>``, a tab and non-BMP
characters; ``segments-tsv``, ``segments-jsonl`` (``meta-eval --metric``) and ``mtme`` (mt-metrics-eval's
reader) give the run's own segment scores."""

from __future__ import annotations

import json
import math
from pathlib import Path

import pytest
from click.testing import CliRunner

from polyjudge.cli.main import cli
from polyjudge.metaeval.readers import read_mtme_score_file, read_scores
from polyjudge.rundir import RunDir
from polyjudge.rundir.writers import WRITERS
from tests.helpers.openai_server import ScriptedServer

ITEMS = [{"src": f"Quelle {doc} {seg} \U0001f600", "tgt": f"{system} <v>{doc}</v>\t{seg} \U00020000 </v>",
          "seg_id": seg, "doc_id": doc, "system": system, "src_lang": "de", "tgt_lang": "en"}
         for system in ("A", "B") for doc in ("d1", "d2") for seg in ("1", "2")]


def _score(body: dict) -> str:
    text = body["messages"][-1]["content"]
    return json.dumps({"score": next(7 * k + 3 for k, it in enumerate(ITEMS) if it["tgt"] in text)})


@pytest.fixture(scope="module")
def run(tmp_path_factory) -> Path:
    tmp = tmp_path_factory.mktemp("writers-rt")
    inp = tmp / "in.jsonl"
    inp.write_text("".join(json.dumps(it, ensure_ascii=False) + "\n" for it in ITEMS), encoding="utf-8")
    mp = pytest.MonkeyPatch()
    mp.setenv("OPENAI_API_KEY", "test-key")
    try:
        with ScriptedServer(_score) as srv:
            res = CliRunner().invoke(cli, ["judge", str(inp), "--out", str(tmp / "run"), "--protocol", "da",
                                           "--backend", "openai", "--model", "m", "--base-url", srv.base_url, "-q",
                                           "-c", "1"])
    finally:
        mp.undo()
    assert res.exit_code == 0, res.output
    return tmp / "run"


def _expected() -> dict[tuple[str, str], float]:
    return {(it["system"], f"{it['doc_id']}\u241f{it['seg_id']}"): 7.0 * k + 3 for k, it in enumerate(ITEMS)}


@pytest.mark.parametrize("writer", ["segments-tsv", "segments-jsonl"])
def test_segment_tables_read_back_by_meta_eval_keyed_by_document(run, tmp_path, writer):
    (path,) = WRITERS.get(writer).write(RunDir.open(run), tmp_path / "out")
    m = read_scores(path)
    got = {(s, item): m.values[i, j] for i, s in enumerate(m.systems) for j, item in enumerate(m.items)}
    assert got == _expected()


def test_mtme_files_read_back_in_the_test_sets_order(run, tmp_path):
    paths = {p.name.split(".")[-2]: p for p in WRITERS.get("mtme").write(RunDir.open(run), tmp_path / "out")}
    seg = read_mtme_score_file(paths["seg"])
    want = _expected()
    order = [f"{d}\u241f{s}" for d in ("d1", "d2") for s in ("1", "2")]
    assert seg == {system: [want[(system, k)] for k in order] for system in ("A", "B")}
    sys_ = read_mtme_score_file(paths["sys"])
    assert {k: v[0] for k, v in sys_.items()} == pytest.approx({s: math.fsum(seg[s]) / 4 for s in seg})
