"""Spending cap, rate limits, cached tokens and the price table, as the server's log shows them."""

import asyncio
import json

import pytest

from polyjudge.api import BudgetExceeded, InputError, JudgeConfig, ModelPrice, estimate, judge
from polyjudge.data.chat import GenerateRequest, Message
from polyjudge.data.records import Item
from polyjudge.engine.pricing import DEFAULT_PRICES, PRICES_AS_OF, load_prices
from polyjudge.engine.spend import Budget, RateLimiter, TokenBucket
from tests.engine.helpers import FAST_BATCH, FAST_RETRY, responder
from tests.helpers.openai_server import Reply, ScriptedServer

PRICE = ModelPrice(1000.0, 1000.0)  # USD per million tokens: about a tenth of a dollar per request here


def many_items(n=20):
    return [Item(src=f"source sentence number {i}", tgt=f"translation number {i}", src_lang="en", tgt_lang="de",
                 seg_id=str(i), system="X") for i in range(n)]


def billed(srv):
    """What the server charged (its own usage numbers) at PRICE."""
    total = 0.0
    for body in srv.completed:
        prompt = sum(len(m["content"].split()) for m in body["messages"])
        completion = len(responder(body).split())
        total += (prompt * PRICE.input + completion * PRICE.output) / 1e6
    return total


def config(srv, **kw):
    kw.setdefault("retry", FAST_RETRY)
    kw.setdefault("prices", {"m": PRICE})
    return JudgeConfig(judges=(f"openai:m@{srv.base_url}",), **kw)


def test_the_cap_is_never_passed_and_a_higher_cap_resumes(tmp_path):
    items = many_items()
    with ScriptedServer(responder, latency_s=0.01) as srv:
        with pytest.raises(BudgetExceeded) as exc:
            judge(items, config(srv, max_cost=1.0, concurrency=8), out=tmp_path / "run")
        first = len(srv.completed)
        assert 0 < first < 20 and billed(srv) <= 1.0  # the server's own bill stays under the cap
        assert exc.value.spent == pytest.approx(billed(srv), rel=1e-6) and exc.value.exit_code == 4
        assert "spending cap reached" in str(exc.value) and "left of the $1.0000 cap" in str(exc.value)
        assert exc.value.result.status_counts()["pending"] == 20 - first
        result = judge(items, config(srv, max_cost=100.0, concurrency=8), out=tmp_path / "run")
        sent = [(b["messages"][-1]["content"], b["seed"]) for b in srv.requests]
    assert result.status_counts() == {"ok": 20} and len(sent) == len(set(sent)) == 20
    assert result.manifest.cost_usd == pytest.approx(billed(srv), rel=1e-6)


def test_the_cap_holds_for_batches_at_the_batch_price(tmp_path):
    items = many_items()
    price = ModelPrice(1000.0, 1000.0, batch_discount=0.5)
    with ScriptedServer(responder) as srv:
        cfg = JudgeConfig(judges=(f"openai:m@{srv.base_url}",), prices={"m": price}, batch=True,
                          batch_options=FAST_BATCH, max_cost=1.0, retry=FAST_RETRY)
        with pytest.raises(BudgetExceeded) as exc:
            judge(items, cfg, out=tmp_path / "run")
        lines = len(srv.batch_lines)
    assert 0 < lines < 20 and exc.value.spent <= 1.0


def test_a_cap_needs_prices(tmp_path):
    with pytest.raises(InputError, match="--max-cost needs a price for mystery"):
        judge(many_items(2), JudgeConfig(judges=("openai:mystery@http://127.0.0.1:9/v1",), max_cost=1.0),
              out=tmp_path / "run")


def test_the_request_rate_holds_in_the_servers_log(tmp_path):
    items = many_items()
    with ScriptedServer(responder) as srv:
        judge(items, config(srv, runs=2, rpm=1200, concurrency=8), out=tmp_path / "run")
        arrivals = sorted(srv.arrivals)
    assert len(arrivals) == 40
    # 1200 per minute = 20 per second, bursts of at most one second's worth
    for i in range(len(arrivals)):
        for j in range(i + 1, len(arrivals)):
            assert j - i + 1 <= 20 + 20 * (arrivals[j] - arrivals[i]) + 1
    assert arrivals[-1] - arrivals[0] >= (40 - 20) / 20 * 0.9


