"""The Python API: typed configs in, typed results out.

The command line is a thin layer over these functions (parse, call, print),
so everything the CLI does can be done from Python::

    from polyjudge.api import JudgeConfig, judge
    run = judge("items.jsonl", JudgeConfig(protocol="mqm", judges=("openai:gpt-4.1-mini",)), out="runs/mqm")
"""

from polyjudge.engine.core import Estimate
from polyjudge.engine.result import RunResult
from polyjudge.engine.session import JudgeConfig, build_protocol, estimate, judge

__all__ = ["Estimate", "JudgeConfig", "RunResult", "build_protocol", "estimate", "judge"]
