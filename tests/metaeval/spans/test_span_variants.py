"""Every span-F1 variant against span-mt-metrics-eval (Perrella et al., 2026), on real TED spans.

The library is not on PyPI; it is run outside the project, in its own
environment (``SPAN_MT_METRICS_EVAL_PYTHON``, default ``/work/venv-spanmme/bin/python``,
made with ``pip install`` of a checkout of github.com/sted19/span-mt-metrics-eval),
as a subprocess fed JSON: the comparison skips, saying why, where it is absent.
The hand-worked cases below hold numbers the library gave, so they run everywhere.

Real pairs: the TED MQM files have one rater per segment, but many systems
produced the same translation of a segment, and those were rated by different
raters: one annotation of an identical hypothesis is the gold, another the
prediction (and, for many overlapping spans, the next three pooled), about
2,500 pairs per language pair.
"""

from __future__ import annotations

import json
import os
import subprocess
from collections import defaultdict
from pathlib import Path

import pytest

from polyjudge.data.errors import InputError
from polyjudge.metaeval.spans import Span, SpanSegment, read_spans, span_f1
from polyjudge.metaeval.spans.scoring import score_segments
from polyjudge.metaeval.spans.variants import (
    AVERAGES,
    MATCHES,
    MATCHINGS,
    SpanVariant,
    all_variants,
    intervals,
    parse_variant,
)

# ../shared/data beside the project root (POLYJUDGE_SHARED_DATA elsewhere, e.g. from a git worktree)
DATA = Path(os.environ.get("POLYJUDGE_SHARED_DATA", Path(__file__).resolve().parents[3] / ".." / "shared" / "data"))
TED = {lp: DATA / "wmt-mqm" / "ted" / name / f"mqm_ted_{name}.tsv" for lp, name in (("en-de", "ende"),
                                                                                   ("zh-en", "zhen"))}
LIBRARY_PYTHON = Path(os.environ.get("SPAN_MT_METRICS_EVAL_PYTHON", "/work/venv-spanmme/bin/python"))
LIBRARY_VARIANTS = [v for v in all_variants() if v.match != "wmt25"]

# Runs in the library's environment: reads {"pred": [[span, ...], ...], "gold": ..., "variants": [...]} and
# prints precision, recall and F-score per variant.
RUNNER = """
import json, sys
from span_mt_metrics_eval import compute
job = json.load(sys.stdin)
out = []
for measure, matching, algorithm, averaging in job["variants"]:
    r = compute(job["pred"], job["gold"], measure=measure, matching=matching, matching_algorithm=algorithm,
                averaging=averaging)
    out.append([r.precision, r.recall, r.f_score])
print(json.dumps(out))
"""


def library_args(v: SpanVariant) -> list[str]:
    matching = MATCHINGS[v.how].library.split("/")
    return [MATCHES[v.match].library, matching[0], matching[1] if len(matching) > 1 else "optimal", v.average]


def run_library(gold: list[list[Span]], pred: list[list[Span]], variants: list[SpanVariant]) -> list[list[float]]:
    if not LIBRARY_PYTHON.exists():
        pytest.skip(f"span-mt-metrics-eval's environment {LIBRARY_PYTHON} is absent "
                    "(set SPAN_MT_METRICS_EVAL_PYTHON to a Python with it installed)")

    def side(segs: list[list[Span]]) -> list[list[dict[str, object]]]:
        # the spans a variant scores (the library takes no omission without a location)
        return [[{"start": a, "end": b, "side": "target", "severity": sev} for a, b, sev in intervals(seg)]
                for seg in segs]

    job = {"pred": side(pred), "gold": side(gold), "variants": [library_args(v) for v in variants]}
    done = subprocess.run([str(LIBRARY_PYTHON), "-c", RUNNER], input=json.dumps(job), capture_output=True,
                          text=True, check=False, timeout=600)
    assert done.returncode == 0, done.stderr[-2000:]
    result: list[list[float]] = json.loads(done.stdout)
    return result


def ted_pairs(lp: str, pooled: int = 1) -> tuple[list[int], list[list[Span]], list[list[Span]]]:
    """Gold and predicted spans of identical hypotheses rated by two raters (``pooled``: that many others
    pooled as the prediction)."""
    if not TED[lp].exists():
        pytest.skip(f"TED MQM data absent ({TED[lp]})")
    segs, _ = read_spans(TED[lp], raters="all")
    groups: dict[tuple[str | None, str | None], list[SpanSegment]] = defaultdict(list)
    for s in segs:
        groups[(s.seg_id, s.hypothesis)].append(s)
    lengths, gold, pred = [], [], []
    for (_, hyp), group in sorted(groups.items(), key=lambda kv: (kv[0][0] or "", kv[0][1] or "")):
        if len(group) < 2:
            continue
        group.sort(key=lambda s: s.system or "")
        for k in range(len(group) - 1):  # each annotation the gold of the next one(s)
            lengths.append(len(hyp or ""))
            gold.append(list(group[k].spans))
            pred.append([sp for other in group[k + 1:k + 1 + pooled] for sp in other.spans])
    return lengths, gold, pred


