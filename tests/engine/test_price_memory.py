"""What genai-prices gave for a judge is remembered in the shared response cache (issue 35): a later run
prices the judge the same without loading genai-prices (about 0.1 s of CPU a run), and a new version of
genai-prices or a new day asks it again. A damaged entry is asked again, never trusted."""

import json
import subprocess
import sys
from pathlib import Path

import pytest
from hypothesis import given
from hypothesis import strategies as st

from polyjudge.api import JudgeConfig, judge
from polyjudge.cache import ResponseCache
from polyjudge.engine.caching import RememberedPrices
from polyjudge.engine.pricing import MAX_PRICE, ModelPrice, PriceTier, maintained_price, maintained_source
from tests.engine.test_form_memory import _items
from tests.helpers.openai_server import Reply, ScriptedServer

ROOT = Path(__file__).resolve().parents[2]
PRICED = "gpt-4o-mini"  # a model genai-prices knows
UNPRICED = "my-own-finetune"  # one it does not


def _answer(body):
    return Reply(content=json.dumps({"score": 70}))


# The second run, in a fresh interpreter: whether it loaded genai-prices, and what its manifest says.
SECOND_RUN = """
import json, sys
from polyjudge.api import JudgeConfig, judge
items, out, cache, judge_name = sys.argv[1:]
judge(items, JudgeConfig(protocol="da", concurrency=4, cache_path=cache, judges=(judge_name,)), out=out)
m = json.loads(open(out + "/manifest.json", encoding="utf-8").read())
print(json.dumps({"genai_prices_loaded": "genai_prices" in sys.modules, "prices": m.get("prices"),
                  "price_sources": m.get("price_sources"), "price_unknown": m.get("price_unknown"),
                  "cost": m.get("cost", m.get("usage", {}).get("cost"))}))
"""


def _second_run(tmp_path, cache, judge_name):
    items = _items(tmp_path, "second")
    proc = subprocess.run([sys.executable, "-c", SECOND_RUN, str(items), str(tmp_path / "second"), str(cache),
                           judge_name], capture_output=True, text=True, cwd=ROOT, timeout=120)
    assert proc.returncode == 0, proc.stderr
    return json.loads(proc.stdout.strip().splitlines()[-1])


@pytest.mark.parametrize("model", [PRICED, UNPRICED])
def test_a_later_run_prices_the_judge_without_loading_genai_prices(tmp_path, model):
    cache = tmp_path / "cache"
    with ScriptedServer(_answer) as srv:
        name = f"openai:{model}@{srv.base_url}"
        judge(_items(tmp_path, "first"), JudgeConfig(protocol="da", concurrency=4, cache_path=str(cache),
                                                     judges=(name,)), out=tmp_path / "first")
        first = json.loads((tmp_path / "first" / "manifest.json").read_text(encoding="utf-8"))
        second = _second_run(tmp_path, cache, name)
    assert second["genai_prices_loaded"] is False
    assert second["prices"] == first["prices"]
    assert second["price_sources"] == first["price_sources"]
    assert second["price_unknown"] == first["price_unknown"]
    if model == PRICED:
        assert second["prices"][model] == list(maintained_price(model).pair())
    else:
        assert second["price_unknown"] == [model]


def test_a_damaged_or_stale_entry_is_asked_again(tmp_path):
    cache = tmp_path / "cache"
    with ScriptedServer(_answer) as srv:
        name = f"openai:{PRICED}@{srv.base_url}"
        judge(_items(tmp_path, "first"), JudgeConfig(protocol="da", concurrency=4, cache_path=str(cache),
                                                     judges=(name,)), out=tmp_path / "first")
        with ResponseCache(cache) as kept:
            (source,) = {r[0] for r in kept._db.execute("SELECT source FROM prices")}
            assert source.startswith(maintained_source() + " ")
            # A lie the cache might hold: a damaged row, and another day's price for the same model.
            kept._db.execute("UPDATE prices SET price = '{\"input\": \"free\"' WHERE model = ?", (PRICED,))
            kept._db.execute("INSERT INTO prices VALUES ('genai-prices 0.0.1 2000-01-01', ?, ?)",
                             (PRICED, json.dumps(ModelPrice(0.0, 0.0).to_json())))
        second = _second_run(tmp_path, cache, name)
    assert second["genai_prices_loaded"] is True  # the damaged entry was not trusted
    assert second["prices"][PRICED] == list(maintained_price(PRICED).pair())
    with ResponseCache(cache) as kept:
        rows = kept._db.execute("SELECT source, price FROM prices").fetchall()
    assert rows == [(source, json.dumps(maintained_price(PRICED).to_json()))]  # repaired; the stale day is gone


@pytest.mark.parametrize("damaged", [
    {"input": float("nan"), "output": 1.0},
    {"input": 1.0, "output": 1e300},
    {"input": 1.0, "output": 2.0, "tiers": [{"above": 200000, "input": float("nan"), "output": 1.0}]},
    {"input": 1.0, "output": 2.0, "tiers": [{"above": -1, "input": 1.0, "output": 1.0}]},
    {"input": 1.0, "output": 2.0, "batch_discount": 2},
    [1.0, 2.0],
])
def test_a_remembered_price_that_is_no_price_is_asked_again(tmp_path, damaged):
    """What the cache holds is data from disk: a price no run could have written is never used."""
    from polyjudge.engine.caching import CacheUse

    with ResponseCache(tmp_path / "cache") as kept:
        memo = RememberedPrices(CacheUse(kept, {}, read=True))
        kept.put_looked_up_price(memo.source, PRICED, json.dumps(damaged))
        assert memo.get(PRICED) == (False, None)


def test_cache_clear_forgets_the_prices(tmp_path):
    cache = tmp_path / "cache"
    with ResponseCache(cache) as kept:
        kept.put_looked_up_price("genai-prices 1 2026-01-01", "m", "null")
        assert kept.looked_up_price("genai-prices 1 2026-01-01", "m") == "null"
        kept.clear()
        assert kept.looked_up_price("genai-prices 1 2026-01-01", "m") is None


def test_a_run_that_may_not_read_the_cache_asks_genai_prices(tmp_path):
    """``--record`` (the cache is written, not read): a remembered price is not taken either."""
    from polyjudge.engine.caching import CacheUse

    with ResponseCache(tmp_path / "cache") as kept:
        memo = RememberedPrices(CacheUse(kept, {}, read=False))
        memo.put(PRICED, ModelPrice(1.0, 2.0))
        assert memo.get(PRICED) == (False, None)
        assert RememberedPrices(CacheUse(kept, {}, read=True)).get(PRICED) == (True, ModelPrice(1.0, 2.0))


_price = st.floats(0, MAX_PRICE, allow_nan=False, allow_infinity=False)


@given(_price, _price, st.none() | _price, st.floats(0, 1), st.lists(st.tuples(st.integers(0, 10**7), _price, _price,
                                                                            st.none() | _price), max_size=3))
def test_a_price_reads_back_as_written(inp, out, cached, discount, tiers):
    price = ModelPrice(inp, out, cached, discount, tuple(PriceTier(*t) for t in sorted(tiers, key=lambda t: t[0])))
    assert ModelPrice.from_json(json.loads(json.dumps(price.to_json()))) == price
