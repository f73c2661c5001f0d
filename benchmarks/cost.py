"""What judging the whole TED en-de MQM file ten times costs, four ways (no request is sent).

Counts come from the engine's own estimate path (what ``polyjudge judge
--dry-run`` prints): requests, prompt tokens (UTF-8 bytes / 4) with the
share a provider's prompt cache would likely serve (prefixes of 1,024
tokens or more shared with the previous request, in steps of 128; none in a
batch), and USD at gpt-4.1-mini's prices from the built-in price table, as

* an upper bound (every completion at the protocol's token limit, no cache
  credit), and
* with likely cache hits and completions at ``--completion-tokens`` each
  (a typical answer, for a realistic figure).

Ways of sending: one request per item and run (0.1.0), deduplicated (one
request per distinct prompt and run), deduplicated with 10 samples per
request, deduplicated through the Batch API (and both). Ratios are to 0.1.0.

Then the same study (deduplicated, live and through a Batch API) priced for
each of ``--models`` (current models; prices from genai-prices, with the
source of each, long-context tiers chosen by prompt size).

    python benchmarks/cost.py [--input ../shared/data/wmt-mqm/ted/ende/mqm_ted_ende.tsv]
                              [--protocol mqm] [--runs 10] [--model gpt-4.1-mini] [--completion-tokens 200]
                              [--models gpt-5-mini,gemini-2.5-flash,claude-sonnet-4-5,...]
"""

from __future__ import annotations

import argparse
import dataclasses
import sys
import time
from pathlib import Path
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from polyjudge.engine.core import CostScenario
    from polyjudge.engine.pricing import ModelPrice

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "src"))

DEFAULT_INPUT = ROOT.parent / "shared" / "data" / "wmt-mqm" / "ted" / "ende" / "mqm_ted_ende.tsv"
CURRENT_MODELS = "gpt-5-mini,gpt-5,gemini-2.5-flash,claude-sonnet-4-5,claude-haiku-4-5"


def _typical(s: CostScenario, price: ModelPrice, completion: int) -> float:
    """USD of a scenario with its likely cache hits and ``completion`` tokens answered in all."""
    cached = s.cached_prompt_tokens
    cached_price = price.input if price.cached_input is None else price.cached_input
    usd = ((s.prompt_tokens - cached) * price.input + cached * cached_price + completion * price.output) / 1e6
    return usd * ((1 - price.batch_discount) if s.batch else 1.0)


def price_models(items: list[Any], protocol: Any, models: list[str], runs: int, completion_tokens: int) -> None:
    """The deduplicated study's USD for each model: at most, and typical (likely cache hits, typical answers)."""
    from polyjudge.engine.core import estimate
    from polyjudge.engine.plan import plan_tasks
    from polyjudge.engine.pricing import default_prices

    prices = default_prices()
    head = f"{'model':<20} {'price source':<20} {'in/cached/out per Mtok':<22} {'live max':>9} {'live typ':>9} " \
           f"{'batch max':>9} {'batch typ':>9}"
    print(head)
    print("-" * len(head))
    for model in models:
        if model not in prices:
            print(f"{model:<20} no price known")
            continue
        tasks = plan_tasks(items, protocol, [model], runs=runs, temperature=0.0, seed=0)
        est = estimate(tasks, set(), prices=prices)
        live = next(s for s in est.scenarios if s.samples_per_request == 1 and not s.batch)
        batch = next(s for s in est.scenarios if s.samples_per_request == 1 and s.batch)
        flat = prices[model].at(live.prompt_tokens / max(live.requests, 1))  # its tier at the mean prompt
        completion = completion_tokens * est.requests_to_send
        cached = flat.input if flat.cached_input is None else flat.cached_input
        rates = f"${flat.input:g}/{cached:g}/{flat.output:g}"
        assert live.cost_usd is not None and batch.cost_usd is not None
        live_typ, batch_typ = _typical(live, flat, completion), _typical(batch, flat, completion)
        print(f"{model:<20} {prices.source(model) or '':<20} {rates:<22} {live.cost_usd:>9.2f} {live_typ:>9.2f} "
              f"{batch.cost_usd:>9.2f} {batch_typ:>9.2f}")


