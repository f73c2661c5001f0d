"""``annotate status`` against independent references (the krippendorff and ppi-python packages),
sampling from a judge's run, and the closed loop: meta-eval, validate and agreement read a campaign."""

from __future__ import annotations

import json
from pathlib import Path

import krippendorff
import numpy as np
import pytest
from ppi_py import ppi_mean_ci, ppi_mean_pointestimate

from polyjudge.annotate.schemes import check_annotation
from polyjudge.annotate.store import CampaignStore
from polyjudge.api import AnnotateConfig, campaign_status, init_campaign
from tests.annotate.campaign_helpers import BASE, SPREAD, N, judge_items, make, write_items
from tests.helpers.cli import cli
from tests.helpers.openai_server import ScriptedServer


def _annotate(folder: Path, bodies: dict[tuple[str, str], dict]) -> None:
    store = CampaignStore(folder)
    try:
        index = {it.item_id: it for it in store.items}
        for (name, item_id), body in bodies.items():
            it = index[item_id]
            store.save(name, it.id, check_annotation(body, store.info.scheme, store.info.task, it.tgt))
    finally:
        store.close()


def _queue(folder: Path) -> dict[str, list[str]]:
    store = CampaignStore(folder, readonly=True)
    try:
        return {n: [store.items[i].item_id for i in q] for n, q in store.queues().items()}
    finally:
        store.close()


@pytest.fixture(scope="module")
def judged(tmp_path_factory):
    return judge_items(tmp_path_factory.mktemp("judged"))


def test_alpha_matches_the_krippendorff_package_with_missing_ratings(tmp_path):
    folder, _ = make(tmp_path, "da", "a,b,c", per_item=3, n=6)
    rng = np.random.default_rng(3)
    data = np.round(rng.uniform(0, 100, size=(3, 6)), 1)
    data[0, 1] = data[2, 4] = np.nan  # not annotated (yet)
    ids = [f"sys{i % 2}:doc{i // 4}:{i}" for i in range(6)]
    _annotate(folder, {(n, ids[j]): {"score": float(data[r, j])} for r, n in enumerate("abc") for j in range(6)
                       if not np.isnan(data[r, j])})
    status = campaign_status(folder)
    expected = krippendorff.alpha(reliability_data=data, level_of_measurement="interval")
    assert status.alpha == pytest.approx(expected, abs=1e-12) and status.alpha_items == 6
    assert [(p.annotator, p.done, p.total) for p in status.progress] == [("a", 5, 6), ("b", 6, 6), ("c", 5, 6)]


def test_nominal_alpha_of_forced_choices_matches_the_package(tmp_path):
    folder, _ = make(tmp_path, "forced-choice", "a,b", per_item=2, n=8)
    picks = {"a": "AABCCABA", "b": "ABBCAABC"}
    _annotate(folder, {(n, f"sys{i % 2}:doc{i // 4}:{i}"): {"choice": picks[n][i]} for n in "ab" for i in range(8)})
    data = np.array([["ABC".index(c) for c in picks[n]] for n in "ab"], dtype=float)
    status = campaign_status(folder)
    assert status.alpha_level == "nominal"
    assert status.alpha == pytest.approx(krippendorff.alpha(reliability_data=data, level_of_measurement="nominal"))


def test_span_f1_between_annotators(tmp_path):
    folder, _ = make(tmp_path, "esa", "a,b,c", per_item=3, n=2)
    span = {"severity": "major"}
    _annotate(folder, {
        ("a", "sys0:doc0:0"): {"spans": [{**span, "start": 0, "end": 10}], "score": 50},
        ("b", "sys0:doc0:0"): {"spans": [{**span, "start": 5, "end": 15}], "score": 60},
        ("c", "sys0:doc0:0"): {"spans": [{**span, "start": 0, "end": 10}], "score": 40},
    })
    pairs = {(p.first, p.second): p.f1 for p in campaign_status(folder).span_f1}
    # 5 shared characters of 10 each side: precision = recall = 0.5; a and c marked the same characters
    assert pairs == {("a", "b"): pytest.approx(0.5), ("a", "c"): pytest.approx(1.0), ("b", "c"): pytest.approx(0.5)}


def test_judge_uncertainty_picks_the_items_whose_runs_disagree(judged, tmp_path):
    items, run = judged
    folder = tmp_path / "camp"
    init_campaign(AnnotateConfig(str(folder), str(items), "da", "2", 1, sample=3, by="judge-uncertainty",
                                 run=str(run)))
    shown = sorted(i for q in _queue(folder).values() for i in q)
    assert shown == sorted(f"sys{i % 2}:doc{i // 4}:{i}" for i in SPREAD)


def test_judge_uncertainty_needs_runs_that_can_disagree(tmp_path, capsys):
    items = write_items(tmp_path / "items.tsv", 4, hostile=False)
    with ScriptedServer(lambda body: json.dumps({"score": 50})) as srv:
        assert cli("judge", items, "-p", "da", "-o", tmp_path / "run", "--judge", f"openai:m@{srv.base_url}",
                   "-q") == 0
    capsys.readouterr()
    assert cli("annotate", "init", tmp_path / "camp", "--items", tmp_path / "run", "--scheme", "da",
               "--sample", "2", "--by", "judge-uncertainty") == 2
    assert "no uncertainty to rank by" in capsys.readouterr().err


