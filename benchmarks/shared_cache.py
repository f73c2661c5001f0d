"""Requests sent for a repeated study, with and without the machine's shared response cache.

A slice of the TED en-de MQM file (``../shared/data``) is judged (``da``,
3 runs) against the scripted OpenAI-compatible server of ``tests/helpers``
into one run directory with the mean aggregator (the study a report is made
from), then again into another directory with the median aggregator: once
with the shared cache (the default) and once with ``--no-cache``. The
server counts the requests it receives; the outputs of the repeated studies
are compared byte for byte (the cached study's judgments with the first
study's, its tables with those of the study sent again).

    python benchmarks/shared_cache.py [--items 300] [--runs 3]
"""

from __future__ import annotations

import argparse
import json
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "src"))
sys.path.insert(0, str(ROOT))
TED = ROOT.parent / "shared" / "data" / "wmt-mqm" / "ted" / "ende" / "mqm_ted_ende.tsv"


def answer(body: dict) -> str:
    """A deterministic judge: a score from the prompt and the seed."""
    user = body["messages"][-1]["content"]
    return json.dumps({"score": sum(map(ord, user)) % 60 + 20 + int(body.get("seed") or 0)})


def main() -> None:
    from polyjudge.api import JudgeConfig, judge
    from polyjudge.api.runs import read_items
    from tests.helpers.openai_server import ScriptedServer

    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--items", type=int, default=300)
    ap.add_argument("--runs", type=int, default=3)
    args = ap.parse_args()
    if not TED.is_file():
        sys.exit(f"{TED} not found (../shared/data/wmt-mqm/ted/ende/)")
    items = read_items(TED)[: args.items]
    rows = []
    with tempfile.TemporaryDirectory() as tmp, ScriptedServer(answer) as srv:
        work = Path(tmp)
        base = JudgeConfig(protocol="da", judges=(f"openai:gpt-4.1-mini@{srv.base_url}",), runs=args.runs,
                           concurrency=16, cache_path=str(work / "cache"), max_failure_rate=None)
        for label, out, config in [
            ("study for the report (mean), empty cache", "report", base),
            ("again, another folder, median, shared cache", "median", base.replace(aggregator="median")),
            ("again, another folder, median, --no-cache", "median-nocache",
             base.replace(aggregator="median", use_cache=False)),
        ]:
            before, started = len(srv.requests), time.perf_counter()
            result = judge(items, config, out=work / out)
            rows.append((label, len(srv.requests) - before, result.manifest.counts.get("from_cache", 0),
                         time.perf_counter() - started))
        # The cached study's judgments are the first study's, byte for byte (latencies included); its tables
        # are those of the same study sent again (whose judgments differ only in their latencies).
        same = (work / "median" / "judgments.jsonl").read_bytes() == (work / "report" / "judgments.jsonl").read_bytes()
        same = same and all((work / "median" / n).read_bytes() == (work / "median-nocache" / n).read_bytes()
                            for n in ("segments.tsv", "systems.tsv"))
    print(f"{len(items)} TED en-de items x {args.runs} runs, protocol da, scripted OpenAI-compatible server")
    print(f"{'study':<46} {'requests sent':>13} {'from cache':>10} {'wall s':>7}")
    for label, sent, cached, wall in rows:
        print(f"{label:<46} {sent:>13,} {cached:>10,} {wall:>7.1f}")
    print("judgments.jsonl of the cached study = the first study's, and its segments.tsv, systems.tsv = those "
          f"sent again without the cache: {same}")


if __name__ == "__main__":
    main()
