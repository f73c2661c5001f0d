"""One masking function wherever answers are kept (issue 34, item 5).

A hostile server echoes the API key it was sent in its answer: in the text,
in the reasoning, and cut across several tokens of the log-probabilities.
The key reaches neither the run's store.sqlite nor its judgments.jsonl nor
the shared cache, and its tokens joined again never rebuild it.
"""

import json
import math
import sqlite3

from polyjudge.data.secrets import MASK, Redactor
from tests.helpers.cli import cli
from tests.helpers.openai_server import Reply, ScriptedServer

SECRET = "sk-test-9f8e7d6c5b4a39281706f5e4d3c2b1a0"


def pieces(text, width=5):
    return [text[i:i + width] for i in range(0, len(text), width)]


def echoing(body):
    """An answer whose score is sound and whose note, reasoning and token stream carry the key."""
    content = json.dumps({"score": 80, "note": f"your key is {SECRET}"})
    top = [("80", math.log(.6)), ("70", math.log(.4))]
    head, tail = content.split("80", 1)
    tokens = [(p, 0.0, []) for p in pieces(head)] + [("80", top[0][1], top)] + [(p, 0.0, []) for p in pieces(tail)]
    return Reply(content=f"<think>they sent {SECRET}</think>{content}", logprobs=tokens)


def every_byte(folder):
    return b"".join(p.read_bytes() for p in folder.rglob("*") if p.is_file())


def test_an_echoed_key_reaches_no_store_output_or_cache(tmp_path, monkeypatch):
    monkeypatch.setenv("OPENAI_API_KEY", SECRET)
    (tmp_path / "in.jsonl").write_text("".join(json.dumps({"src": f"s{i}", "tgt": f"t{i}", "system": "S",
                                                           "seg_id": str(i), "src_lang": "en", "tgt_lang": "de"})
                                               + "\n" for i in range(3)))
    with ScriptedServer(echoing) as srv:
        assert cli("judge", tmp_path / "in.jsonl", "-o", tmp_path / "run", "--judge", f"openai:m@{srv.base_url}",
                   "-q", "--score-mode", "expected", "--cache", tmp_path / "cache",
                   "--record", tmp_path / "rec.jsonl") == 0
    recorded = [json.loads(line)["response"] for line in (tmp_path / "rec.jsonl").read_text().splitlines()]
    assert len(recorded) == 3
    for r in recorded:  # the recording holds the tokens too: joined, they spell no key
        assert SECRET[:12] not in "".join(t for t, _, _ in r["logprobs"]) and SECRET not in json.dumps(r)
    for folder in (tmp_path / "run", tmp_path / "cache"):
        raw = every_byte(folder)
        assert SECRET.encode() not in raw, folder
        assert MASK.encode() in raw, folder
    db = sqlite3.connect(tmp_path / "run" / "store.sqlite")
    rows = db.execute("SELECT text, reasoning, logprobs FROM responses").fetchall()
    db.close()
    assert len(rows) == 3
    for text, reasoning, logprobs in rows:
        assert json.loads(text)["score"] == 80  # the answer still reads as the same score
        assert reasoning and SECRET not in reasoning
        joined = "".join(t for t, _, _ in json.loads(logprobs))
        assert SECRET not in joined and SECRET[:12] not in joined and MASK in joined
    cache = sqlite3.connect(tmp_path / "cache" / "responses.sqlite")
    for (logprobs,) in cache.execute("SELECT logprobs FROM answers"):
        assert SECRET[:12] not in "".join(t for t, _, _ in json.loads(logprobs))
    cache.close()
    judged = (tmp_path / "run" / "judgments.jsonl").read_text()
    assert SECRET not in judged and judged.count("\n") == 3


def test_tokens_that_cut_a_secret_are_masked_and_the_rest_kept(monkeypatch):
    from polyjudge.data.secrets import mask_tokens

    monkeypatch.setenv("OPENAI_API_KEY", SECRET)
    tokens = ["score ", "80 ", "key=", *pieces(SECRET, 7), " end"]
    masked = mask_tokens(Redactor(patterns=False), tokens)
    assert len(masked) == len(tokens)
    assert masked[:3] == ["score ", "80 ", "key="] and masked[-1] == " end"
    assert "".join(masked) == f"score 80 key={MASK} end"
