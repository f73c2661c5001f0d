"""Meta-evaluation with contrastive human scores (WMT26's contrastive ESA): they are ESA scores per system
per segment, so the existing score readers take them as they are; checked against scipy on a
contrastive-esa run judged by the scripted server."""

from __future__ import annotations

import numpy as np
import pytest
from scipy import stats

from polyjudge.api import MetaEvalConfig, meta_eval
from tests.protocols.test_units import contrastive_judge, contrastive_rows, run_judge

HUMAN = {"A": 88, "B": 35, "C": 60}


def human_score(row: dict) -> int:
    return HUMAN[row["system"]] + (int(row["seg_id"]) * 3) % 7


@pytest.mark.parametrize("fmt", ["tsv", "jsonl"])
def test_contrastive_human_scores_meta_evaluate_a_contrastive_run(tmp_path, fmt):
    run, _ = run_judge(tmp_path, contrastive_judge(bonus_first=7.0), contrastive_rows(), protocol="contrastive-esa")
    rows = contrastive_rows()
    human = tmp_path / f"cesa.{fmt}"
    if fmt == "tsv":
        human.write_text("system\tdoc_id\tseg_id\tscore\n" + "".join(
            f"{r['system']}\t{r['doc_id']}\t{r['seg_id']}\t{human_score(r)}\n" for r in rows), encoding="utf-8")
    else:
        import json
        human.write_text("".join(json.dumps({"system": r["system"], "doc_id": r["doc_id"], "seg_id": r["seg_id"],
                                             "score": human_score(r)}) + "\n" for r in rows), encoding="utf-8")
    res = meta_eval(MetaEvalConfig(human=human, metrics={"judge": run.path}, task=None, k=0))
    got = res.per_lp["en-de"]["judge"]
    judged = {(j.system, j.seg_id): j.score for j in run.judgments}
    h = np.array([human_score(r) for r in rows], dtype=float)
    m = np.array([judged[(r["system"], r["seg_id"])] for r in rows], dtype=float)
    assert got["n_systems"] == 3 and got["n_scored_cells"] == len(rows)
    assert got["seg_pearson"] == pytest.approx(stats.pearsonr(m, h).statistic)
    systems = sorted(HUMAN)
    hs = [h[[r["system"] == s for r in rows]].mean() for s in systems]
    ms = [m[[r["system"] == s for r in rows]].mean() for s in systems]
    assert got["sys_pearson"] == pytest.approx(stats.pearsonr(ms, hs).statistic)
