"""Making a campaign: its items, the annotators and their tokens, who sees what, and sampling.

Items come from an input any polyjudge reader reads or from a run directory
(its items, and then its judge's scores). With ``--sample N`` only N items are
shown to annotators:

* ``judge-uncertainty``: the N items the judge is least sure of: the variance
  of its scores over the run's repeated runs, plus (for an expected-score run)
  the variance of the score distribution it reported. Humans then look where a
  judge's verdict is least settled.
* ``ppi``: N items drawn uniformly at random (a seeded draw), so that
  prediction-powered inference (PPI++, Angelopoulos, Duchi & Zrnic 2023; see
  :mod:`polyjudge.validation.ppi`) can combine the humans' scores on them with
  the judge's scores on every item: ``annotate status`` shows the estimate of
  the mean human score with its interval. A uniform draw is what PPI's
  guarantee needs; the judge-uncertainty sample is not one.

Every item shown gets ``per_item`` annotators, dealt round robin so each
annotator's queue has the same length (±1) and no two annotators see the same
items in the same order more than needed.
"""

from __future__ import annotations

import math
import random
import re
import secrets
from collections.abc import Sequence
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any

import numpy as np

from polyjudge.annotate.checks import MAX_CHECK_RATE, add_checks, with_suggestions
from polyjudge.annotate.schemes import DEFAULT_TASK, get_scheme
from polyjudge.annotate.store import (
    CampaignInfo,
    CampaignLock,
    ItemRow,
    check_new_campaign,
    claim_campaign,
    create_store,
)
from polyjudge.data.errors import InputError
from polyjudge.data.rating_task import RatingTask
from polyjudge.data.records import Item
from polyjudge.rundir import RunDir

SAMPLING = ("judge-uncertainty", "ppi")
MAX_ANNOTATORS = 1000
_NAME = re.compile(r"^[A-Za-z0-9][A-Za-z0-9_.@-]{0,63}$")


@dataclass(frozen=True)
class CampaignPlan:
    """What ``annotate init`` makes."""

    folder: str | Path
    items: Sequence[Item]
    scheme: str
    annotators: str = "1"  # a count ("3") or names ("ana,ben")
    per_item: int = 1
    task: RatingTask | None = None
    sample: int | None = None
    by: str | None = None
    run: str | Path | None = None
    seed: int = 0
    name: str | None = None
    guidelines: str = ""  # Markdown
    attention_checks: float = 0.0  # share of each queue added as attention checks
    prefill: str | Path | None = None  # a span protocol's run over the items: its spans are suggestions
    prefill_share: float = 1.0  # share of the items shown with the suggestions (the rest: without)


def annotator_names(spec: str) -> list[str]:
    """``"3"`` -> annotator-1..3; ``"ana,ben"`` -> those names (letters, digits, ``_.@-``)."""
    text = spec.strip()
    if text.isdigit():
        n = int(text)
        if not 1 <= n <= MAX_ANNOTATORS:
            raise InputError(f"give 1 to {MAX_ANNOTATORS} annotators, got {n}", field="annotators", setting=True)
        return [f"annotator-{k}" for k in range(1, n + 1)]
    names = [x.strip() for x in text.split(",") if x.strip()]
    if not names:
        raise InputError("give a number of annotators or their names", field="annotators", setting=True)
    for given in names:
        if not _NAME.match(given):
            raise InputError(f"annotator name {given[:40]!r}: use letters, digits, '_', '.', '@', '-' (at most 64)",
                             field="annotators", setting=True)
    if len(set(names)) != len(names):
        raise InputError("an annotator is named twice", field="annotators", setting=True)
    return names


def item_key(item: Item, index: int) -> str:
    """The key an item is known by in exports and ratings: ``extra['item_id']`` or ``id``, else
    ``system:doc_id:seg_id`` of the non-empty parts (as judge runs of the rating protocols key
    their items), else its index."""
    for k in ("item_id", "id"):
        if item.extra.get(k) not in (None, ""):
            return str(item.extra[k])
    parts = [str(p) for p in (item.system, item.doc_id, item.seg_id) if p not in (None, "")]
    return ":".join(parts) if parts else str(index)


_POSITION_KEYS = ("doc_pos", "doc_seg_id", "segment_index")