def test_ppi_sample_and_the_estimate_against_ppi_python(judged, tmp_path):
    items, run = judged
    folder = tmp_path / "camp"
    assert cli("annotate", "init", folder, "--items", run, "--scheme", "da", "--annotators", "1",
               "--sample", "6", "--by", "ppi", "--seed", "5") == 0
    queue = _queue(folder)["annotator-1"]
    assert len(queue) == 6
    human = {iid: 100 - int(iid.rsplit(":", 1)[1]) * 3 for iid in queue}
    _annotate(folder, {("annotator-1", iid): {"score": v} for iid, v in human.items()})
    status = campaign_status(folder)
    judge = {f"sys{i % 2}:doc{i // 4}:{i}": float(BASE[i]) for i in range(N)}  # the mean of the 3 runs
    y = np.array([human[i] for i in queue], dtype=float)
    yhat = np.array([judge[i] for i in queue])
    unlabelled = np.array([v for k, v in judge.items() if k not in human])  # the judge's alone
    lo, hi = ppi_mean_ci(y, yhat, unlabelled, alpha=0.1)
    assert status.ppi is not None
    assert status.ppi.estimate == pytest.approx(float(ppi_mean_pointestimate(y, yhat, unlabelled)[0]))
    assert (status.ppi.lower, status.ppi.upper) == (pytest.approx(float(lo[0])), pytest.approx(float(hi[0])))
    assert status.ppi.n_labelled == 6 and status.ppi.n_judged == N - 6


def test_status_formats(judged, tmp_path, capsys):
    folder, _ = make(tmp_path, "da", "a,b", per_item=2, n=4)
    _annotate(folder, {("a", "sys0:doc0:0"): {"score": 10}, ("b", "sys0:doc0:0"): {"score": 20}})
    assert cli("annotate", "status", folder, "--format", "json") == 0
    data = json.loads(capsys.readouterr().out)
    assert data["progress"][0] == {"annotator": "a", "done": 1, "total": 4, "versions": 1}
    assert cli("annotate", "status", folder, "--format", "tsv") == 0
    assert "done\ta\t1\n" in capsys.readouterr().out
    assert cli("annotate", "status", folder) == 0
    assert "a: 1/4 done" in capsys.readouterr().out


def test_meta_eval_reads_a_campaign_directly(judged, tmp_path, capsys):
    items, run = judged
    folder = tmp_path / "camp"
    assert cli("annotate", "init", folder, "--items", items, "--scheme", "esa", "--annotators", "2") == 0
    bodies = {}
    for name, queue in _queue(folder).items():
        for iid in queue:
            i = int(iid.rsplit(":", 1)[1])
            bodies[(name, iid)] = {"spans": [], "score": BASE[i] + (i % 3)}  # close to the judge: high correlation
    _annotate(folder, bodies)
    exported = tmp_path / "esa.jsonl"
    assert cli("annotate", "export", folder, "--to", "esa-jsonl", "-o", exported) == 0
    capsys.readouterr()
    assert cli("meta-eval", "--metric", f"judge={run}", "--human", folder, "--format", "json") == 0
    direct = json.loads(capsys.readouterr().out)
    assert cli("meta-eval", "--metric", f"judge={run}", "--human", exported, "--format", "json") == 0
    via_file = json.loads(capsys.readouterr().out)
    strip = json.dumps(direct).replace(str(folder), "X")
    assert _numbers(direct) == _numbers(via_file) and _numbers(direct)
    assert "campaign.sqlite" not in strip


def _numbers(obj) -> list[str]:
    if isinstance(obj, dict):
        return [x for k in sorted(obj) if k not in ("human", "source", "config") for x in _numbers(obj[k])]
    if isinstance(obj, list):
        return [x for v in obj for x in _numbers(v)]
    return [repr(round(obj, 9))] if isinstance(obj, float) else []


def test_validate_and_agreement_read_a_campaign_directly(tmp_path, capsys):
    folder, _ = make(tmp_path, "forced-choice", "a,b,c", per_item=3, n=8)
    picks = {"a": "AABCCABA", "b": "ABBCAABC", "c": "AABCAABA"}
    _annotate(folder, {(n, f"sys{i % 2}:doc{i // 4}:{i}"): {"choice": picks[n][i]} for n in "abc" for i in range(8)})
    task = tmp_path / "task.json"
    store = CampaignStore(folder, readonly=True)
    task.write_text(json.dumps(store.info.task.to_dict()), encoding="utf-8")
    store.close()
    judge = tmp_path / "judge.tsv"
    judge.write_text("item\tprotocol\tanswer\n" + "".join(f"sys{i % 2}:doc{i // 4}:{i}\tfc\t{picks['a'][i]}\n"
                                                          for i in range(8)), encoding="utf-8")
    ratings = tmp_path / "ratings.tsv"
    assert cli("annotate", "export", folder, "--to", "ratings", "-o", ratings) == 0
    capsys.readouterr()
    assert cli("validate", "--task", task, "--human", folder, "--judge", f"j={judge}", "--format", "json") == 0
    direct = capsys.readouterr().out
    assert cli("validate", "--task", task, "--human", ratings, "--judge", f"j={judge}", "--format", "json") == 0
    assert _numbers(json.loads(direct)) == _numbers(json.loads(capsys.readouterr().out))

    (tmp_path / "da").mkdir()
    da, _ = make(tmp_path / "da", "da", "a,b", per_item=2, n=4)
    _annotate(da, {(n, f"sys{i % 2}:doc{i // 4}:{i}"): {"score": 10 * i + (n == "b")} for n in "ab" for i in range(4)})
    capsys.readouterr()
    assert cli("agreement", "--human", da, "--format", "json") == 0
    assert "Traceback" not in capsys.readouterr().err
