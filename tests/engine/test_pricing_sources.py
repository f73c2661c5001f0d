"""Prices from genai-prices first, the own table for what it lacks, --prices over both; tiers by prompt size."""

import json

import pytest
from genai_prices import Usage, calc_price

from polyjudge.api import InputError
from polyjudge.engine.pricing import (
    OWN_TABLE,
    PRICES_AS_OF,
    ModelPrice,
    PriceTable,
    cost_usd,
    default_prices,
    load_prices,
    maintained_price,
    price_table,
    sources_of,
)


@pytest.mark.parametrize("model", ["gpt-5-mini", "gemini-2.5-flash"])
def test_models_only_genai_prices_knows_are_priced(model):
    from polyjudge.engine.pricing import DEFAULT_PRICES

    assert model not in DEFAULT_PRICES
    table = default_prices()
    assert model in table and table.source(model).startswith("genai-prices ")
    assert cost_usd(table, model, 10_000, 500) > 0


# (model, prompt, completion, cached): a few usages on both sides of a long-context threshold
USAGES = [("gpt-5-mini", 1_234, 321, 0), ("gpt-5-mini", 50_000, 800, 20_000), ("gemini-2.5-flash", 9_000, 77, 0),
          ("claude-sonnet-4-5", 150_000, 1_000, 10_000), ("claude-sonnet-4-5", 250_000, 1_000, 10_000),
          ("gemini-2.5-pro", 199_999, 10, 0), ("gemini-2.5-pro", 200_001, 10, 0), ("claude-haiku-4-5", 3, 4, 0)]


@pytest.mark.parametrize(("model", "prompt", "completion", "cached"), USAGES)
def test_costs_match_genai_prices_own_calc_price(model, prompt, completion, cached):
    expected = calc_price(Usage(input_tokens=prompt, output_tokens=completion, cache_read_tokens=cached), model)
    got = cost_usd(default_prices(), model, prompt, completion, cached)
    assert got == pytest.approx(float(expected.total_price), rel=1e-12)


def test_a_tiered_model_above_and_below_its_threshold():
    price = maintained_price("gemini-2.5-pro")
    assert price is not None and price.tiers and price.tiers[0].above == 200_000
    below, above = price.cost(200_000, 0), price.cost(200_001, 0)
    # the whole prompt pays the higher rate once it passes the threshold (the providers' cliff)
    assert below == pytest.approx(200_000 * 1.25 / 1e6)
    assert above == pytest.approx(200_001 * 2.50 / 1e6)
    assert price.at(10).input == 1.25 and price.at(300_000).input == 2.50


def test_override_precedence(tmp_path):
    path = tmp_path / "prices.json"
    path.write_text(json.dumps({"gpt-5-mini": [9.0, 9.0], "my-local": {"input": 1, "output": 2}}))
    table = load_prices(str(path))
    assert table["gpt-5-mini"] == ModelPrice(9.0, 9.0) and table.source("gpt-5-mini") == "--prices prices.json"
    assert table["my-local"].output == 2.0
    code = price_table({"gpt-5-mini": (1.0, 2.0)})
    assert code["gpt-5-mini"].pair() == (1.0, 2.0) and code.source("gpt-5-mini") == "--prices"
    # the built-in default for a model genai-prices knows is genai-prices
    assert default_prices()["gpt-5-mini"].pair() == (0.25, 2.0)


def test_the_own_table_answers_for_what_genai_prices_lacks():
    table = PriceTable({"house-model": ModelPrice(1.0, 3.0)})
    assert table.source("house-model") == OWN_TABLE and OWN_TABLE.endswith(PRICES_AS_OF)
    assert sources_of(table, ["house-model", "nobody-knows-me"]) == {"house-model": OWN_TABLE}
    assert "nobody-knows-me" not in table and table.get("nobody-knows-me") is None
    assert cost_usd(table, "nobody-knows-me", 100, 100) == 0.0


def test_prices_as_of_is_the_date_the_rows_say():
    import inspect

    import polyjudge.engine.pricing as pricing

    dates = set(__import__("re").findall(r"read (\d{4}-\d{2}-\d{2})", inspect.getsource(pricing)))
    assert dates == {PRICES_AS_OF}