def test_token_buckets_charge_prompt_and_completion_limit():
    now = [0.0]
    bucket = TokenBucket(rate=100.0, capacity=100.0, clock=lambda: now[0])
    slept = []

    async def sleep(seconds):
        slept.append(seconds)
        now[0] += seconds

    async def go():
        import polyjudge.engine.spend as spend
        real = spend.asyncio.sleep
        spend.asyncio.sleep = sleep
        try:
            await bucket.take(60)
            await bucket.take(60)  # 40 left: waits 0.2 s for 60
            await bucket.take(250)  # bigger than the bucket: waits for a full one, then owes the rest
            await bucket.take(10)
        finally:
            spend.asyncio.sleep = real
    asyncio.run(go())
    assert slept[0] == pytest.approx(0.2) and sum(slept) == pytest.approx(0.2 + 1.0 + 1.6, rel=1e-6)
    limiter = RateLimiter(tpm=6000)
    request = GenerateRequest(messages=(Message("user", "x" * 400),), max_tokens=50, n=2)
    asyncio.run(limiter.acquire(request))
    assert limiter.tokens is not None and limiter.tokens.level == pytest.approx(100 - (100 + 100), abs=1)


def test_cached_prompt_tokens_are_recorded_and_priced(tmp_path):
    price = ModelPrice(1.0, 1.0, cached_input=0.25)
    with ScriptedServer(lambda b: Reply(content=responder(b), cached_tokens=8)) as srv:
        result = judge(many_items(4), config(srv, prices={"m": price}), out=tmp_path / "run")
    tokens = result.manifest.tokens
    assert tokens["cached_prompt"] == 32 and tokens["reasoning"] == 0
    expected = ((tokens["prompt"] - 32) * 1.0 + 32 * 0.25 + tokens["completion"] * 1.0) / 1e6
    assert result.manifest.cost_usd == pytest.approx(expected)
    assert result.manifest.prices == {"m": (1.0, 1.0)}