def ours(v: SpanVariant, lengths: list[int], gold: list[list[Span]], pred: list[list[Span]]) -> list[float]:
    s = score_segments(v, lengths, gold, pred)
    return [s.precision, s.recall, s.f1]


# ------------------------------------------------------------------ the tables and the spec
def test_every_combination_is_a_variant_once():
    names = [v.name for v in all_variants()]
    assert len(names) == len(set(names)) == 2 + (len(MATCHES) - 1) * len(MATCHINGS) * len(AVERAGES) == 26
    assert SpanVariant().official and SpanVariant().name == "wmt25/many/micro"


def test_variant_spec_refuses_what_it_cannot_score():
    with pytest.raises(InputError, match="unknown span match 'fuzzy'"):
        SpanVariant("fuzzy")
    with pytest.raises(InputError, match="unknown span matching"):
        SpanVariant("mpp", "hungarian")
    with pytest.raises(InputError, match="unknown span average"):
        SpanVariant("mpp", "optimal", "weighted")
    with pytest.raises(InputError, match="pairs no spans"):
        SpanVariant("wmt25", "greedy")
    assert parse_variant("mpp") == SpanVariant("mpp", None, "micro")
    assert parse_variant("overlap/many/macro").name == "overlap/many/macro"
    with pytest.raises(InputError, match="not match"):
        parse_variant("mpp/optimal/micro/x")


# ------------------------------------------------------------------ hand-worked cases (numbers checked by hand
# and given by the library)
def S(a: int, b: int, sev: str = "major") -> Span:
    return Span(a, b, sev)


# gold 0-10 and 20-24; predicted 0-4, 2-10 and 30-32 (two predictions on one gold span, one stray)
GOLD = [[S(0, 10), S(20, 24)]]
PRED = [[S(0, 4), S(2, 10), S(30, 32)]]


@pytest.mark.parametrize(("name", "expected"), [
    # one-to-one: the best pairing takes 2-10 for 0-10 (8 chars, MPP 8/8 and 8/10)
    ("exact/optimal/micro", (0.0, 0.0, 0.0)),
    ("overlap/optimal/micro", (1 / 3, 1 / 2, 0.4)),
    ("wmt23/optimal/micro", (8 / 14, 8 / 14, 8 / 14)),
    ("mpp/optimal/micro", (1 / 3, 0.4, 2 * (1 / 3) * 0.4 / (1 / 3 + 0.4))),
    ("mpp/greedy/micro", (1 / 3, 0.4, 2 * (1 / 3) * 0.4 / (1 / 3 + 0.4))),
    # many-to-many: both predictions overlap the first gold span, each credited with its own coverage
    ("overlap/many/micro", (2 / 3, 1 / 2, 2 * (2 / 3) * 0.5 / (2 / 3 + 0.5))),
    ("wmt23/many/micro", (10 / 14, 10 / 14, 10 / 14)),
    # chars 2-4 are covered twice by predictions, once by gold: each prediction gets half of them
    ("mpp/many/micro", ((3 / 4 + 7 / 8) / 3, 1 / 2, 2 * (13 / 24) * 0.5 / (13 / 24 + 0.5))),
])
def test_hand_worked_cases(name: str, expected: tuple[float, float, float]):
    assert ours(parse_variant(name), [40], GOLD, PRED) == pytest.approx(list(expected), abs=1e-12)


def test_macro_averages_segments_and_empty_segments_score_one():
    gold = [[S(0, 4)], [], [S(0, 2)]]
    pred = [[S(0, 4)], [], []]
    r = score_segments(parse_variant("exact/optimal/macro"), [10, 10, 10], gold, pred)
    assert (r.precision, r.recall, r.f1) == pytest.approx((1.0, 2 / 3, 2 / 3))
    micro = score_segments(parse_variant("exact/optimal/micro"), [10, 10, 10], gold, pred)
    assert (micro.precision, micro.recall) == (1.0, 0.5)