def test_a_bad_price_file_names_file_and_field(tmp_path):
    path = tmp_path / "p.json"
    path.write_text(json.dumps({"gpt-5-mini": [1.0, "x"]}))
    with pytest.raises(InputError) as err:
        load_prices(str(path))
    assert "p.json" in str(err.value) and "gpt-5-mini" in str(err.value)


@pytest.mark.parametrize("model", ["gpt-5-mini", "gemini-2.5-flash", "claude-sonnet-4-5"])
def test_dry_run_prints_usd_for_current_models(tmp_path, capsys, model):
    from polyjudge.cli.main import main

    inp = tmp_path / "in.jsonl"
    inp.write_text("".join(json.dumps({"src": f"s{i}", "tgt": f"t{i}", "seg_id": str(i), "lp": "en-de"}) + "\n"
                           for i in range(3)))
    with pytest.raises(SystemExit) as done:
        main(["judge", str(inp), "--judge", f"openai:{model}@http://127.0.0.1:9/v1", "--dry-run", "--format", "json"])
    assert done.value.code == 0
    est = json.loads(capsys.readouterr().out)
    price = default_prices()[model]
    expected = (est["prompt_tokens"] * price.input + est["max_completion_tokens"] * price.output) / 1e6
    assert est["unpriced"] == [] and est["cost_usd"] == pytest.approx(expected, abs=1e-6) and est["cost_usd"] > 0


def test_dry_run_prices_a_long_prompt_at_its_tier(tmp_path, capsys):
    from polyjudge.cli.main import main

    inp = tmp_path / "in.jsonl"
    long_src = "word " * 220_000  # ~275,000 tokens by bytes/4: above gemini-2.5-pro's 200,000 threshold
    inp.write_text(json.dumps({"src": long_src, "tgt": "t", "seg_id": "1", "lp": "en-de"}) + "\n")
    with pytest.raises(SystemExit):
        main(["judge", str(inp), "--judge", "openai:gemini-2.5-pro@http://127.0.0.1:9/v1", "--dry-run",
              "--format", "json"])
    est = json.loads(capsys.readouterr().out)
    expected = (est["prompt_tokens"] * 2.50 + est["max_completion_tokens"] * 15.00) / 1e6
    assert est["prompt_tokens"] > 200_000 and est["cost_usd"] == pytest.approx(expected, rel=1e-3)


def test_a_run_records_where_its_prices_came_from_and_costs_what_genai_prices_says(tmp_path):
    from polyjudge.api import JudgeConfig, judge
    from polyjudge.data.records import Item
    from tests.engine.helpers import FAST_RETRY, responder
    from tests.helpers.openai_server import ScriptedServer

    items = [Item(src=f"source {i}", tgt=f"translation {i}", src_lang="en", tgt_lang="de", seg_id=str(i),
                  system="X") for i in range(4)]
    with ScriptedServer(responder) as srv:
        result = judge(items, JudgeConfig(judges=(f"openai:gpt-5-mini@{srv.base_url}",), retry=FAST_RETRY),
                       out=tmp_path / "run")
    manifest = json.loads((tmp_path / "run" / "manifest.json").read_text())
    assert manifest["price_sources"] == {"gpt-5-mini": default_prices().source("gpt-5-mini")}
    assert manifest["price_sources"]["gpt-5-mini"].startswith("genai-prices ")
    tokens = result.manifest.tokens
    expected = calc_price(Usage(input_tokens=tokens["prompt"], output_tokens=tokens["completion"]), "gpt-5-mini")
    assert result.manifest.cost_usd == pytest.approx(float(expected.total_price), abs=1e-6)
    assert result.manifest.cost_usd > 0


def test_the_own_table_is_read_only_for_models_asked_for(monkeypatch):
    """A run looks up its own judges in genai-prices, not every row of the own table (that cost a tenth
    of a second of every run); a row of the own table still answers for a model genai-prices lacks."""
    import polyjudge.engine.pricing as pricing
    from polyjudge.engine.pricing import DEFAULT_PRICES

    asked: list[str] = []

    def counting(model: str):
        asked.append(model)
        return None  # as if genai-prices knew nothing: the own table answers

    monkeypatch.setattr(pricing, "maintained_price", counting)
    table = default_prices()
    assert asked == []
    own_model = next(iter(DEFAULT_PRICES))
    assert table[own_model] == ModelPrice.of(DEFAULT_PRICES[own_model]) and table.source(own_model) == OWN_TABLE
    assert "no-such-model" not in table
    assert asked == [own_model, "no-such-model"]