def _declared_position(item: Item) -> int | None:
    """The position in its document an item declares (WMT MQM's doc_id column is read into doc_pos)."""
    for k in _POSITION_KEYS:
        v = item.extra.get(k)
        if isinstance(v, int) and not isinstance(v, bool) and v > 0:
            return v
        if isinstance(v, str) and v.isascii() and v.isdigit() and int(v) > 0:
            return int(v)
    return None


def doc_positions(items: Sequence[Item]) -> list[int | None]:
    """Each item's 1-based position in its document: the one it declares, else its order among the
    input's items of the same system and document (None without a document)."""
    seen: dict[tuple[str, str], int] = {}
    out: list[int | None] = []
    for it in items:
        key = (it.system or "", it.doc_id or "")
        seen[key] = seen.get(key, 0) + 1
        declared = _declared_position(it)
        out.append(declared if declared is not None else seen[key] if it.doc_id else None)
    return out


def _rows(items: Sequence[Item], judge: Sequence[float | None] | None) -> list[ItemRow]:
    rows: list[ItemRow] = []
    seen: set[str] = set()
    positions = doc_positions(items)
    for i, it in enumerate(items):
        key = item_key(it, i)
        if key in seen:
            raise InputError(f"two items have the key {key[:80]!r} (item_id, or system:doc_id:seg_id)",
                             path=it.origin, field="item_id")
        seen.add(key)
        score = None if judge is None else judge[i]
        rows.append(ItemRow(i, key, it.src, it.tgt, it.src_lang or "", it.tgt_lang or "", it.system or "",
                            it.doc_id or "", it.seg_id if it.seg_id is not None else str(i), score,
                            doc_pos=positions[i]))
    return rows


def judge_view(run: str | Path, n_items: int) -> tuple[list[float | None], list[float]]:
    """(the run's final score of every item, its uncertainty) for sampling and PPI."""
    rd = RunDir.open(run)
    if len(rd.items) != n_items:
        raise InputError(f"the run has {len(rd.items)} items, the campaign's input {n_items}: give the run "
                         "that judged these items (or the run itself as --items)", path=str(run), field="run",
                         setting=True)
    judges = rd.judges
    if not judges:
        raise InputError("the run has no judgments", path=str(run), field="run", setting=True)
    runs = rd.run_scores(judges[0]).scores
    final = rd.final_scores()
    with np.errstate(all="ignore"):
        mean = np.nanmean(runs, axis=1) if runs.size else np.full(n_items, np.nan)
        spread = np.nanvar(runs, axis=1) if runs.shape[1] > 1 else np.zeros(n_items)
    spread = np.nan_to_num(spread) + _expected_variance(rd, judges[0], n_items)
    scores: list[float | None] = []
    for i in range(n_items):
        v = final[i] if i < len(final) and not math.isnan(final[i]) else mean[i]
        scores.append(None if math.isnan(v) else float(v))
    return scores, [float(x) for x in spread]


def _expected_variance(rd: RunDir, judge: str, n_items: int) -> np.ndarray:
    """Mean variance of the score distributions an expected-score run recorded, per item (0 if none)."""
    total, count = np.zeros(n_items), np.zeros(n_items)
    for j in rd.judgments:
        block = j.annotation.get("expected") if isinstance(j.annotation, dict) else None
        if j.judge != judge or not isinstance(block, dict) or j.item_index >= n_items:
            continue
        for entry in block.values():
            dist = entry.get("distribution") if isinstance(entry, dict) else None
            if isinstance(dist, list) and dist:
                v = np.array([float(x[0]) for x in dist])
                p = np.array([float(x[1]) for x in dist])
                if p.sum() > 0:
                    p = p / p.sum()
                    total[j.item_index] += float(p @ (v - p @ v) ** 2)
                    count[j.item_index] += 1
    with np.errstate(all="ignore"):
        return np.where(count > 0, total / np.maximum(count, 1), 0.0)


def choose_sample(n_items: int, sample: int, by: str, uncertainty: Sequence[float], seed: int) -> list[int]:
    """The indices of the items shown to annotators, in item order."""
    if not 1 <= sample <= n_items:
        raise InputError(f"--sample must be 1..{n_items} (the number of items)", field="sample", setting=True)
    if by == "ppi":
        if sample > n_items - 2:
            raise InputError("PPI needs at least 2 items the humans do not see (the judge's alone): sample fewer",
                             field="sample", setting=True)
        return sorted(random.Random(seed).sample(range(n_items), sample))
    if not any(u > 0 for u in uncertainty):
        raise InputError("the judge's run gives no uncertainty to rank by (one run per item, no expected-score "
                         "distributions): judge with --runs 3 or more, or sample --by ppi", field="by", setting=True)
    order = sorted(range(n_items), key=lambda i: (-uncertainty[i], i))
    return sorted(order[:sample])


