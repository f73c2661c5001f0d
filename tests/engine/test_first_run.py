"""Issue 46: a first run (distinct items, one run each) sent at its transport's pace.

The local executor takes a run's chunks of items as one stream, each chunk prepared as the workers reach
it: no request slot waits at a chunk's end for the chunk's slowest answer, and no more than one chunk of
work is prepared ahead of what the workers took."""

import asyncio
import json
import time

from polyjudge.data.chat import GenerateResult, Usage
from polyjudge.data.records import Item
from polyjudge.engine import core
from polyjudge.protocols import get_protocol


def distinct_items(n):
    return [Item(src=f"source {i}", tgt=f"translation {i}", src_lang="en", tgt_lang="de", doc_id=None,
                 seg_id=str(i), system="A") for i in range(n)]


class SlowFirst:
    """A judge whose answer to the first item takes ``slow_s``; every other answer comes at once.
    Records when each request started and when the slow one ended."""

    model = "m"

    def __init__(self, slow_s):
        self.slow_s = slow_s
        self.started = []
        self.slow_done = None

    async def generate(self, request):
        text = request.messages[-1].content
        self.started.append((time.monotonic(), text))
        if "source 0" in text:
            await asyncio.sleep(self.slow_s)
            self.slow_done = time.monotonic()
        else:
            await asyncio.sleep(0.001)
        return GenerateResult(json.dumps({"score": 70}), "stop", usage=Usage(10, 3))

    async def aclose(self):
        pass


def test_the_next_chunk_goes_out_while_the_slowest_answer_of_a_chunk_is_awaited(tmp_path, monkeypatch):
    monkeypatch.setattr(core, "ITEMS_PER_CHUNK", 3)
    judge = SlowFirst(slow_s=0.5)
    result = core.run(distinct_items(12), get_protocol("da"), [judge], runs=1, concurrency=2,
                      store_path=tmp_path / "store.sqlite")
    assert result.status_counts() == {"ok": 12}
    # Every other item (three more chunks) went out on the second slot while the first answer was awaited.
    before = [text for at, text in judge.started if at < judge.slow_done]
    assert len(before) == 12, before
    assert len(judge.started) == 12  # each prompt once


def test_chunks_are_prepared_only_as_the_workers_reach_them(tmp_path, monkeypatch):
    monkeypatch.setattr(core, "ITEMS_PER_CHUNK", 3)
    taken = [0]
    prepared_at = []  # tasks taken by the workers when each chunk was prepared
    original_work, original_execute = core._chunk_work, core.execute

    def chunk_work(*args, **kwargs):
        prepared_at.append(taken[0])
        return original_work(*args, **kwargs)

    async def counting(work, *args, **kwargs):
        def each():
            for w in work:
                taken[0] += 1
                yield w

        return await original_execute(each(), *args, **kwargs)

    monkeypatch.setattr(core, "_chunk_work", chunk_work)
    monkeypatch.setattr(core, "execute", counting)

    class Quick:
        model = "m"

        async def generate(self, request):
            await asyncio.sleep(0)
            return GenerateResult(json.dumps({"score": 70}), "stop", usage=Usage(10, 3))

        async def aclose(self):
            pass

    result = core.run(distinct_items(14), get_protocol("da"), [Quick()], runs=1, concurrency=2,
                      store_path=tmp_path / "store.sqlite")
    assert result.status_counts() == {"ok": 14}
    # 5 chunks of at most 3 items; chunk k is prepared once the 3k tasks before it were taken, not earlier
    assert prepared_at == [0, 3, 6, 9, 12]


def test_the_prompt_a_store_keeps_is_the_canonical_json_as_before():
    """Store.put_prompt writes the JSON around the messages once for requests that share every other field;
    the text is json.dumps of the canonical request without seed and n, as it always was."""
    import dataclasses

    from polyjudge.data.chat import GenerateRequest, Message
    from polyjudge.engine.store import PromptJson, prompt_json

    schema = {"type": "object", "properties": {"score": {"type": "number", "minimum": 0}, "messages": []},
              "required": ["score"], "ünïcode": "\u2028\ud800"}
    base = GenerateRequest(messages=(Message("system", "Be fair. \"quoted\" \\ back\nslash"),
                                     Message("user", "Ünïcode ✓ \u2028 \x00 \ud800 😀")),
                           temperature=0.0, max_tokens=64, seed=3, json_schema=schema)
    variants = [base, dataclasses.replace(base, seed=None), dataclasses.replace(base, n=4),
                dataclasses.replace(base, top_logprobs=5), dataclasses.replace(base, reasoning_effort="low"),
                dataclasses.replace(base, json_schema=None), dataclasses.replace(base, temperature=1),
                dataclasses.replace(base, temperature=True), dataclasses.replace(base, json_schema=dict(schema)),
                dataclasses.replace(base, messages=()), dataclasses.replace(base, messages=base.messages[1:]),
                base]
    writer = PromptJson()
    for request in variants:
        expected = request.canonical()
        expected.pop("seed", None)
        expected.pop("n", None)
        assert writer.json(request) == prompt_json(request) == json.dumps(expected, ensure_ascii=False,
                                                                          sort_keys=True)


