"""Shared pieces of the engine tests of issue 14 (dedup, batches, samples, spending)."""

import json
from pathlib import Path

from polyjudge.backends.base import BackendError
from polyjudge.data.chat import GenerateResult, Usage
from polyjudge.data.records import Item
from polyjudge.engine import RetryPolicy
from polyjudge.engine.batches import BatchOptions
from tests.engine.conftest import da_score

FAST_RETRY = RetryPolicy(max_attempts=3, base_delay_s=0.01, max_delay_s=0.02, give_up_after_s=0.2)
FAST_BATCH = BatchOptions(poll_initial_s=0.01, poll_max_s=0.05)
OUTPUT_FILES = ("segments.tsv", "systems.tsv", "items.jsonl", "mtme/polyjudge-da-src.seg.score",
                "mtme/polyjudge-da-src.sys.score")


def duplicated_items():
    """Two systems with identical translations of segments 1 and 2, and a repeated segment in system C."""
    out = []
    for system in ("A", "B", "C"):
        for seg in range(1, 4):
            tgt = f"shared translation {seg}" if seg < 3 and system != "C" else f"{system} translation {seg}"
            out.append(Item(src=f"source {seg}", tgt=tgt, src_lang="en", tgt_lang="de", doc_id=None, seg_id=str(seg),
                            system=system))
    out.append(Item(src="source 3", tgt="C translation 3", src_lang="en", tgt_lang="de", doc_id=None, seg_id="4",
                    system="C"))
    return out


def score_of(body) -> int:
    """A deterministic judge for any item: a hash of the translation plus the seed."""
    user = body["messages"][-1]["content"]
    return (sum(map(ord, user)) % 50) + int(body.get("seed") or 0)


def responder(body):
    return json.dumps({"score": score_of(body)})


def judgments_without_timing(run_dir: Path):
    """judgments.jsonl without what differs between two sendings of the same answers."""
    drop = {"latency_s", "usage"}
    return [{k: v for k, v in json.loads(x).items() if k not in drop}
            for x in (run_dir / "judgments.jsonl").read_text().splitlines()]


def same_outputs(a: Path, b: Path) -> None:
    for name in OUTPUT_FILES:
        # mtme/ files exist only when every system scored every segment (rundir.mtme): in both or neither
        assert (a / name).is_file() == (b / name).is_file(), name
        if (a / name).is_file():
            assert (a / name).read_text() == (b / name).read_text(), name
    assert judgments_without_timing(a) == judgments_without_timing(b)


class SampleBackend:
    """An in-process judge that answers ``n`` choices as a server would (choice k: seed + k),
    or rejects or ignores ``n``, counting its requests."""

    def __init__(self, model="judge-1", mode="ok"):
        self.model, self.mode = model, mode
        self.requests = []

    async def generate(self, request):
        self.requests.append(request)
        if request.n > 1 and self.mode == "reject":
            raise BackendError("HTTP 400: 'n' is not supported", retryable=False, status=400, unsupported="n")
        n = 1 if self.mode == "ignore" else request.n
        texts = []
        for k in range(n):
            body = {"messages": [{"role": m.role, "content": m.content} for m in request.messages],
                    "seed": (request.seed or 0) + k}
            texts.append(json.dumps({"score": da_score(body)}))
        return GenerateResult(text=texts[0], finish_reason="stop", usage=Usage(10, 3 * n),
                              choices=tuple(texts) if n > 1 else ())

    async def aclose(self):
        pass