def deal(shown: Sequence[int], names: Sequence[str], per_item: int) -> dict[str, list[int]]:
    """Round robin: item k of ``shown`` goes to annotators k*K .. k*K+K-1 (mod N)."""
    if not 1 <= per_item <= len(names):
        raise InputError(f"--per-item must be 1..{len(names)} (the number of annotators)", field="per_item",
                         setting=True)
    queues: dict[str, list[int]] = {n: [] for n in names}
    for k, item in enumerate(shown):
        for j in range(per_item):
            queues[names[(k * per_item + j) % len(names)]].append(item)
    return queues


def _check_plan(plan: CampaignPlan) -> None:
    check_new_campaign(plan.folder)  # before the judge's run is read or anything is built
    get_scheme(plan.scheme)
    if plan.task is not None and not get_scheme(plan.scheme).rating:
        raise InputError("a task is for forced-choice and response-set campaigns", field="task", setting=True)
    if (plan.sample is None) != (plan.by is None):
        raise InputError("give --sample N and --by together", field="sample", setting=True)
    if plan.by is not None and plan.by not in SAMPLING:
        raise InputError(f"unknown sampling {plan.by!r} (choose from {', '.join(SAMPLING)})", field="by",
                         setting=True)
    if not 0.0 <= plan.attention_checks <= MAX_CHECK_RATE:
        raise InputError(f"--attention-checks must be 0..{MAX_CHECK_RATE} (a share of each queue)",
                         field="attention_checks", setting=True)
    if not 0.0 < plan.prefill_share <= 1.0:
        raise InputError("--prefill-share must be in (0, 1]", field="prefill_share", setting=True)
    if plan.prefill is not None and not get_scheme(plan.scheme).spans:
        raise InputError("--prefill suggests error spans: give it to an mqm or esa campaign", field="prefill",
                         setting=True)
    if plan.by is not None and plan.run is None:
        raise InputError("sampling needs the judge's run directory (--run RUN)", field="run", setting=True)


def make_campaign(plan: CampaignPlan) -> dict[str, str]:
    """Create the campaign folder and store; returns annotator -> token."""
    _check_plan(plan)
    names = annotator_names(plan.annotators)
    items = list(plan.items)
    judge: list[float | None] | None = None
    shown = list(range(len(items)))
    sampling: dict[str, Any] = {}
    if plan.run is not None:
        judge, uncertainty = judge_view(plan.run, len(items))
        if plan.sample is not None and plan.by is not None:
            shown = choose_sample(len(items), plan.sample, plan.by, uncertainty, plan.seed)
            sampling = {"by": plan.by, "sample": plan.sample, "seed": plan.seed, "run": Path(plan.run).name}
    rows = _rows(items, judge)
    chosen = set(shown)
    rows = [replace(r, sampled=r.id in chosen) for r in rows]
    scheme = get_scheme(plan.scheme)
    prefill_info = None
    if plan.prefill is not None:
        rows = with_suggestions(rows, plan.prefill, scheme, plan.prefill_share, plan.seed)
        prefill_info = {"run": Path(plan.prefill).name, "share": plan.prefill_share}
    queues = deal(shown, names, plan.per_item)
    checks_info = None
    if plan.attention_checks > 0:
        rows, queues = add_checks(rows, queues, plan.attention_checks, plan.seed)
        checks_info = {"rate": plan.attention_checks, "seed": plan.seed}
    tokens = {n: secrets.token_urlsafe(24) for n in names}
    task = plan.task if plan.task is not None else (DEFAULT_TASK if scheme.rating else None)
    owned = claim_campaign(plan.folder)
    info = CampaignInfo(plan.name or owned.path.name, scheme, task, plan.per_item, sampling, plan.guidelines,
                        checks_info, prefill_info)
    with CampaignLock(owned.path):
        create_store(owned, info, rows, list(tokens.items()), queues)
    return tokens


__all__ = ["SAMPLING", "CampaignPlan", "annotator_names", "choose_sample", "deal", "item_key", "judge_view",
           "make_campaign"]
