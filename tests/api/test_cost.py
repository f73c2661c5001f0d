"""``polyjudge cost``: what runs spent per judge and model, read from real run directories."""

import json

import pytest

from polyjudge.api import InputError, JudgeConfig, ModelPrice, judge
from polyjudge.api.cost import ALL_JUDGES, run_costs
from polyjudge.cli.main import main
from tests.engine.helpers import FAST_BATCH, FAST_RETRY, responder
from tests.engine.test_spend import many_items
from tests.helpers.anthropic_server import AnthropicServer
from tests.helpers.openai_server import ScriptedServer

PRICES = {"m1": ModelPrice(1.0, 2.0), "m2": ModelPrice(3.0, 5.0), "claude-x": ModelPrice(4.0, 8.0, batch_discount=0.5)}


def usd(tokens, price, share=1.0):
    return (tokens["prompt"] * price.input + tokens["completion"] * price.output) / 1e6 * share


@pytest.fixture(scope="module")
def runs(tmp_path_factory):
    root = tmp_path_factory.mktemp("runs")
    with ScriptedServer(responder) as srv:
        judge(many_items(6), JudgeConfig(judges=(f"openai:m1@{srv.base_url}", f"openai:m2@{srv.base_url}"),
                                         runs=2, retry=FAST_RETRY, prices=PRICES), out=root / "panel")
    with AnthropicServer(responder) as srv:
        judge(many_items(6), JudgeConfig(judges=(f"anthropic:claude-x@{srv.base_url}",), batch=True,
                                         batch_options=FAST_BATCH, retry=FAST_RETRY, prices=PRICES),
              out=root / "claude")
    with ScriptedServer(responder) as srv:
        judge(many_items(3), JudgeConfig(judges=(f"openai:m1@{srv.base_url}",), retry=FAST_RETRY, prices=PRICES),
              out=root / "again")
    return root


def test_each_judge_of_each_run_at_the_price_it_was_charged(runs):
    report = run_costs([runs / "panel", runs / "claude", runs / "again"])
    by = {(r.run.split("/")[-1], r.model): r for r in report.rows}
    assert set(by) == {("panel", "m1"), ("panel", "m2"), ("claude", "claude-x"), ("again", "m1")}
    for (run, model), row in by.items():
        tokens = {"prompt": row.prompt_tokens, "completion": row.completion_tokens}
        share = 0.5 if run == "claude" else 1.0  # answered through the Message Batches API: half price
        assert row.prompt_tokens > 0 and row.cost_usd == pytest.approx(usd(tokens, PRICES[model], share), abs=1e-6)
    assert by[("claude", "claude-x")].backend == "anthropic" and by[("panel", "m2")].price_source == "--prices"
    manifests = [json.loads((runs / r / "manifest.json").read_text()) for r in ("panel", "claude", "again")]
    assert report.cost_usd == pytest.approx(sum(m["cost_usd"] for m in manifests), abs=1e-6)
    m1 = next(t for t in report.totals if t.model == "m1")
    assert m1.prompt_tokens == by[("panel", "m1")].prompt_tokens + by[("again", "m1")].prompt_tokens
    assert m1.cost_usd == pytest.approx(by[("panel", "m1")].cost_usd + by[("again", "m1")].cost_usd)


def test_an_old_manifest_without_a_split_is_one_row(runs, tmp_path):
    import shutil

    old = tmp_path / "old"
    shutil.copytree(runs / "panel", old)
    manifest = json.loads((old / "manifest.json").read_text())
    for key in ("tokens_by_judge", "cost_by_judge", "price_sources"):
        manifest.pop(key, None)
    (old / "manifest.json").write_text(json.dumps(manifest))
    [row] = run_costs([old]).rows
    assert row.model == ALL_JUDGES and row.cost_usd == pytest.approx(manifest["cost_usd"])
    assert row.prompt_tokens == manifest["tokens"]["prompt"]