def test_official_default_is_unchanged_and_macro_is_per_segment():
    gold = [[S(0, 4)], [S(0, 2, "minor")]]
    pred = [[S(0, 4, "minor")], []]
    official = score_segments(SpanVariant(), [10, 10], gold, pred)
    assert (official.precision, official.recall) == (0.5, 2 / 6)  # 2 half-credited chars of 4 predicted, 6 gold
    macro = score_segments(SpanVariant("wmt25", None, "macro"), [10, 10], gold, pred)
    assert macro.precision == pytest.approx((0.5 + 1.0) / 2) and macro.recall == pytest.approx((0.5 + 0.0) / 2)


def test_undecided_and_unlocated_spans_are_not_scored():
    gold = [[S(0, 4), Span(None, None, "major"), S(5, 7, "undecided")]]
    r = score_segments(parse_variant("exact"), [10], gold, [[S(0, 4)]])
    assert (r.precision, r.recall) == (1.0, 1.0)


def test_span_f1_reports_the_variant_only_when_not_official():
    g = [SpanSegment("s", "d", "1", (S(0, 4),), lp="en-de", hypothesis="x" * 10)]
    p = [SpanSegment("s", "d", "1", (S(1, 4),), lp="en-de")]
    assert "variant" not in span_f1(g, p).as_dict()
    out = span_f1(g, p, variant=parse_variant("mpp/greedy/macro")).as_dict()
    assert out["variant"] == {"match": "mpp", "matching": "greedy", "average": "macro"}
    assert out["en-de"]["precision"] == 1.0 and out["en-de"]["recall"] == 0.75


# ------------------------------------------------------------------ the library itself, on real spans
def test_hand_case_equals_the_library():
    got = run_library(GOLD, PRED, LIBRARY_VARIANTS)
    for v, lib in zip(LIBRARY_VARIANTS, got, strict=True):
        assert ours(v, [40], GOLD, PRED) == pytest.approx(lib, abs=1e-12), v.name


@pytest.mark.parametrize("lp", sorted(TED))
@pytest.mark.parametrize("pooled", [1, 3])
def test_every_variant_equals_span_mt_metrics_eval_on_ted(lp: str, pooled: int):
    lengths, gold, pred = ted_pairs(lp, pooled)
    assert len(gold) > 2000 and sum(map(len, gold)) > 900  # real volume: thousands of pairs, ~1,000 gold spans
    got = run_library(gold, pred, LIBRARY_VARIANTS)
    worst = 0.0
    for v, lib in zip(LIBRARY_VARIANTS, got, strict=True):
        mine = ours(v, lengths, gold, pred)
        worst = max(worst, *(abs(a - b) for a, b in zip(mine, lib, strict=True)))
        assert mine == pytest.approx(lib, abs=1e-9, rel=0), v.name
    assert worst <= 1e-9


def random_segments(seed: int, n: int = 400, crowded: bool = False) -> tuple[list[int], list[list[Span]],
                                                                             list[list[Span]]]:
    """Segments built to hit the hard cases: duplicate and nested spans, shared starts, both severities,
    conflicts for one gold span, empty sides."""
    import random

    rng = random.Random(seed)

    def spans(k: int) -> list[Span]:
        out = []
        for _ in range(k):
            a = rng.randrange(0, 30)
            out.append(S(a, a + rng.randrange(1, 12), rng.choice(["major", "minor"])))
        if out and rng.random() < 0.2:
            out.append(out[0])  # an exact duplicate
        return out

    if crowded:  # many spans over few characters: the optimal MPP search's worst case
        gold = [spans(rng.choice([7, 8, 9])) for _ in range(n)]
        pred = [spans(rng.choice([8, 9, 10])) for _ in range(n)]
    else:
        gold = [spans(rng.choice([0, 0, 1, 2, 3, 5])) for _ in range(n)]
        pred = [spans(rng.choice([0, 1, 2, 4, 6])) for _ in range(n)]
    return [50] * n, gold, pred


@pytest.mark.parametrize(("seed", "crowded"), [(1, False), (2, False), (3, True)])
def test_every_variant_equals_the_library_on_hard_random_segments(seed: int, crowded: bool):
    lengths, gold, pred = random_segments(seed, 60 if crowded else 400, crowded)
    got = run_library(gold, pred, LIBRARY_VARIANTS)
    for v, lib in zip(LIBRARY_VARIANTS, got, strict=True):
        assert ours(v, lengths, gold, pred) == pytest.approx(lib, abs=1e-9, rel=0), v.name