def test_a_first_run_renders_each_prompt_once(tmp_path):
    """An item is rendered to find its prompt hash (the store knows none yet); its request is kept until its
    tasks are built, not rendered again (each was rendered twice)."""
    protocol = get_protocol("da")
    rendered = []
    original = protocol.messages

    def counting(item, context):
        rendered.append(item.seg_id)
        return original(item, context)

    protocol.messages = counting

    class Quick:
        model = "m"

        async def generate(self, request):
            return GenerateResult(json.dumps({"score": 70}), "stop", usage=Usage(10, 3))

        async def aclose(self):
            pass

    result = core.run(distinct_items(12), protocol, [Quick()], runs=2, store_path=tmp_path / "store.sqlite")
    assert result.status_counts() == {"ok": 24}
    assert sorted(rendered, key=int) == [str(i) for i in range(12)]


def test_a_run_of_one_run_per_item_writes_its_files_without_numpy(tmp_path):
    """numpy (about 0.1 s of a first run's CPU) is loaded where it computes: run matrices asked for, the
    aggregates of several runs; a run of one run per item writes its files without it."""
    import subprocess
    import sys

    code = f"""
import asyncio, json, sys
from polyjudge.data.chat import GenerateResult, Usage
from polyjudge.data.records import Item
from polyjudge.engine import core
from polyjudge.protocols import get_protocol

class Quick:
    model = "m"
    async def generate(self, request):
        return GenerateResult(json.dumps({{"score": 70}}), "stop", usage=Usage(10, 3))
    async def aclose(self):
        pass

items = [Item(src=f"s {{i}}", tgt=f"t {{i}}", src_lang="en", tgt_lang="de", seg_id=str(i), system="A")
         for i in range(5)]
result = core.run(items, get_protocol("da"), [Quick()], runs=1, store_path={str(tmp_path / "store.sqlite")!r})
result.write({str(tmp_path / "run")!r})
print("numpy" in sys.modules)
"""
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout
    assert out.strip() == "False"
    assert (tmp_path / "run" / "segments.tsv").is_file()


def test_a_stream_of_chunks_keeps_every_answer_in_the_shared_cache(tmp_path, monkeypatch):
    """The shared cache is filled chunk by chunk while one stream is sent (one chunk behind, the rest when
    sending ends): every answer of a run of many chunks is there, and a second run sends nothing."""
    from polyjudge.api import JudgeConfig, judge
    from tests.engine.helpers import responder
    from tests.engine.test_shared_cache import cache_rows
    from tests.helpers.openai_server import ScriptedServer

    monkeypatch.setattr(core, "ITEMS_PER_CHUNK", 3)
    cache = tmp_path / "cache"
    with ScriptedServer(responder) as srv:
        config = JudgeConfig(judges=(f"openai:m@{srv.base_url}",), runs=1, concurrency=2, cache_path=str(cache))
        judge(distinct_items(14), config, out=tmp_path / "first")
        assert len(srv.requests) == 14
        assert len(cache_rows(cache)) == 14
        again = judge(distinct_items(14), config, out=tmp_path / "second")
        assert len(srv.requests) == 14 and again.manifest.counts["from_cache"] == 14


def test_the_judge_command_path_loads_no_numpy_until_it_computes():
    """`polyjudge judge` goes through polyjudge.api.judge (the dispatcher of --until-settled): importing it and
    the command must not bring numpy (about 0.12 s of a first run's CPU), as a merge once did."""
    import subprocess
    import sys

    code = ("import sys\nfrom polyjudge.api import JudgeConfig, judge\nimport polyjudge.cli.judge_cmd\n"
            "import polyjudge.api.settle\nprint('numpy' in sys.modules)")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout
    assert out.strip() == "False"


def test_a_segment_run_imports_no_protocol_but_its_own(tmp_path):
    """Only ``--unit document``'s refusal lists the protocols that judge documents; listing them imports every
    protocol module (about 50 ms of a first run's CPU), so a run of segments must not list them."""
    import subprocess
    import sys

    items = tmp_path / "items.jsonl"
    items.write_text('{"src": "a", "tgt": "b", "src_lang": "en", "tgt_lang": "de"}\n', encoding="utf-8")
    code = f"""
import sys
from polyjudge.cli.errors import run_cli
from polyjudge.cli.main import cli
code = run_cli(cli, ["judge", {str(items)!r}, "-o", {str(tmp_path / "run")!r}, "-p", "da", "--dry-run",
                     "--judge", "openai:m@http://127.0.0.1:9/v1"])
print(code, "polyjudge.protocols.tsa" in sys.modules, "polyjudge.protocols.mqm" in sys.modules)
"""
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout
    assert out.strip().splitlines()[-1] == "0 False False"