def test_the_command_in_each_format(runs, capsys):
    def cli(*args):
        with pytest.raises(SystemExit) as done:
            main(["cost", *map(str, args)])
        return done.value.code

    assert cli(runs / "panel", runs / "claude", "--format", "json") == 0
    data = json.loads(capsys.readouterr().out)
    assert {r["model"] for r in data["by_model"]} == {"m1", "m2", "claude-x"}
    assert cli(runs / "panel", "--format", "tsv") == 0
    lines = capsys.readouterr().out.splitlines()
    assert lines[0].split("\t")[:3] == ["run", "backend", "model"] and len(lines) == 3
    assert cli(runs / "panel", runs / "again") == 0
    text = capsys.readouterr().out
    assert "total" in text and "judge run(s)" in text and "$" in text


def test_bad_run_directories_exit_2_naming_them(runs, tmp_path, capsys):
    assert main_code(["cost", str(tmp_path)]) == 2
    assert "not a polyjudge run directory" in capsys.readouterr().err
    import shutil

    broken = tmp_path / "broken"
    shutil.copytree(runs / "again", broken)
    (broken / "manifest.json").write_text("{not json")
    assert main_code(["cost", str(broken)]) == 2
    err = capsys.readouterr().err
    assert "manifest.json" in err and "Traceback" not in err
    with pytest.raises(InputError):
        run_costs([])


def main_code(argv):
    with pytest.raises(SystemExit) as done:
        main(argv)
    return done.value.code


def test_a_model_without_a_price_is_price_unknown_not_free(tmp_path, capsys):
    """Issue 34, item 6: no price for the judge's model: the summary and `cost` say "price unknown"
    with the model, not "$0.0000"; a --prices entry makes it known."""
    items = tmp_path / "in.jsonl"
    items.write_text("".join(json.dumps({"src": f"s{i}", "tgt": f"t{i}", "system": "S", "seg_id": str(i),
                                         "src_lang": "en", "tgt_lang": "de"}) + "\n" for i in range(3)))
    prices = tmp_path / "prices.json"
    prices.write_text(json.dumps({"priced-judge": [1.0, 2.0]}))
    with ScriptedServer(lambda body: json.dumps({"score": 60})) as srv:
        assert main_code(["judge", str(items), "-o", str(tmp_path / "unpriced"), "--judge",
                          f"openai:no-such-priced-model@{srv.base_url}", "-q", "--no-cache"]) == 0
        err = capsys.readouterr().err
        assert "price unknown: no-such-priced-model" in err
        # A spending cap still needs a price: refused before anything is sent, as before.
        sent = len(srv.requests)
        assert main_code(["judge", str(items), "-o", str(tmp_path / "capped"), "--judge",
                          f"openai:no-such-priced-model@{srv.base_url}", "-q", "--no-cache", "--max-cost", "1"]) == 2
        assert len(srv.requests) == sent and not (tmp_path / "capped").exists()
        capsys.readouterr()
        assert main_code(["judge", str(items), "-o", str(tmp_path / "priced"), "--judge",
                          f"openai:priced-judge@{srv.base_url}", "-q", "--no-cache", "--prices", str(prices)]) == 0
        assert "price unknown" not in capsys.readouterr().err
    assert main_code(["cost", str(tmp_path / "unpriced"), str(tmp_path / "priced")]) == 0
    text = capsys.readouterr().out
    unpriced_rows = [ln for ln in text.splitlines() if "no-such-priced-model" in ln]
    assert unpriced_rows and all("price unknown" in ln and "0.000000" not in ln for ln in unpriced_rows), text
    assert "price unknown: no-such-priced-model" in text.splitlines()[-1]
    assert main_code(["cost", str(tmp_path / "unpriced"), "--format", "json"]) == 0
    report = json.loads(capsys.readouterr().out)
    assert report["runs"][0]["cost_usd"] is None and report["price_unknown"] == ["no-such-priced-model"]
    assert main_code(["report", str(tmp_path / "unpriced"), "-o", str(tmp_path / "report.html")]) == 0
    html = (tmp_path / "report.html").read_text()
    assert "price unknown: no-such-priced-model" in html and "price unknown</td>" in html
