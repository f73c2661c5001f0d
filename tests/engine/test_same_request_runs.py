"""Runs that would send one request several times are judged once, with a line saying so (issue 43 item 6).

At temperature 0 a judge that takes no seed (Anthropic's Messages API) gets the same request, byte for byte,
for every run: ``runs = 3`` paid three times for one answer. Such runs are collapsed to one, in the run, its dry
run and a study's plan; judges that send a seed (run r sends seed + r) and any temperature above 0 keep every run.
"""

from __future__ import annotations

import json
import logging

import pytest

from polyjudge.api import JudgeConfig, estimate, judge
from polyjudge.data.records import Item
from tests.helpers.anthropic_server import AnthropicServer
from tests.helpers.openai_server import ScriptedServer

ITEMS = [Item(src=f"Satz {i}.", tgt=f"Sentence {i}.", src_lang="de", tgt_lang="en", system="A", seg_id=str(i))
         for i in range(4)]


@pytest.fixture(autouse=True)
def _keys(monkeypatch):
    monkeypatch.setenv("ANTHROPIC_API_KEY", "k")
    monkeypatch.setenv("OPENAI_API_KEY", "k")


def test_runs_at_temperature_0_of_a_seedless_judge_are_one_request(tmp_path, caplog):
    with AnthropicServer(lambda body: "80") as srv, caplog.at_level(logging.WARNING, logger="polyjudge"):
        config = JudgeConfig(judges=(f"anthropic:claude-x@{srv.base_url.removesuffix('/v1')}",), runs=3)
        planned = estimate(ITEMS, config)
        result = judge(ITEMS, config, out=tmp_path / "run")
        assert len(srv.requests) == len(ITEMS)
    assert planned.calls == len(ITEMS)
    assert [j.run_index for j in result.judgments] == [0] * len(ITEMS)
    manifest = json.loads((tmp_path / "run" / "manifest.json").read_text(encoding="utf-8"))
    assert manifest["config"]["runs"] == 1
    said = [r.getMessage() for r in caplog.records if "temperature 0" in r.getMessage()]
    assert said and "judging 1 run" in said[0] and "runs = 3" in said[0]


def test_runs_above_temperature_0_or_with_a_seed_are_all_sent(caplog):
    with AnthropicServer(lambda body: "80") as srv, caplog.at_level(logging.WARNING, logger="polyjudge"):
        url = srv.base_url.removesuffix("/v1")
        assert estimate(ITEMS, JudgeConfig(judges=(f"anthropic:claude-x@{url}",), runs=3, temperature=0.7)).calls \
            == 3 * len(ITEMS)
    with ScriptedServer(lambda body: "80") as srv:
        assert estimate(ITEMS, JudgeConfig(judges=(f"openai:m@{srv.base_url}",), runs=3)).calls == 3 * len(ITEMS)
    assert not [r for r in caplog.records if "temperature 0" in r.getMessage()]