def main() -> None:
    from polyjudge.api import JudgeConfig, build_protocol
    from polyjudge.data.readers import read_items
    from polyjudge.engine.core import estimate
    from polyjudge.engine.plan import plan_tasks
    from polyjudge.engine.pricing import PRICES_AS_OF, default_prices

    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--input", default=str(DEFAULT_INPUT))
    ap.add_argument("--protocol", default="mqm")
    ap.add_argument("--runs", type=int, default=10)
    ap.add_argument("--model", default="gpt-4.1-mini")
    ap.add_argument("--models", default=CURRENT_MODELS, help="Comma-separated models to price the study for.")
    ap.add_argument("--completion-tokens", type=int, default=200,
                    help="Typical completion length for the realistic figure (the upper bound uses the limit).")
    args = ap.parse_args()
    if not Path(args.input).is_file():
        sys.exit(f"{args.input} not found (the TED MQM file lives in ../shared/data/wmt-mqm/ted/ende/)")

    started = time.perf_counter()
    items = read_items(args.input)
    protocol = build_protocol(JudgeConfig(protocol=args.protocol))
    prices = default_prices()
    price = prices[args.model]
    tasks = plan_tasks(items, protocol, [args.model], runs=args.runs, temperature=protocol.default_temperature,
                       seed=0)
    # 0.1.0 sent one request per item and run: the same tasks with keys no two items share.
    per_item = [dataclasses.replace(t, key=f"{t.key}/{t.item_index}") for t in tasks]
    before = estimate(per_item, set(), prices=prices)
    after = estimate(tasks, set(), prices=prices, samples_per_request=args.runs)

    def scenario(est: object, spr: int, batch: bool) -> CostScenario:
        assert hasattr(est, "scenarios")
        return next(s for s in est.scenarios if s.samples_per_request == spr and s.batch == batch)

    rows = [("one request per item and run (0.1.0)", scenario(before, 1, False)),
            ("deduplicated", scenario(after, 1, False)),
            (f"deduplicated + {args.runs} samples per request", scenario(after, args.runs, False)),
            ("deduplicated + batch", scenario(after, 1, True)),
            (f"deduplicated + {args.runs} samples per request + batch", scenario(after, args.runs, True))]

    def typical(s: CostScenario) -> float:
        """USD with likely cache hits and completions of the typical length."""
        cached = s.cached_prompt_tokens
        cached_price = price.input if price.cached_input is None else price.cached_input
        # one completion per request sent (0.1.0) or per distinct key (dedup; n choices are n completions)
        completion = args.completion_tokens * (len(tasks) if s is rows[0][1] else after.requests_to_send)
        usd = ((s.prompt_tokens - cached) * price.input + cached * cached_price + completion * price.output) / 1e6
        return usd * ((1 - price.batch_discount) if s.batch else 1.0)

    sharing = {t.prompt_hash for t in tasks if t.run_index == 0}
    shared_items = len(items) - len(sharing)
    counts: dict[str, int] = {}
    for t in tasks:
        if t.run_index == 0:
            counts[t.prompt_hash] = counts.get(t.prompt_hash, 0) + 1
    in_shared = sum(n for n in counts.values() if n > 1)
    print(f"{args.input}: {len(items):,} items, {len(sharing):,} distinct prompts; {in_shared:,} items "
          f"({in_shared / len(items):.1%}) share their prompt with another item ({shared_items:,} requests saved "
          f"per run); protocol {protocol.name}, {args.runs} runs, max {protocol.max_tokens} completion tokens")
    print(f"prices: {args.model} ${price.input}/${price.cached_input}/${price.output} per million input/cached/output "
          f"tokens, batch {price.batch_discount:.0%} off (table of {PRICES_AS_OF})")
    base = rows[0][1]
    base_typical = typical(base)
    head = (f"{'way of sending':<52} {'requests':>9} {'prompt tokens':>14} {'cached':>7} {'USD max':>10} "
            f"{'ratio':>6} {'USD typical':>12} {'ratio':>6}")
    print(head)
    print("-" * len(head))
    for label, s in rows:
        assert s.cost_usd is not None
        share = s.cached_prompt_tokens / s.prompt_tokens if s.prompt_tokens else 0.0
        t = typical(s)
        print(f"{label:<52} {s.requests:>9,} {s.prompt_tokens:>14,} {share:>7.1%} {s.cost_usd:>10.2f} "
              f"{s.cost_usd / (base.cost_usd or 1):>6.3f} {t:>12.2f} {t / base_typical:>6.3f}")
    print(f"(USD max: completions at the limit, no cache credit; USD typical: likely cache hits and "
          f"{args.completion_tokens} completion tokens per judgment; computed in {time.perf_counter() - started:.1f}s, "
          "nothing sent)")
    print()
    price_models(items, protocol, [m for m in args.models.split(",") if m], args.runs, args.completion_tokens)


if __name__ == "__main__":
    main()
