"""Small synthetic run directories in the format of DEVELOPERS.md, for report tests.

Deterministic (seeded), with failures of every kind, TSA-style error spans
(code-point offsets, omissions as empty spans), texts outside the BMP, and
optionally hostile text that must show up escaped in the report.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import numpy as np

INJECT_TGT = '<script>window.__pwned=1</script><img src=x onerror="window.__pwned=2"> Hallo'
INJECT_SYSTEM = "<b>sys</b>&amp;"
INJECT_DESC = "bad </script><!-- <script>window.__pwned=3</script>"

WORDS = ["Haus", "gut", "Straße", "über", "🙂", "Katze", "läuft", "schnell", "die", "der", "und", "nicht"]
CATEGORIES = ["accuracy/mistranslation", "fluency/grammar", "terminology", "style/awkward"]
WEIGHTS = {"minor": 1.0, "major": 5.0, "critical": 10.0}
# USD per million input/output tokens the fixture runs were "charged" (models not listed cost nothing).
PRICES = {"gpt-4.1-mini": (0.40, 1.60)}


def build_run(root: Path, *, name: str = "run", n_items: int = 12, n_runs: int = 3,
              judges: tuple[str, ...] = ("gpt-4.1-mini",), systems: tuple[str, ...] = ("sysA", "sysB", "sysC"),
              spans: bool = True, failures: bool = True, inject: bool = False,
              texts_in: str = "segments", extras: dict[str, Any] | None = None, seed: int = 0,
              manifest: dict[str, Any] | None = None) -> Path:
    """Write a run directory under ``root/name`` and return its path.

    ``texts_in`` is ``segments`` (src/tgt columns of segments.tsv), ``items``
    (an items.jsonl file), ``judgments`` (fields of each judgment) or ``none``.
    """
    rng = np.random.default_rng(seed)
    d = root / name
    d.mkdir(parents=True, exist_ok=True)
    systems = list(systems)
    if inject:
        systems[-1] = INJECT_SYSTEM
    items = []
    for i in range(n_items):
        words = rng.choice(WORDS, size=int(rng.integers(3, 9)))
        tgt = " ".join(words)
        if inject and i == 0:
            tgt = INJECT_TGT
        items.append({"system": systems[i % len(systems)], "doc_id": f"doc{i // 6}",
                      "seg_id": str(i // len(systems)), "src": f"source sentence {i} <i>ok</i>", "tgt": tgt})

    lines = []
    seg_scores: list[list[float]] = [[] for _ in items]
    n_failed = [0] * n_items
    for i, it in enumerate(items):
        n_cp = len(it["tgt"])  # Python str length = code points
        for judge in judges:
            for r in range(n_runs):
                rec: dict[str, Any] = {"item_index": i, "system": it["system"], "doc_id": it["doc_id"],
                                       "seg_id": it["seg_id"], "run_index": r, "judge": judge,
                                       "usage": {"prompt_tokens": 100 + i, "completion_tokens": 20 + r},
                                       "latency_s": round(0.5 + 0.1 * r, 3)}
                if texts_in == "judgments":
                    rec["src"], rec["tgt"] = it["src"], it["tgt"]
                kind = (i * 7 + r * 3) % 23 if failures else -1
                if kind in (0, 1, 2) and i > 0:
                    status = ("parse_failed", "request_failed", "truncated")[kind]
                    rec.update(status=status, error={"parse_failed": "no JSON object in the answer",
                                                     "request_failed": "HTTP 500 after 3 retries",
                                                     "truncated": "finish_reason=length"}[status],
                               raw_text="I think the translation is {broken" if status != "request_failed" else "",
                               annotation=None, score=None)
                    n_failed[i] += 1
                else:
                    errs = []
                    if spans:
                        for _ in range(int(rng.integers(0, 4))):
                            a = int(rng.integers(0, max(n_cp, 1)))
                            b = a if rng.random() < 0.15 else int(rng.integers(a + 1, n_cp + 1)) if a < n_cp else a
                            sev = str(rng.choice(["minor", "major", "critical"], p=[0.6, 0.3, 0.1]))
                            e = {"start": a, "end": b, "severity": sev, "category": str(rng.choice(CATEGORIES))}
                            if rng.random() < 0.5:
                                e["description"] = f"problem near {it['tgt'][a:b] or 'here'}"
                            errs.append(e)
                        if inject and i == 0:
                            errs.append({"start": 0, "end": 8, "severity": "major",
                                         "category": "fluency/<i>markup</i>", "description": INJECT_DESC})
                        annotation: Any = {"spans": errs}
                        score = -sum(WEIGHTS[e["severity"]] for e in errs)
                    else:
                        score = float(rng.integers(0, 101))
                        annotation = {"score": score}
                    rec.update(status="ok", error=None, raw_text=json.dumps(annotation), annotation=annotation,
                               score=score)
                    seg_scores[i].append(score)
                lines.append(rec)
    with (d / "judgments.jsonl").open("w", encoding="utf-8") as f:
        for rec in lines:
            f.write(json.dumps(rec, ensure_ascii=False) + "\n")

    cols = ["system", "doc_id", "seg_id", "score", "runs_ok", "runs_failed"]
    if texts_in == "segments":
        cols += ["src", "tgt"]
    with (d / "segments.tsv").open("w", encoding="utf-8") as f:
        f.write("\t".join(cols) + "\n")
        for i, it in enumerate(items):
            sc = f"{np.mean(seg_scores[i]):.6g}" if seg_scores[i] else ""
            row = [it["system"], it["doc_id"], it["seg_id"], sc, str(len(seg_scores[i])), str(n_failed[i])]
            if texts_in == "segments":
                row += [it["src"], it["tgt"]]
            f.write("\t".join(row) + "\n")
    if texts_in == "items":
        with (d / "items.jsonl").open("w", encoding="utf-8") as f:
            for it in items:
                f.write(json.dumps(it, ensure_ascii=False) + "\n")
    with (d / "systems.tsv").open("w", encoding="utf-8") as f:
        f.write("system\tscore\tn_segments\n")
        for s in dict.fromkeys(it["system"] for it in items):
            v = [np.mean(seg_scores[i]) for i, it in enumerate(items) if it["system"] == s and seg_scores[i]]
            f.write(f"{s}\t{np.mean(v):.6g}\t{len(v)}\n")

    # As the engine records cost: the prices of the judged models at judge time, and the total.
    prices = {j: PRICES[j] for j in judges if j in PRICES}
    cost = sum(rec["usage"]["prompt_tokens"] * prices.get(rec["judge"], (0.0, 0.0))[0]
               + rec["usage"]["completion_tokens"] * prices.get(rec["judge"], (0.0, 0.0))[1] for rec in lines) / 1e6
    m = {"format_version": 1,
         "signature": f"polyjudge:0.1|protocol:{'tsa' if spans else 'da'}|judge:{'+'.join(judges)}|runs:{n_runs}",
         "protocol": "tsa" if spans else "da", "judges": [{"model": j} for j in judges],
         "config": {"runs": n_runs, "temperature": 0.4, "aggregator": "mean"},
         "cost_usd": round(cost, 6), "prices": {j: list(p) for j, p in prices.items()},
         "wall_time_s": 12.5}
    m.update(manifest or {})
    (d / "manifest.json").write_text(json.dumps(m, indent=1), encoding="utf-8")
    for fname, obj in (extras or {}).items():
        (d / fname).write_text(json.dumps(obj, ensure_ascii=False), encoding="utf-8")
    return d


METAEVAL = {"results": [
    {"metric": m, "lp": lp, "level": lvl, "statistic": "pearson", "value": v, "ci": [v - 0.05, v + 0.05]}
    for (m, lp, lvl, v) in [
        ("judge-a", "en-de", "seg", 0.41), ("judge-b", "en-de", "seg", 0.35),
        ("judge-a", "zh-en", "seg", 0.30), ("judge-b", "zh-en", "seg", 0.38),
        ("judge-a", "en-de", "sys", 0.90), ("judge-b", "en-de", "sys", 0.80)]]}

CONSISTENCY = {"reference": "en", "results": [
    {"judge": j, "language": lg, "kappa": k, "task": "xquad", "criterion": "yes/no"}
    for j, ks in (("gpt-4o", [0.35, 0.30, 0.22, 0.41]), ("aya-32b", [0.2, 0.1, 0.05, 0.3]))
    for lg, k in zip(["de", "zh", "sw", "es"], ks)],
    "fleiss": [{"judge": "gpt-4o", "task": "xquad", "criterion": "yes/no", "kappa": 0.31}]}

VALIDATION = {
    "class_distribution": [
        {"case": case, "rater": rater, "class": c, "count": n}
        for case, rater, counts in (("full", "human", [10, 20, 70]), ("full", "judge", [5, 10, 85]),
                                    ("partial", "human", [30, 30, 40]), ("partial", "judge", [2, 8, 90]))
        for c, n in zip(["0", "1", "2"], counts)],
    "selection": {"target": "decision consistency", "higher_is_better": True,
                  "target_values": {"sonnet": 0.84, "mistral-small": 0.61, "gpt-4o-mini": 0.66},
                  "rows": [{"metric": "hit rate (h/h)", "selected": "sonnet",
                            "metric_values": {"sonnet": 0.7, "mistral-small": 0.6, "gpt-4o-mini": 0.5}},
                           {"metric": "MSE (srs/srs)", "selected": "mistral-small"}]}}
