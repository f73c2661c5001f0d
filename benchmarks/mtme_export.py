"""Check: polyjudge's exported files and in-place meta-evaluation, as mt-metrics-eval itself sees them.

Builds the small TED en-de test set of the tests (``tests/helpers/mtme_testset.py``:
real WMT21 TED segments and MQM scores from ../shared/data, in mt-metrics-eval's
layout as ``wmt21.tedtalks``, with two stored metrics), judges it with the
scripted OpenAI-compatible server, and then:

1. ``polyjudge export RUN --to mtme`` into a scratch copy's ``metric-scores/en-de``,
   loaded by mt-metrics-eval's own loader, strict (``data.EvalSet(...,
   read_stored_metric_scores=True, strict=True)``): it refuses bad metric names,
   missing systems, wrong counts and ``None``;
2. ``polyjudge meta-eval RUN --mtme ROOT/wmt21.tedtalks --with-stored-metrics`` (in
   place, on the original test set) against ``data.GetCorrelations`` on the scratch
   copy (standard reference, human systems and outliers left out, standard gold):
   segment Pearson (no grouping) and system Pearson of every metric must agree to 1e-6
   (score files hold 6 decimals: mt-metrics-eval reads the exported system scores, the
   in-place run's are the unrounded means; the stored metrics agree to the last digit);
3. ``polyjudge export RUN --to wmt23`` read by the WMT23 metrics task's CodaLab scorer
   (``codalab/eval.py``: ``read_seg_scores``, ``read_sys_scores``), which checks the
   field counts, segment numbering and coverage.

mt-metrics-eval is run from a checkout outside the project (``--mtme PATH``; nothing
of it is copied here). Its ``data`` module imports ``apache_beam`` (used only by its
parallel significance helper) and ``ratings`` imports ``dacite`` (used only to read
rating files); when they are not installed, empty placeholder modules stand in and
the output says so: neither is reached by what runs here.

    python benchmarks/mtme_export.py --mtme /tmp/mtme
"""

from __future__ import annotations

import argparse
import importlib.util
import json
import os
import shutil
import sys
import tempfile
import types
import zlib
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "src"))
sys.path.insert(0, str(ROOT))

from polyjudge.api import MetaEvalConfig, meta_eval  # noqa: E402
from polyjudge.api.exporting import ExportConfig, export  # noqa: E402
from polyjudge.cli.main import main  # noqa: E402
from tests.helpers.mtme_testset import LP, NAME, build_ted_testset, judge_items  # noqa: E402
from tests.helpers.openai_server import ScriptedServer  # noqa: E402


def load_mtme(path: Path) -> tuple[Any, list[str]]:
    """mt-metrics-eval's ``data`` module from a checkout (placeholders for unused heavy imports)."""
    if not (path / "mt_metrics_eval" / "data.py").is_file():
        print(f"mtme_export.py: {path} is not an mt-metrics-eval checkout (no mt_metrics_eval/data.py)",
              file=sys.stderr)
        sys.exit(2)
    stubbed = []
    for name in ("apache_beam", "dacite"):
        if importlib.util.find_spec(name) is None:
            sys.modules[name] = types.ModuleType(name)
            stubbed.append(name)
    sys.path.insert(0, str(path))
    from mt_metrics_eval import data  # type: ignore[import-not-found]  # outside the project

    return data, stubbed


def _judge(items: Path, out: Path) -> Path:
    def score(body: dict[str, Any]) -> str:
        return json.dumps({"score": zlib.crc32(body["messages"][-1]["content"].encode()) % 101})

    os.environ.setdefault("OPENAI_API_KEY", "scripted")
    with ScriptedServer(score) as srv:
        try:
            main(["judge", str(items), "--out", str(out), "-p", "da", "--backend", "openai", "--model", "m",
                  "--base-url", srv.base_url, "-q"])
        except SystemExit as exc:
            if exc.code:
                raise
    return out


def mtme_correlations(data: Any, path: Path) -> tuple[Any, dict[str, dict[str, float]]]:
    """mt-metrics-eval's EvalSet (strict) and its seg/sys Pearson per metric, as its tables compute them."""
    evs = data.EvalSet(NAME, LP, read_stored_metric_scores=True, path=str(path), strict=True)
    out: dict[str, dict[str, float]] = {}
    for level in ("seg", "sys"):
        corrs = data.GetCorrelations(evs, level, {evs.std_ref}, set(), include_human=False, include_outliers=False,
                                     gold_name="std", primary_metrics=False)
        for name, corr in corrs.items():
            out.setdefault(name, {})[f"{level}_pearson"] = float(corr.Pearson()[0])
    return evs, out


