"""The report's expected-score section: an expected run next to a sampled run of the same protocol."""

from __future__ import annotations

from polyjudge.data.records import Item
from polyjudge.engine.result import RunResult
from polyjudge.protocols import get_protocol
from polyjudge.protocols.base import ProtocolOptions
from polyjudge.report.load import load_run
from polyjudge.report.sections import Table, build_sections, expected_blocks
from polyjudge.rundir import OK, Manifest, RunConfig
from tests.helpers.judgments import judgment_at

SYSTEMS = {"A": 80.0, "B": 70.0, "C": 60.0}


def write(out, *, runs, expected):
    items = [Item(src_lang="en", tgt_lang="de",
                  src=f"s{i}", tgt=f"t{i}", system=s, doc_id="d", seg_id=str(i)) for s in SYSTEMS for i in range(5)]
    options = {"score_mode": "expected"} if expected else {}
    judgments = []
    for k, it in enumerate(items):
        for r in range(runs):
            base = SYSTEMS[it.system or ""] + int(it.seg_id or 0)
            score = base + 0.37 * k if expected else base + 10 * ((k + r) % 3 - 1)
            judgments.append(judgment_at(items, k, r, "judge", OK, None, "", {"score": score}, score))
    manifest = Manifest(protocol="da", config=RunConfig(runs=runs, temperature=0.0 if expected else 0.7,
                                                        aggregator="mean", protocol_options=options))
    protocol = get_protocol("da", ProtocolOptions(extra=options))
    RunResult(items, ["judge"], protocol, runs, "mean", judgments, manifest=manifest).write(out)
    return out


def test_expected_and_sampled_runs_get_a_comparison_section(tmp_path):
    exp = load_run(write(tmp_path / "exp", runs=1, expected=True))
    smp = load_run(write(tmp_path / "smp", runs=4, expected=False))
    sections, _ = build_sections([exp, smp], n_boot=50)
    found = [s for s in sections if s.id == "expected-scores"]
    assert len(found) == 1
    table = found[0].blocks[0]
    assert isinstance(table, Table) and "SPA" not in table.columns
    names = [row[0] for row in table.rows]
    assert names[:2] == ["expected", "one sampled run"] and "mean of 4 runs" in names
    expected_row = table.rows[0]
    assert expected_row[1] == 1 and expected_row[2] == 15 and expected_row[3] == 15  # no ties
    # without a sampled run of several runs there is nothing to compare
    sections, _ = build_sections([exp], n_boot=50)
    assert not [s for s in sections if s.id == "expected-scores"]


def test_study_blocks_show_human_columns_and_tolerate_nulls():
    obj = {"judge": "j", "n_items": 3, "n_sampled_runs": 10, "human": True, "reference": "mean-all",
           "ways": [{"name": "expected", "requests": 1, "n": 3, "distinct": 3, "tie_rate": 0.0,
                     "tau_vs_reference": 1.0, "tau_min": 1.0, "same_best": 1.0, "tau_between_runs": None,
                     "spa": 0.9, "acc_t": 0.6}]}
    (table,) = expected_blocks(obj)
    assert table.columns[-2:] == ["SPA", "acc-t"] and table.rows[0][-3:] == ["n/a", "0.9", "0.6"]
    assert expected_blocks({"nothing": 1}) == []
