"""Summarising a run from its store's rows as read, without a judgment record per row (issue 35, item 4: a
million rows) gives what the records give: each row's judgment and ``judgments.jsonl`` line, the statuses,
failures, segment scores, run matrices and usage, for stored rows of every kind (answers parsed or not, cut,
refused, failed, never sent, with reasoning or not, NULL counts of older stores, answers repeated in an item)."""

import json
import math
import sqlite3

from hypothesis import given, settings
from hypothesis import strategies as st

from polyjudge.data.records import Item
from polyjudge.engine.collect import Usage
from polyjudge.engine.result import RunResult, StoredJudgments, judgment_of, outcome_of, record_of
from polyjudge.engine.store import Store, _stored
from polyjudge.protocols.registry import get_protocol
from polyjudge.rundir import JudgmentSpool

ITEMS = [Item(src_lang="en", tgt_lang="de", src=f"The dog {i} runs.", tgt=f"Der Hund {i} läuft.", system=s,
              doc_id=f"d{i // 2}", seg_id=str(i)) for i, s in enumerate(["A", "B", "A\t\u2028", "B"])]
ITEMS.append(Item(src_lang="en", tgt_lang="de", src="x", tgt="y", system=None, doc_id=None, seg_id=None))
JUDGES = ["m2", "m1"]  # judgments are sorted by judge: the store's order is not the run's
RUNS = 3
ANSWERS = [json.dumps({"score": 70}), json.dumps({"score": -0.0}), '{"score": NaN}', "not json", "", "é\u2028\"",
           json.dumps({"errors": {"critical": [], "major": [{"type": "accuracy/mistranslation", "desc": "Hund"}],
                                  "minor": []}}),
           json.dumps({"errors": {"critical": [], "major": [], "minor": []}}), '{"errors": []}', "score: 55"]
COLUMNS = ("key", "prompt_hash", "judge", "run_index", "status", "text", "finish_reason", "prompt_tokens",
           "completion_tokens", "latency_s", "error", "attempts", "created", "cached_prompt_tokens",
           "reasoning_tokens", "channel", "reasoning", "usage_note")

counts = st.none() | st.integers(0, 10**6)
rows = st.fixed_dictionaries({
    "status": st.sampled_from(["done"] * 6 + ["failed"]), "text": st.sampled_from(ANSWERS) | st.none(),
    "finish_reason": st.sampled_from(["stop", "stop", "stop", "length", "refusal", "content_filter", None, "odd"]),
    "prompt_tokens": counts, "completion_tokens": counts, "latency_s": st.none() | st.floats(0, 5),
    "error": st.none() | st.just("HTTP 500: boom"), "cached_prompt_tokens": counts, "reasoning_tokens": counts,
    "channel": st.sampled_from([None, "", "live", "batch", "cache"]),
    "reasoning": st.none() | st.sampled_from(["", "thinking\n\t"]),
    "usage_note": st.none() | st.just(json.dumps({"reported": {"prompt_tokens": -1}}))})
# Per (item, judge, run): no row (never sent), or a row; a row may repeat an earlier one of its item.
cells = st.lists(st.none() | rows | st.integers(0, 5), min_size=len(ITEMS) * len(JUDGES) * RUNS,
                 max_size=len(ITEMS) * len(JUDGES) * RUNS)


def keys(i):
    return [f"k{i}-{j}-{r}" for j in sorted(JUDGES) for r in range(RUNS)]