def old_name_check(data: Any, scratch: Path) -> str:
    """What mt-metrics-eval said about the name runs had before (``polyjudge-da``, no reference part)."""
    folder = scratch / NAME / "metric-scores" / LP
    for p in list(folder.glob("polyjudge-da-src.*")):
        p.rename(folder / p.name.replace("polyjudge-da-src.", "polyjudge-da."))
    try:
        data.EvalSet(NAME, LP, read_stored_metric_scores=True, path=str(scratch), strict=True)
    except ValueError as exc:
        return f"refused: {exc}"
    finally:
        for p in list(folder.glob("polyjudge-da.*")):
            p.rename(folder / p.name.replace("polyjudge-da.", "polyjudge-da-src."))
    return "accepted"


def codalab_check(path: Path, folder: Path) -> str:
    """The WMT23 CodaLab scorer's readers on the wmt23 export (it raises on any format error)."""
    spec = importlib.util.spec_from_file_location("mtme_codalab_eval", path / "mt_metrics_eval" / "codalab" / "eval.py")
    assert spec is not None and spec.loader is not None
    scorer = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(scorer)
    scorer.TEST_SET, scorer.LANG_PAIR_TO_REF = NAME, {LP: "refA"}
    seg, _ = scorer.read_seg_scores(str(next(folder.glob("*.seg.score"))))
    sys_, _ = scorer.read_sys_scores(str(next(folder.glob("*.sys.score"))))
    (metric, ref), systems, matrix = seg[LP]
    return (f"read_seg_scores: metric {metric}, ref {ref}, {len(systems)} systems x {matrix.shape[1]} segments; "
            f"read_sys_scores: domains {sys_[LP][2]}")


def run(mtme: Path) -> int:
    data, stubbed = load_mtme(mtme)
    tmp = Path(tempfile.mkdtemp(prefix="pj-mtme-"))
    try:
        ts = build_ted_testset(tmp / "testsets")
        run_dir = _judge(judge_items(ts, tmp / "items.jsonl"), tmp / "run")
        scratch = tmp / "scratch"
        shutil.copytree(ts.root, scratch / NAME)
        files = export(ExportConfig(run_dir, "mtme", tmp / "export")).files
        for p in files:
            shutil.copy(p, scratch / NAME / "metric-scores" / LP / p.name)
        print(f"mt-metrics-eval checkout: {mtme}" + (f" (placeholders for {', '.join(stubbed)})" if stubbed else ""))
        print(f"exported: {', '.join(p.name for p in files)}")
        evs, peer = mtme_correlations(data, scratch)
        print(f"EvalSet(strict=True) loaded: metrics {sorted(evs.metric_names)}, levels {sorted(evs.levels)}, "
              f"std gold {evs.StdHumanScoreName('seg')}, std ref {evs.std_ref}")
        ours = meta_eval(MetaEvalConfig(mtme_dir=ts.root, lps=(LP,), runs=(run_dir,), with_stored_metrics=True,
                                        k=0)).per_lp[LP]
        ok = True
        print(f"{'metric':<20} {'statistic':<12} {'polyjudge':>12} {'mt-metrics-eval':>16} {'|diff|':>9}  agree")
        for name in sorted(peer):
            for stat, theirs in sorted(peer[name].items()):
                mine = float(ours[name][stat])
                same = abs(mine - theirs) <= 1e-6
                ok &= same
                print(f"{name:<20} {stat:<12} {mine:>12.6f} {theirs:>16.6f} {abs(mine - theirs):>9.1e}  "
                      f"{'yes' if same else 'NO'}")
        print(f"the old name polyjudge-da.*.score: {old_name_check(data, scratch)}")
        wmt23 = export(ExportConfig(run_dir, "wmt23", tmp / "wmt23")).files
        print(codalab_check(mtme, wmt23[0].parent))
        print("all agree" if ok else "DISAGREEMENT")
        return 0 if ok else 1
    finally:
        shutil.rmtree(tmp, ignore_errors=True)


def cli() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0] if __doc__ else None)
    ap.add_argument("--mtme", type=Path, required=True, help="a checkout of google-research/mt-metrics-eval")
    sys.exit(run(ap.parse_args().mtme))


if __name__ == "__main__":
    cli()