# ------------------------------------------------------------------ rankings on real data
def rater_predictions(lp: str) -> tuple[list[SpanSegment], dict[str, list[SpanSegment]]]:
    """TED raters as span metrics: for each translation several systems produced alike, the first
    annotation (by system name) is the gold and each other rater's annotation of it their prediction."""
    import csv
    from dataclasses import replace

    if not TED[lp].exists():
        pytest.skip(f"TED MQM data absent ({TED[lp]})")
    with open(TED[lp], encoding="utf-8") as fh:
        raters = sorted({r["rater"] for r in csv.DictReader(fh, delimiter="\t", quoting=csv.QUOTE_NONE)})
    groups: dict[tuple[str | None, str | None], list[tuple[str, str, SpanSegment]]] = defaultdict(list)
    for rater in raters:
        for s in read_spans(TED[lp], raters=rater)[0]:
            groups[(s.seg_id, s.hypothesis)].append((s.system or "", rater, s))
    gold: list[SpanSegment] = []
    preds: dict[str, list[SpanSegment]] = defaultdict(list)
    for n, (_, members) in enumerate(sorted(groups.items(), key=lambda kv: (kv[0][0] or "", kv[0][1] or ""))):
        members.sort(key=lambda m: m[0])
        first = members[0][1]
        others: dict[str, SpanSegment] = {}
        for _, rater, seg in members[1:]:
            if rater != first:
                others.setdefault(rater, seg)
        if not others:
            continue
        ids = {"system": "g", "doc_id": "d", "seg_id": str(n), "set_id": None}
        gold.append(replace(members[0][2], **ids))
        for rater, seg in others.items():
            preds[rater].append(replace(seg, **ids, hypothesis=None))
    return gold, {r: p for r, p in preds.items() if len(p) >= 50}


def test_the_best_rater_changes_with_the_variant_on_ted_zh_en():
    from polyjudge.metaeval.spans import rank_span_metrics

    gold, preds = rater_predictions("zh-en")
    names = ["wmt25/many/micro", "exact/optimal/micro", "overlap/optimal/micro", "mpp/optimal/micro",
             "mpp/optimal/macro"]
    ranking = rank_span_metrics(gold, preds, [parse_variant(n) for n in names], set_ids=None, missing="skip")
    winners = {v.name: [m for m, r in ranking.ranks(v).items() if r == 1] for v in ranking.variants}
    assert winners == {"wmt25/many/micro": ["rater9"], "exact/optimal/micro": ["rater1"],
                       "overlap/optimal/micro": ["rater4"], "mpp/optimal/micro": ["rater1"],
                       "mpp/optimal/macro": ["rater4"]}
    changes = {c["variant"]: c for c in ranking.changes()}
    assert len(changes["exact/optimal/micro"]["moved"]) == 6 and changes["mpp/optimal/macro"]["kendall_tau"] < 0.5


def test_ranks_share_ties_and_tau_is_scipys():
    from scipy.stats import kendalltau

    from polyjudge.metaeval.spans.ranking import VariantRanking, ranks_of

    assert ranks_of({"a": 0.5, "b": 0.7, "c": 0.5, "d": 0.1}) == {"b": 1, "a": 2, "c": 2, "d": 4}
    v1, v2 = parse_variant("exact"), parse_variant("mpp/many/macro")
    f1 = {v1.name: {"a": 0.1, "b": 0.2, "c": 0.3}, v2.name: {"a": 0.3, "b": 0.2, "c": 0.25}}
    r = VariantRanking((v1, v2), ("a", "b", "c"), f1)
    (change,) = r.changes()
    assert change["moved"] == ["a", "b", "c"] and change["winner"] == ["a"]  # 3, 2, 1 -> 1, 3, 2
    assert change["kendall_tau"] == pytest.approx(kendalltau([0.1, 0.2, 0.3], [0.3, 0.2, 0.25]).statistic)
    with pytest.raises(InputError, match="at least two"):
        from polyjudge.metaeval.spans import rank_span_metrics

        rank_span_metrics([], {"a": []}, [v1])


def test_optimal_mpp_search_stays_fast_on_a_crowded_segment():
    """Twenty predicted and twenty gold spans all overlapping: the plain search (the library's) takes minutes
    from about twelve; the assignment bounds keep it well under a second or two."""
    import random
    import time

    from polyjudge.metaeval.spans.variants import mpp_optimal_pairs

    rng = random.Random(0)
    pred = [(a, a + rng.randrange(5, 30), "major") for a in (rng.randrange(0, 10) for _ in range(20))]
    gold = [(a, a + rng.randrange(5, 30), "major") for a in (rng.randrange(0, 10) for _ in range(20))]
    started = time.perf_counter()
    pairs = mpp_optimal_pairs(pred, gold)
    assert time.perf_counter() - started < 20 and len(pairs) == 20