def _store(path, drawn):
    Store(path).close()
    db = sqlite3.connect(path)
    per_item = len(JUDGES) * RUNS
    written = []
    for n, cell in enumerate(drawn):
        i, k = divmod(n, per_item)
        if isinstance(cell, int):  # the same answer as an earlier run of the item, when there is one
            earlier = [c for c in drawn[i * per_item:n] if isinstance(c, dict)]
            cell = earlier[cell % len(earlier)] if earlier else None
        if cell is None:
            continue
        key = keys(i)[k]
        written.append({**cell, "key": key, "prompt_hash": f"h{i}", "judge": sorted(JUDGES)[k // RUNS],
                        "run_index": k % RUNS, "attempts": 1, "created": 1.0})
    written.reverse()  # stored in another order than read
    db.executemany(f"INSERT INTO responses ({','.join(COLUMNS)}) VALUES ({','.join('?' * len(COLUMNS))})",
                   [tuple(w[c] for c in COLUMNS) for w in written])
    db.commit()
    db.close()


def _lines(spool):
    spool._fh.flush()  # noqa: SLF001 - read what was written so far
    return spool.path.read_text(encoding="utf-8")


def _same_segments(a, b):
    assert a.keys() == b.keys()
    for judge in a:
        for x, y in zip(a[judge], b[judge], strict=True):
            assert (repr(x.score), x.runs_ok, x.runs_failed, repr(x.run_scores)) == \
                (repr(y.score), y.runs_ok, y.runs_failed, repr(y.run_scores))
            assert json.dumps(x.merged, sort_keys=True) == json.dumps(y.merged, sort_keys=True)


@settings(max_examples=60, deadline=None)
@given(st.sampled_from(["da", "mqm", "gemba-esa", "direct-index"]), cells, st.sampled_from(["mean", "rrwa"]),
       st.integers(1, 3))
def test_the_summary_from_rows_is_the_summary_from_records(tmp_path_factory, name, drawn, aggregator, chunk):
    same_summaries(tmp_path_factory.mktemp("rows"), name, drawn, aggregator, chunk)


def test_an_answer_without_text_and_an_empty_one_keep_their_own_lines(tmp_path):
    """Both parse as the empty answer, yet one line says ``"raw_text": null`` and the other ``""``."""
    done = {"status": "done", "finish_reason": "stop", "prompt_tokens": 1, "completion_tokens": 2, "latency_s": 0.5,
            "error": None, "cached_prompt_tokens": 0, "reasoning_tokens": 0, "channel": None, "reasoning": None,
            "usage_note": None}
    drawn = [{**done, "text": t} for t in (None, "", None, "", '{"score": 5}', None)] * len(ITEMS)
    for name in ("da", "mqm"):
        same_summaries(tmp_path / name, name, drawn, "mean", 2)


def same_summaries(tmp, name, drawn, aggregator, chunk):
    tmp.mkdir(parents=True, exist_ok=True)
    _store(tmp / "store.sqlite", drawn)
    protocol = get_protocol(name)
    store = Store(tmp / "store.sqlite", readonly=True)
    try:
        def lazy():
            return StoredJudgments(ITEMS, JUDGES, RUNS, protocol, keys, lambda: store, close_store=False,
                                   chunk=chunk)

        seen_fast = []
        fast = RunResult(list(ITEMS), JUDGES, protocol, RUNS, aggregator, lazy(), min_runs=2)
        fast_spool = JudgmentSpool(tmp / "fast")
        fast.summarise(fast_spool, store=store, on_rows=lambda ks, rs: seen_fast.append((ks, rs)))
        # The reference: every row's judgment (judgment_of on the row as StoredResponse), summarised as records.
        records = []
        for i in range(len(ITEMS)):
            got = store.get_many(keys(i))
            records += [judgment_of(i, k % RUNS, sorted(JUDGES)[k // RUNS], got.get(key), protocol, ITEMS[i])
                        for k, key in enumerate(keys(i))]
        reference = RunResult(list(ITEMS), JUDGES, protocol, RUNS, aggregator, records, min_runs=2)
        reference_spool = JudgmentSpool(tmp / "reference")
        reference.summarise(reference_spool)
        assert _lines(fast_spool) == _lines(reference_spool)
        assert _lines(fast_spool) == "".join(json.dumps(r.to_json(), ensure_ascii=False) + "\n" for r in records)
        assert fast_spool.count == reference_spool.count == len(records)
        a, b = fast._summary, reference._summary
        assert list(a.status.items()) == list(b.status.items())
        assert list(a.failures.items()) == list(b.failures.items())
        _same_segments(a.segments, b.segments)
        for judge in JUDGES:
            assert a.matrix[judge].tobytes() == b.matrix[judge].tobytes()
        # The records StoredJudgments gives when iterated are those judgments too.
        assert [json.dumps(r.to_json()) for r in lazy()] == [json.dumps(r.to_json()) for r in records]
        # Every chunk's rows are the store's rows as read.
        for ks, rs in seen_fast:
            assert rs == store.get_rows([k for kk in ks.values() for k in kk])
        fast_spool.discard()
        reference_spool.discard()
    finally:
        store.close()


def _count_answers(usage, answered):
    """The reference: the usage counted answer by answer from StoredResponse objects, as collect did before."""
    t = usage.tokens
    for s in answered:
        mine = usage.by_judge.setdefault(s.judge, {"prompt": 0, "completion": 0})
        mine["prompt"] += s.prompt_tokens
        mine["completion"] += s.completion_tokens
        t["prompt"] += s.prompt_tokens
        t["completion"] += s.completion_tokens
        t["cached_prompt"] += s.cached_prompt_tokens
        t["reasoning"] += s.reasoning_tokens
        usage.answered_by_batch += s.channel == "batch"
        usage.answered_from_cache += s.channel == "cache"
        if s.usage_note is not None:
            usage.anomalies["requests"] += 1
            if len(usage.anomalies["examples"]) < 20:
                usage.anomalies["examples"].append({"judge": s.judge, **json.loads(s.usage_note)})


@settings(max_examples=100, deadline=None)
@given(st.lists(rows, max_size=12))
def test_usage_counted_from_rows_is_usage_counted_from_answers(drawn):
    rows_read = [("k", r["status"], r["text"], r["finish_reason"], r["prompt_tokens"], r["completion_tokens"],
                  r["latency_s"], r["error"], 1, r["cached_prompt_tokens"], r["reasoning_tokens"], r["channel"],
                  judge, r["reasoning"], None, r["usage_note"]) for r, judge in zip(drawn, ["a", None, "b"] * 4)]
    tokens = {"prompt": 0, "completion": 0, "cached_prompt": 0, "reasoning": 0}
    fast, reference = Usage(dict(tokens)), Usage(dict(tokens))
    fast.count_rows(rows_read)
    _count_answers(reference, [_stored(r) for r in rows_read])
    assert fast.to_json() == reference.to_json()


@settings(max_examples=150, deadline=None)
@given(st.sampled_from(["da", "mqm", "tsa", "gemba-spans"]), st.lists(rows | st.none(), min_size=1, max_size=8))
def test_a_rows_judgment_is_judgment_of_the_row(name, drawn):
    protocol, memo, item = get_protocol(name), {}, ITEMS[2]
    for run, r in enumerate(drawn):
        row = None if r is None else ("k", r["status"], r["text"], r["finish_reason"], r["prompt_tokens"],
                                      r["completion_tokens"], r["latency_s"], r["error"], 1, None, None,
                                      r["channel"], "j", r["reasoning"], None, None)
        got = record_of(2, item, run, "j", row, outcome_of(row, protocol, item, memo))
        want = judgment_of(2, run, "j", None if row is None else _stored(row), protocol, item)
        assert json.dumps(got.to_json(), ensure_ascii=False) == json.dumps(want.to_json(), ensure_ascii=False)
        assert got.score == want.score or (math.isnan(got.score) and math.isnan(want.score))


@settings(max_examples=25, deadline=None)
@given(st.lists(st.tuples(st.sampled_from(["done", "done", "failed"]), st.sampled_from([None, "batch", "cache"]),
                          counts, counts, counts), min_size=40, max_size=40))
def test_the_cost_counted_from_rows_is_cost_of_each_distinct_answer(tmp_path_factory, drawn):
    """engine.collect's cost and tokens from the rows of each chunk: each distinct request once, at its judge's
    price (the batch price for batch answers, nothing for answers from the shared cache), summed in run order."""
    from polyjudge.engine.collect import collect, cost_of
    from polyjudge.engine.plan import Plan
    from polyjudge.engine.pricing import ModelPrice
    from tests.engine.helpers import duplicated_items

    path = tmp_path_factory.mktemp("cost") / "store.sqlite"
    plan = Plan(duplicated_items(), get_protocol("da"), ["j2", "j1"], runs=2, temperature=0.0, seed=3)
    tasks = {t.key: t for t in plan.tasks()}  # identical prompts share their keys
    store = Store(path)
    store._db.executemany(  # noqa: SLF001 - rows as a run stores them
        "INSERT INTO responses (key, prompt_hash, judge, run_index, status, text, finish_reason, prompt_tokens, "
        "completion_tokens, latency_s, attempts, created, cached_prompt_tokens, channel) "
        "VALUES (?,?,?,?,?,'{\"score\": 5}','stop',?,?,0.1,1,1.0,?,?)",
        [(t.key, t.prompt_hash, t.judge, t.run_index, status, p, c, cached, channel)
         for t, (status, channel, p, c, cached) in zip(tasks.values(), drawn)])
    table = {"j1": ModelPrice(1.3, 7.1, 0.37, 0.5), "j2": ModelPrice(0.11, 0.9)}
    result, usage = collect(plan, store, path, table, aggregator="mean", min_runs=1)
    want, by_judge, tokens = 0.0, {}, {"prompt": 0, "completion": 0, "cached_prompt": 0, "reasoning": 0}
    seen = set()
    for i in range(len(plan.items)):
        if plan.prompt_hash(i) in seen:
            continue
        seen.add(plan.prompt_hash(i))
        got = store.get_many([k for k in tasks if tasks[k].prompt_hash == plan.prompt_hash(i)])
        for key in sorted(got, key=lambda k: (tasks[k].judge, tasks[k].run_index)):
            s = got[key]
            if s.status != "done":
                continue
            cost = cost_of([s], table)
            want += cost
            by_judge[s.judge] = by_judge.get(s.judge, 0.0) + cost
            tokens["prompt"] += s.prompt_tokens
            tokens["completion"] += s.completion_tokens
            tokens["cached_prompt"] += s.cached_prompt_tokens
    store.close()
    assert (usage.cost, usage.cost_by_judge, usage.tokens) == (want, by_judge, tokens)
    assert usage.answered_by_batch == sum(1 for st_, ch, *_ in drawn[:len(tasks)] if st_ == "done" and ch == "batch")
    result.judgments  # noqa: B018 - the spool is dropped with the result


@settings(max_examples=40, deadline=None)
@given(st.lists(st.sampled_from(["j", "m1", "Ünï", "a\x00b", "openai:gpt"]), min_size=1, max_size=3, unique=True),
       st.integers(1, 4), st.integers(0, 2**40), st.booleans())
def test_an_items_keys_are_task_key_of_each_judge_and_run(judges, runs, seed, forms):
    from polyjudge.engine.collect import item_keys
    from polyjudge.engine.plan import Plan, task_key
    from tests.engine.helpers import duplicated_items

    plan = Plan(duplicated_items(), get_protocol("da"), judges, runs=runs, temperature=0.0, seed=seed,
                forms={j: "structured=none" for j in judges[:1]} if forms else None)
    keys = item_keys(plan)
    for i in range(len(plan.items)):
        h = plan.prompt_hash(i)
        assert keys(i) == [task_key(plan.key_names[j], r, seed + r, h) for j in sorted(judges) for r in range(runs)]
