"""--dry-run: cost upper bound, prompts over the context, and reading a store without touching it."""

import asyncio
import logging
import os

import pytest

from polyjudge.data.chat import GenerateRequest, GenerateResult, Message
from polyjudge.data.records import Item
from polyjudge.engine import Estimate, RunSpec, run_async
from polyjudge.engine.pricing import CONTEXT_TOKENS, DEFAULT_PRICES, approx_tokens
from polyjudge.engine.store import AnswerKey, Store
from polyjudge.protocols import get_protocol


class Silent:
    """A backend that must never be called (a dry run sends nothing)."""

    def __init__(self, model):
        self.model = model

    async def generate(self, request):
        raise AssertionError("a dry run sent a request")

    async def aclose(self):
        pass


def dry(items, models, **kw):
    out = asyncio.run(run_async(items, RunSpec.of(get_protocol("da"), [Silent(m) for m in models], dry_run=True, **kw)))
    assert isinstance(out, Estimate)
    return out


def test_tokens_are_utf8_bytes_over_four():
    assert approx_tokens("abcd" * 10) == 10
    assert approx_tokens("日本語" * 4) == 9  # 36 bytes: other scripts cost more tokens per character


def test_cost_is_an_upper_bound_per_priced_judge(items):
    est = dry(items, ["gpt-4.1-mini", "local", "unknown"], runs=2, free_judges={"local"})
    assert est.requests_to_send == 6 * 2 * 3
    inp, out = DEFAULT_PRICES["gpt-4.1-mini"][:2]
    # the priced judge has a third of the requests (all judges see the same prompts)
    expected = (est.prompt_tokens / 3 * inp + est.max_completion_tokens / 3 * out) / 1e6
    assert est.cost_usd == pytest.approx(expected, rel=1e-3)
    assert est.unpriced == ("unknown",)
    assert "estimated cost at most $" in est.describe() and "no price known for unknown" in est.describe()
    assert dry(items, ["unknown"]).cost_usd is None
    assert dry(items, ["local"], free_judges={"local"}).cost_usd == 0.0


def test_prompts_over_the_context_are_listed_and_warned(items, caplog):
    long = Item(src_lang="en", tgt_lang="de", src="x", tgt="word " * 400, seg_id="9", system="Z", origin="in.jsonl:7")
    with caplog.at_level(logging.WARNING, logger="polyjudge"):
        est = dry([*items, long], ["small"], runs=3, context_sizes={"small": 200})
    assert [(o.item_index, o.judge, o.context_tokens) for o in est.oversized] == [(6, "small", 200)]
    assert est.oversized[0].where == "item 7 at in.jsonl:7 (system Z, segment 9)"
    warnings = [r.getMessage() for r in caplog.records]
    assert len(warnings) == 1 and warnings[0].startswith("item 7 at in.jsonl:7 (system Z, segment 9): prompt of about")
    assert "exceeds the context of small (200 tokens)" in warnings[0]
    assert CONTEXT_TOKENS["gpt-4o"] == 128_000 and not dry(items, ["gpt-4o"]).oversized


def test_dry_run_reads_a_store_in_use_without_creating_files(items, tmp_path):
    path = tmp_path / "store.sqlite"
    writer = Store(path)  # a run in progress keeps its store open (WAL files exist)
    request = GenerateRequest(messages=(Message("user", "x"),))
    writer.put_prompt("h", request)
    writer.put_result(AnswerKey("k1", "h", "j", 0), GenerateResult(text="1", finish_reason="stop"), 1)
    before = sorted(os.listdir(tmp_path))
    reader = Store(path, readonly=True)
    assert reader.completed_keys() == {"k1"}
    reader.close()
    assert sorted(os.listdir(tmp_path)) == before
    writer.close()
    before = sorted(os.listdir(tmp_path))  # closed: no WAL beside it any more
    assert before == ["store.sqlite"]
    reader = Store(path, readonly=True)
    assert reader.completed_keys() == {"k1"} and reader.get_meta("anything") is None
    reader.close()
    assert sorted(os.listdir(tmp_path)) == before
    est = dry(items, ["j"], store_path=tmp_path / "missing.sqlite")
    assert est.requests_cached == 0 and not (tmp_path / "missing.sqlite").exists()


# ----------------------------------------------------------------------------- how long a run would take

def test_the_duration_of_api_requests_rests_on_concurrency_and_a_typical_latency():
    from polyjudge.engine.estimate import TYPICAL_API_LATENCY_S, estimate_duration

    d = estimate_duration(100, 50_000, concurrency=10)
    assert d.seconds == pytest.approx(100 * TYPICAL_API_LATENCY_S / 10)
    assert "10 in flight" in d.describe() and f"typical {TYPICAL_API_LATENCY_S:g}s" in d.describe()


def test_a_rate_limit_that_binds_is_what_the_duration_rests_on():
    from polyjudge.engine.estimate import estimate_duration

    by_rpm = estimate_duration(600, 1_000, concurrency=64, rpm=60)
    assert by_rpm.seconds == pytest.approx(600.0) and by_rpm.basis.startswith("600 requests at --rpm 60")
    assert "10m00s" in by_rpm.describe()
    by_tpm = estimate_duration(10, 600_000, concurrency=64, tpm=10_000)
    assert by_tpm.seconds == pytest.approx(3600.0) and "--tpm" in by_tpm.basis.split(";")[0]


def test_a_self_hosted_or_embedded_judge_says_its_duration_is_measured(tmp_path, capsys):
    from tests.helpers.cli import cli

    inp = tmp_path / "in.tsv"
    inp.write_text("src\ttgt\tsystem\tseg_id\nThe dog runs.\tDer Hund rennt.\tA\t1\n")
    assert cli("judge", inp, "--lp", "en-de", "--judge", "openai:m@http://127.0.0.1:9/v1", "--dry-run",
               "--format", "json") == 0
    import json

    shown = json.loads(capsys.readouterr().out)
    # today: no duration, no endpoint in the dry run
    assert shown["duration"]["seconds"] is None and "ETA" in shown["duration"]["basis"]
    assert shown["endpoints"] == ["openai:m http://127.0.0.1:9/v1"]
