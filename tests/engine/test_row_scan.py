"""Reading a run's answers in one pass over the store (engine.store.RowScan, issue 35) gives, for every
chunk of keys asked for, exactly what looking each key up gives: whatever order the rows were stored
in, keys asked for twice or never stored, and however small the read-ahead buffer."""

import sqlite3

from hypothesis import given, settings
from hypothesis import strategies as st

from polyjudge.engine.store import Store

KEYS = [f"k{i:03d}" for i in range(40)]


def _store(path, stored):
    Store(path).close()
    db = sqlite3.connect(path)
    db.executemany("INSERT INTO responses (key, prompt_hash, judge, run_index, status, text, finish_reason, "
                   "prompt_tokens, attempts, created, channel, usage_note) VALUES (?,?,?,?,?,?,?,?,?,?,?,?)",
                   [(k, "h", f"j{n % 3}", n, "done" if n % 4 else "failed", f"answer {k}", "stop", n, 1, 1.0,
                     "batch" if n % 5 == 0 else None, None) for n, k in enumerate(stored)])
    db.commit()
    db.close()


@settings(max_examples=120, deadline=None)
@given(st.permutations(KEYS).flatmap(lambda ks: st.tuples(st.just(ks), st.integers(0, len(ks)))),
       st.lists(st.lists(st.sampled_from(KEYS + ["absent1", "absent2"]), max_size=15), max_size=8),
       st.integers(0, 6), st.booleans())
def test_a_pass_over_the_table_gives_what_lookups_give(tmp_path_factory, stored, chunks, slack, readonly):
    order, n = stored
    path = tmp_path_factory.mktemp("scan") / "store.sqlite"
    _store(path, order[:n])
    store = Store(path, readonly=readonly)
    try:
        scan = store.scan(slack)
        for chunk in chunks + [KEYS]:
            assert scan.get_many(chunk) == store.get_many(chunk)
        scan.close()
        assert scan.get_many(KEYS[:5]) == store.get_many(KEYS[:5])
    finally:
        store.close()


def test_a_store_without_answers_scans_to_nothing(tmp_path):
    path = tmp_path / "empty.sqlite"
    sqlite3.connect(path).close()
    store = Store(path, readonly=True)
    try:
        assert store.scan().get_many(KEYS) == {}
    finally:
        store.close()
