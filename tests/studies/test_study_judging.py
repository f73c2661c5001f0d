"""probe, pairwise and consistency judge through the JudgingSpec the command line builds (issue 36): one
copy of the configuration from the flags to each condition's run, no flat JudgeConfig in between.

Their outputs are byte-identical to the shorthand's: the spec a study keeps is the one the shorthand
stood for (its data and output groups are the study's own), which is what the manifests record."""

from __future__ import annotations

from pathlib import Path

import pytest

from polyjudge.api import JudgeConfig, JudgingSpec
from polyjudge.cli.options import judging_spec, study_judging
from polyjudge.cli.pairwise_cmd import pairwise
from polyjudge.cli.probes_cmd import probe
from polyjudge.studies import ConsistencyConfig, ProbeConfig
from polyjudge.studies.consistency import condition_judge_config
from polyjudge.studies.pairwise import PairwiseConfig

SRC = Path(__file__).resolve().parents[2] / "src" / "polyjudge"
FLAGS = ["--judge", "openai:gpt-4.1-mini@http://127.0.0.1:9/v1", "--runs", "3", "--temperature", "0.3",
         "--seed", "7", "--max-cost", "2", "--rpm", "60", "--no-cache", "--restart", "--src-lang", "en",
         "--protocol-option", "scale_max=50", "--concurrency", "4"]


@pytest.mark.parametrize("command,args", [(probe, ["in.jsonl", "--kind", "repeat", "-o", "out"]),
                                          (pairwise, ["in.jsonl", "-o", "out", "--protocol", "pairwise"])])
def test_the_study_keeps_the_spec_the_flags_make(command, args):
    params = dict(command.make_context(command.name, [*args, *FLAGS]).params)
    spec = study_judging(dict(params), progress=False)
    assert isinstance(spec, JudgingSpec)
    assert spec.generation.runs == 3 and spec.generation.seed == 7 and spec.budget.max_cost == 2
    assert spec.data.src_lang == "en" and spec.data.path is None and spec.output.out is None and spec.output.restart
    # the same spec the shorthand stood for: the runs' manifests are unchanged
    assert spec == JudgeConfig.of(judging_spec(dict(params), progress=False)).spec()


def test_the_studies_take_a_spec_and_still_the_shorthand():
    shorthand = JudgeConfig(judges=("openai:m@http://127.0.0.1:9/v1",), temperature=0.5, seed=3)
    for config in (ProbeConfig(kind="repeat", judge=shorthand), PairwiseConfig(judge=shorthand.replace(
            protocol="pairwise")), ConsistencyConfig(dataset="mgsm", judge=shorthand)):
        assert isinstance(config.judge, JudgingSpec) and config.judge.generation.temperature == 0.5
    spec = ConsistencyConfig(dataset="mgsm", judge=shorthand.spec()).judge
    cond = condition_judge_config(ConsistencyConfig(dataset="mgsm", judge=spec), "math", "binary")
    assert cond.protocol.name == "pointwise" and dict(cond.protocol.options) == {"task": "math", "scale": "binary"}
    assert cond.judges == spec.judges and cond.generation == spec.generation


def test_no_study_builds_the_flat_shorthand():
    for path in ("studies/probes.py", "studies/pairwise.py", "studies/consistency.py", "cli/probes_cmd.py",
                 "cli/pairwise_cmd.py", "cli/consistency_cmd.py"):
        text = (SRC / path).read_text(encoding="utf-8")
        assert "JudgeConfig" not in text.replace("the flat JudgeConfig shorthand is taken too", ""), path
