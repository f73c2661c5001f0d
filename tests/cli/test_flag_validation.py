"""Every numeric flag is finite and in range, or exit 2 naming the flag (issue 23, item 5).

Each case runs the real command against a scripted server and checks that
nothing was sent and no run directory was made.
"""

from __future__ import annotations

import json
import math

import pytest

from polyjudge.data.errors import InputError
from polyjudge.data.records import Item
from polyjudge.engine.pricing import ModelPrice
from polyjudge.engine.session import MAX_CONCURRENCY, MAX_SEED, JudgeConfig, estimate
from tests.helpers.cli import cli
from tests.helpers.openai_server import ScriptedServer


@pytest.fixture
def items(tmp_path):
    p = tmp_path / "in.jsonl"
    p.write_text("".join(json.dumps({"src_lang": "en", "tgt_lang": "de",
                                     "src": f"s{i}", "tgt": f"t{i}", "seg_id": str(i)}) + "\n" for i in range(3)),
                 encoding="utf-8")
    return p


BAD = [
    (["-T", "nan"], "--temperature"), (["-T", "inf"], "--temperature"), (["-T", "-1"], "--temperature"),
    (["-T", "2.5"], "--temperature"),
    (["--timeout", "0"], "--timeout"), (["--timeout", "-1"], "--timeout"), (["--timeout", "nan"], "--timeout"),
    (["--seed", "1" * 23], "--seed"), (["--seed", "-1"], "--seed"),
    (["--seed", str(MAX_SEED), "--runs", "2"], "--seed"),
    (["--min-runs", "100"], "--min-runs"), (["--runs", "2", "--min-runs", "3"], "--min-runs"),
    (["-c", "100000"], "--concurrency"), (["-c", str(MAX_CONCURRENCY + 1)], "--concurrency"),
    (["--max-cost", "nan"], "--max-cost"), (["--max-cost", "inf"], "--max-cost"), (["--rpm", "nan"], "--rpm"),
    (["--tpm", "-5"], "--tpm"), (["--max-failure-rate", "nan"], "--max-failure-rate"),
    (["--n-ctx", "-1"], "--n-ctx"), (["--samples-per-request", "100000"], "--samples-per-request"),
    (["--runs", "1000000"], "--runs"), (["--ray-cpus-per-actor", "inf"], "--ray-cpus-per-actor"),
]


@pytest.mark.parametrize("flags,name", BAD, ids=[" ".join(f) for f, _ in BAD])
def test_bad_number_exits_2_naming_the_flag(tmp_path, items, capsys, flags, name):
    with ScriptedServer(lambda body: '{"score": 50}') as srv:
        code = cli("judge", items, "-o", tmp_path / "run", "-p", "da", "--judge", f"openai:m@{srv.base_url}", "-q",
                   *flags)
        assert not srv.requests
    err = capsys.readouterr().err
    assert code == 2, err
    assert name in err and "Traceback" not in err
    assert not (tmp_path / "run").exists()


def test_good_edges_are_accepted(tmp_path, items, capsys):
    with ScriptedServer(lambda body: '{"score": 50}') as srv:
        assert cli("judge", items, "-o", tmp_path / "run", "-p", "da", "--judge", f"openai:m@{srv.base_url}", "-q",
                   "-T", "0", "--timeout", "0.5", "--seed", str(MAX_SEED - 1), "--runs", "2", "--min-runs", "2",
                   "-c", str(MAX_CONCURRENCY)) == 0
        assert len(srv.requests) == 6
    assert [r["seed"] for r in srv.requests if r["messages"][-1]["content"].find("s0") >= 0] in \
        ([MAX_SEED - 1, MAX_SEED], [MAX_SEED, MAX_SEED - 1])


@pytest.mark.parametrize("price", ["NaN", "Infinity", "-Infinity", "-1", "1e300"])
def test_prices_file_with_non_finite_price(tmp_path, items, capsys, price):
    prices = tmp_path / "prices.json"
    prices.write_text('{"m": [' + price + ', 1.0]}', encoding="utf-8")
    assert cli("judge", items, "-o", tmp_path / "run", "--judge", "openai:m@http://127.0.0.1:9/v1",
               "--prices", prices, "--dry-run") == 2
    err = capsys.readouterr().err
    assert str(prices) in err and "field 'm'" in err


@pytest.mark.parametrize("value", ["nan", "-1", "2", "0"])
@pytest.mark.parametrize("command", ["span-f1", "compare-formats"])
def test_vote_threshold(tmp_path, capsys, command, value):
    assert cli(command, "--vote-threshold", value, tmp_path / "a", tmp_path / "b") == 2
    assert "--vote-threshold" in capsys.readouterr().err


@pytest.mark.parametrize("flags,name", [(["batch", "status", "--timeout", "nan", "x"], "--timeout"),
                                        (["meta-eval", "--seed", "1" * 23], "--seed"),
                                        (["meta-eval", "--alpha", "nan"], "--alpha")])
def test_other_commands(capsys, flags, name):
    assert cli(*flags) == 2
    assert name in capsys.readouterr().err


@pytest.mark.parametrize("change,name", [({"temperature": math.nan}, "--temperature"),
                                         ({"timeout": 0.0}, "--timeout"), ({"seed": 10**22}, "--seed"),
                                         ({"concurrency": 10**5}, "--concurrency"),
                                         ({"runs": 1, "min_runs": 2}, "--min-runs"),
                                         ({"max_cost": math.inf}, "--max-cost"),
                                         ({"prices": {"m": [math.nan, 1.0]}}, "prices")])
def test_api_config_is_validated_in_the_same_place(change, name):
    # The API names its own field (``min_runs``); the command line shows it as its flag (``--min-runs``).
    cfg = JudgeConfig(judges=("openai:m@http://127.0.0.1:9/v1",), **change)
    with pytest.raises(InputError) as exc:
        estimate([Item(src_lang="en", tgt_lang="de", src="a", tgt="b")], cfg)
    assert exc.value.field == name.removeprefix("--").replace("-", "_")
    assert exc.value.with_flags(lambda f: "--" + f.replace("_", "-")).field == (name if name.startswith("--")
                                                                               else "--" + name)


def test_model_price_refuses_non_finite_values():
    for bad in ([math.nan, 1.0], [1.0, math.inf], [-1.0, 1.0]):
        with pytest.raises(ValueError):
            ModelPrice.of(bad)
    with pytest.raises(ValueError):
        ModelPrice(1.0, 1.0, batch_discount=1.5)
    assert ModelPrice.of([0.0, 2.5]).cost(1_000_000, 0) == 0.0
