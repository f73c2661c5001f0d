"""The progress bar shows tokens and USD spent so far, and the cap when there is one."""

import re

import pytest

from polyjudge.api import JudgeConfig, ModelPrice, judge
from polyjudge.data.chat import Usage
from polyjudge.engine.progress import SpendMeter, spend_text
from tests.engine.helpers import FAST_BATCH, FAST_RETRY, responder
from tests.engine.test_spend import many_items
from tests.helpers.openai_server import ScriptedServer

PRICE = ModelPrice(100.0, 200.0)


def _shown(err: str) -> tuple[int, int, float]:
    """(prompt tokens, completion tokens, USD) on the bar's last line."""
    found = re.findall(r"([\d,]+) in / ([\d,]+) out tok\s+\$([\d.,]+)", err)
    assert found, err
    return tuple(int(x.replace(",", "")) for x in found[-1][:2]) + (float(found[-1][2].replace(",", "")),)


@pytest.mark.parametrize("batch", [False, True])
def test_the_bar_shows_tokens_and_usd_so_far_with_the_cap(tmp_path, capsys, batch):
    with ScriptedServer(responder) as srv:
        cfg = JudgeConfig(judges=(f"openai:m@{srv.base_url}",), retry=FAST_RETRY, prices={"m": PRICE},
                          max_cost=50.0, progress=True, batch=batch, batch_options=FAST_BATCH)
        result = judge(many_items(), cfg, out=tmp_path / "run")
    err = capsys.readouterr().err
    assert "of $50.00 cap" in err
    prompt, completion, usd = _shown(err)
    assert (prompt, completion) == (result.manifest.tokens["prompt"], result.manifest.tokens["completion"])
    assert usd == pytest.approx(result.manifest.cost_usd, abs=1e-4) and usd > 0


def test_without_a_cap_the_bar_shows_spend_and_no_cap(tmp_path, capsys):
    with ScriptedServer(responder) as srv:
        cfg = JudgeConfig(judges=(f"openai:m@{srv.base_url}",), retry=FAST_RETRY, prices={"m": PRICE}, progress=True)
        result = judge(many_items(5), cfg, out=tmp_path / "run")
    err = capsys.readouterr().err
    assert "cap" not in err
    assert _shown(err)[2] == pytest.approx(result.manifest.cost_usd, abs=1e-4)


def test_the_meter_counts_what_it_prices():
    meter = SpendMeter(None, {"m": PRICE})
    meter.settle(0.0, meter.cost_of("m", Usage(1_500, 20)))
    meter.settle(0.0, meter.cost_of("unpriced", Usage(10, 10)))
    assert (meter.prompt_tokens, meter.completion_tokens) == (1_510, 30)
    assert meter.spent == pytest.approx((1_500 * 100 + 20 * 200) / 1e6)
    # the unpriced judge's answer is not counted as free: the bar names it (issue 34: unknown prices are unknown)
    assert spend_text(meter) == "1,510 in / 30 out tok  $0.1540 (price unknown: unpriced)" and spend_text(None) == ""
    assert spend_text(SpendMeter(2.0, {})) == "0 in / 0 out tok  $0.0000 of $2.00 cap"


def test_the_meter_counts_a_free_judge_as_free_and_names_only_unpriced_ones():
    meter = SpendMeter(None, {"m": PRICE}, free=("local",))
    meter.settle(0.0, meter.cost_of("local", Usage(100, 10)))
    meter.settle(0.0, meter.cost_of("m", Usage(1_500, 20)))
    assert spend_text(meter) == "1,600 in / 30 out tok  $0.1540"
    meter.settle(0.0, meter.cost_of("gpt-unknown", Usage(1, 1)))
    assert spend_text(meter).endswith("$0.1540 (price unknown: gpt-unknown)")


def test_a_resumed_runs_summary_gives_this_sessions_wall_time_and_the_total_labelled(tmp_path, capsys):
    import json
    import re

    from tests.helpers.cli import cli
    from tests.helpers.openai_server import ScriptedServer

    inp = tmp_path / "in.tsv"
    inp.write_text("src\ttgt\tsystem\tseg_id\n" + "".join(f"s{i}\tt{i}\tA\t{i}\n" for i in range(3)))
    with ScriptedServer(lambda body: json.dumps({"score": 70}), latency_s=0.3) as srv:
        args = ("judge", inp, "--lp", "en-de", "-o", tmp_path / "run", "--judge", f"openai:m@{srv.base_url}",
                "-c", "1", "-q")
        assert cli(*args) == 0
        first = capsys.readouterr()
        assert re.search(r"wall time: [\d.]+s$", first.out + first.err, re.M)  # one session: one figure
        assert cli(*args) == 0  # resumes: nothing left to send
    text = "".join(capsys.readouterr())
    # today: "wall time: 1.0s", the first session's time shown as if it were this one's
    m = re.search(r"wall time: ([\d.]+)s this session, ([\d.]+)s in all sessions", text)
    assert m, text
    assert float(m.group(1)) < 0.9 <= float(m.group(2))