def test_budget_reserves_the_worst_case():
    budget = Budget(1.0, {"m": PRICE})
    request = GenerateRequest(messages=(Message("user", "word " * 60),), max_tokens=100)
    need = budget.worst_case("m", request)
    assert need == pytest.approx((300 // 3 + 16 + 100) * PRICE.input / 1e6)
    assert budget.reserve("m", request) == pytest.approx(need)
    budget.settle(need, 0.05)
    assert budget.spent == 0.05 and budget.reserved == 0.0
    assert budget.worst_case("free", request) == 0.0


def test_the_price_table_has_its_date_and_reads_both_forms(tmp_path):
    assert PRICES_AS_OF and DEFAULT_PRICES["gpt-4.1-mini"] == (0.40, 1.60, 0.10, 0.5)
    path = tmp_path / "prices.json"
    path.write_text(json.dumps({"as_of": "2025-07-01", "old": [1, 2],
                                "new": {"input": 1, "output": 2, "cached_input": 0.5, "batch_discount": 0.5}}))
    table = load_prices(str(path))
    assert table["old"] == ModelPrice(1.0, 2.0) and table["new"] == ModelPrice(1.0, 2.0, 0.5, 0.5)
    assert table["new"].cost(1000, 1000, 500, batch=True) == pytest.approx((500 + 250 + 2000) / 1e6 / 2)
    assert table["gpt-4o"].input == 2.50
    for bad, field in (({"x": [1]}, "x"), ({"x": {"input": 1}}, "x"), ({"x": {"input": 1, "output": 1, "y": 2}}, "x"),
                       ({"x": {"input": 1, "output": 1, "batch_discount": 2}}, "x.batch_discount")):
        path.write_text(json.dumps(bad))
        with pytest.raises(InputError) as exc:
            load_prices(str(path))
        assert f"field '{field}'" in str(exc.value)


def test_dry_run_prices_live_batch_and_samples_per_request():
    items = many_items(6)
    est = estimate(items, JudgeConfig(judges=("openai:gpt-4.1-mini@http://127.0.0.1:9/v1",), runs=4))
    by = {(s.samples_per_request, s.batch): s for s in est.scenarios}
    assert set(by) == {(1, False), (1, True), (4, False), (4, True)}
    assert by[(1, True)].cost_usd == pytest.approx(by[(1, False)].cost_usd / 2, rel=1e-3)
    assert by[(4, False)].requests == 6 and by[(1, False)].requests == 24
    assert by[(4, False)].prompt_tokens * 4 == pytest.approx(by[(1, False)].prompt_tokens, abs=4)
    assert by[(4, False)].cost_usd < by[(1, False)].cost_usd
    assert est.cost_usd == by[(1, False)].cost_usd
    text = est.describe()
    assert "4 samples per request, batch" in text and "one request per run, live" in text
    est3 = estimate(items, JudgeConfig(judges=("openai:gpt-4.1-mini@http://127.0.0.1:9/v1",), runs=4,
                                       samples_per_request=2))
    assert est3.calls == 12 and {s.samples_per_request for s in est3.scenarios} == {1, 2}


def test_likely_cached_tokens_follow_shared_prefixes():
    from polyjudge.engine.core import likely_cached_tokens
    from polyjudge.engine.plan import plan_tasks
    from polyjudge.protocols import get_protocol

    long_doc = [Item(src="context " * 3000 + f"s{i}", tgt=f"t{i}", seg_id=str(i), system="X") for i in range(3)]
    tasks = plan_tasks(long_doc, get_protocol("da"), ["j"], runs=2, temperature=0.0, seed=0)
    groups = [(t,) for t in tasks]
    cached = likely_cached_tokens(groups)
    prompt = sum(sum(len(m.content) for m in t.request.messages) for t in tasks) // 4
    assert 0.7 * prompt < cached < prompt and cached % 128 == 0
    short = plan_tasks(many_items(3), get_protocol("da"), ["j"], runs=2, temperature=0.0, seed=0)
    assert likely_cached_tokens([(t,) for t in short]) == 0  # under 1,024 tokens nothing is cached


def _vet_reference(request, usage):
    """The bounds vet_usage holds, written out independently: (prompt, completion, cached, reasoning), anomalous."""
    size = len("".join(m.content for m in request.messages).encode())  # ASCII messages here
    schema = len(json.dumps(request.json_schema)) if request.json_schema else 0
    cap, limit = size + schema + 1024, request.max_tokens * max(1, request.n)
    if 0 <= usage.prompt_tokens <= size + 1024:
        cap = size + 1024 if not schema else max(size + 1024, usage.prompt_tokens)

    def bounded(value, bound, unknown_as):
        return unknown_as if value < 0 else min(value, bound)
    prompt = bounded(usage.prompt_tokens, cap, cap)
    completion = bounded(usage.completion_tokens, limit, limit)
    cached = bounded(usage.cached_prompt_tokens, prompt, 0)
    reasoning = bounded(usage.reasoning_tokens, completion, 0)
    counts = (prompt, completion, cached, reasoning)
    as_reported = (usage.prompt_tokens, usage.completion_tokens, usage.cached_prompt_tokens, usage.reasoning_tokens)
    return counts, counts != as_reported


@pytest.mark.parametrize("schema", [None, {"type": "object", "properties": {"score": {"type": "integer"}}}])
@pytest.mark.parametrize("messages", [("x" * 100,), ("é" * 30, "x" * 40)], ids=["ascii", "two-byte"])
def test_vetted_usage_holds_every_bound_and_keeps_a_plain_usage_as_reported(schema, messages):
    """100 bytes of messages either way (the second in 70 characters: a count between the characters and
    the bytes is within the bound too)."""
    from polyjudge.data.chat import GenerateResult, Usage
    from polyjudge.engine.spend import vet_usage

    request = GenerateRequest(messages=tuple(Message("user", m) for m in messages), max_tokens=20,
                              json_schema=schema)
    edges = (-1, 0, 1, 19, 20, 21, 1093, 1094, 1095, 1123, 1124, 1125, 1200, 10**9)
    for prompt in edges:
        for completion in edges:
            for cached, reasoning in ((0, 0), (-1, 0), (0, -1), (prompt, completion), (prompt + 1, completion + 1),
                                      (5, 5)):
                usage = Usage(prompt, completion, cached, reasoning)
                vetted = vet_usage(request, GenerateResult("a", "stop", usage=usage))
                counts, anomalous = _vet_reference(request, usage)
                got = vetted.usage
                assert (got.prompt_tokens, got.completion_tokens, got.cached_prompt_tokens,
                        got.reasoning_tokens) == counts, usage
                assert bool(vetted.anomalies) == anomalous and (vetted.note is None) == (not anomalous), usage
                if not anomalous:
                    assert got == usage
                if not anomalous and prompt <= 1124:  # the common case keeps the usage reported (no copy)
                    assert got is usage
