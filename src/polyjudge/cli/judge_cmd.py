"""``polyjudge judge``, ``polyjudge score`` and ``polyjudge demo``: parse, call the API, print."""

from __future__ import annotations

import gc
import json
import shlex
from collections.abc import Mapping
from dataclasses import dataclass
from importlib import resources
from pathlib import Path
from typing import TYPE_CHECKING, Any

import click

from polyjudge.api.registries import input_formats
from polyjudge.api.runs import PENDING, BudgetExceeded, Item, RunInterrupted, RunStopped, file_target, run_dir_target
from polyjudge.cli.errors import error_line
from polyjudge.cli.options import (
    RegistryHelpCommand,
    format_option,
    guard_outputs,
    input_options,
    judge_options,
    out_option,
    takes_judging,
)
from polyjudge.cli.specs import STUDY_LEAVES_OUT, key_option, study_key, toml_value
from polyjudge.data.errors import InputError

if TYPE_CHECKING:
    from polyjudge.api import Estimate, JudgingSpec, RunResult

INPUT_FORMATS = tuple(input_formats())  # the registered readers (plugins' included)


def api_judge(items: list[Item], spec: JudgingSpec) -> RunResult:
    """:func:`polyjudge.api.judge`, loaded when a command judges (``--help`` does not load the engine)."""
    from polyjudge.api import judge

    return judge(items, spec)


class SpendingCapReached(click.ClickException):
    """The spending cap stopped the run: ``polyjudge: error: ...`` and exit 4 (README, "Exit codes")."""

    exit_code = BudgetExceeded.exit_code

    def show(self, file: Any = None) -> None:
        error_line(self.message)


def print_summary(result: RunResult, out: Path | None, fmt: str = "text", *,
                  max_failure_rate: float | None = None, table: bool = True) -> None:
    """Counts, failures, tokens and cost on stderr; the system table on stdout in ``fmt``
    (left out with ``table=False``, for a run that stopped short)."""
    m = result.manifest
    c = m.counts

    def echo(text: str = "") -> None:
        click.echo(text, err=True)

    echo(f"signature: {m.signature}")
    ok = c.get("status_ok", 0)
    pending = c.get("status_pending", 0)
    echo(f"items: {c['items']}  judgments: {c['judgments']}  ok: {ok}  failed: {c['judgments'] - ok - pending}"
         + (f"  not run: {pending}" if pending else "")
         + f"  (sent now: {c['sent_this_session']}, from store: {c['from_store']}, "
         f"from cache: {c.get('from_cache', 0)}{_imported(c)}, retries: {c['retries']})")
    n, kinds = c["judgments"], result.failure_kinds()
    if n:
        limit = f"; allowed: {max_failure_rate:.0%}" if max_failure_rate is not None else ""
        failed = sum(kinds.values())  # what --max-failure-rate counts, by kind when there are any
        by_kind = ": " + ", ".join(f"{kind} {k}" for kind, k in kinds.items()) if failed else ""
        echo(f"failed judgments: {failed} of {n} ({failed / n:.1%}{limit}){by_kind}")
    for reason, k in [(r, k) for r, k in m.failures.items() if not r.startswith(f"{PENDING}:")][:8]:
        echo(f"  failure x{k}: {reason}")
    for line in _paying_less(result):
        echo(line)
    for judge, per_server in result.server_counts.items():  # judges served by a pool of servers
        echo(f"requests per server ({judge}): " + ", ".join(f"{url} {n}" for url, n in per_server.items()))
    if c.get("ray_actors_lost"):  # --executor ray: actors (and nodes) lost under the run
        echo(f"ray: {c['ray_actors_lost']} actor(s) lost ({c.get('ray_nodes_lost', 0)} node(s) lost), "
             f"{c.get('ray_resent', 0)} unanswered request(s) handed out again"
             + (f"; the pool shrank from {c.get('ray_actors')} to {c['ray_actors_left']} actor(s)"
                if "ray_actors_left" in c else ""))
    cached = m.tokens.get("cached_prompt", 0)
    echo(f"tokens: {m.tokens['prompt']:,} prompt" + (f" ({cached:,} cached)" if cached else "")
         + f" + {m.tokens['completion']:,} completion  cost: ${m.cost_usd:.4f}" + _unpriced(m)
         + (f" of the ${result.max_cost:.4f} cap (${max(0.0, result.max_cost - m.cost_usd):.4f} left)"
            if result.max_cost is not None else "")
         + f"  {_wall_time(m.wall_time_s, m.unknown.get('wall_time_s_session'))}")
    for line in settled_lines(m.settled):
        echo(line)
    if out is not None:
        echo(f"run directory: {out}")
    if not table:
        return
    rows = result.system_rows()
    if fmt == "json":
        click.echo(json.dumps({"signature": m.signature, "counts": c, "cost_usd": m.cost_usd,
                               "systems": [{"system": r.system, "score": r.score, "n_segments": r.n_segments,
                                            "n_unscored": r.n_unscored} for r in rows],
                               **({"settled": m.settled} if m.settled else {})}, indent=2))
        return
    _system_table(rows, m.settled)


def _system_table(rows: list[Any], settled: Mapping[str, Any]) -> None:
    """The system table on stdout; a run judged --until-settled adds each system's interval and group."""
    bounds = {s["system"]: s for s in settled.get("systems", ())}
    click.echo("system\tscore\tn_segments" + ("\tlow\thigh\tgroup" if bounds else ""))
    for row in rows:
        more = ""
        if row.system in bounds:
            b = bounds[row.system]
            more = f"\t{b['low']:.4f}\t{b['high']:.4f}\t{b['group']}"
        click.echo(f"{row.system}\t{'' if row.score is None else f'{row.score:.4f}'}\t{row.n_segments}{more}")


def settled_lines(settled: Mapping[str, Any]) -> list[str]:
    """A run judged --until-settled: how far it went, the calls against a full run's, the pairs settled and
    the pairs left open (ties: their order is not known)."""
    if not settled:
        return []
    calls, full = settled["calls"], settled["calls_full"]
    why = {"settled": "every pair settled", "exhausted": "the segments ran out", "budget": "the spending cap"}
    lines = [f"until settled: {settled['units_judged']} of {settled['units_total']} {settled['unit']}s in "
             f"{settled['rounds']} round(s), stopped by {why.get(settled['stopped'], settled['stopped'])}; "
             f"calls {calls:,} of a full run's {full:,} ({calls / max(full, 1):.0%}); sent now {settled['sent']:,}",
             f"  settled at {settled['alpha']:g} (the full data orders no settled pair otherwise, every look "
             f"included): {len(settled['settled'])} of {len(settled['settled']) + len(settled['open'])} pairs"]
    lines += [f"    {p['better']} > {p['worse']}  (difference {p['low']:.4g} to {p['high']:.4g})"
              for p in settled["settled"]]
    if settled["open"]:
        lines.append("  open pairs, shown as ties (their order is not known): "
                     + ", ".join(f"{p['a']} = {p['b']}" for p in settled["open"]))
    drawn = settled["units_judged"]
    retired = [s for s in settled.get("systems", ()) if s.get("units", drawn) < drawn]
    if retired:
        lines.append(f"  retired once settled against every other system (score and interval from the "
                     f"{settled['unit']}s judged): " + ", ".join(f"{s['system']} {s['units']}" for s in retired))
    if not settled.get("range_given") and settled.get("method") != "asymptotic":
        lo, hi = settled["range"]
        lines.append(f"  score range {lo:g} to {hi:g} taken from the scores judged (give --settle-range LOW,HIGH "
                     "for the guarantee to hold exactly)")
    elif settled.get("clipped"):
        lines.append(f"  {settled['clipped']} score(s) outside --settle-range were clipped into it")
    return lines


def _imported(counts: Mapping[str, Any]) -> str:
    """Beside the cache count: how many of those answers came from a batch file once imported."""
    n = counts.get("from_cache_imported", 0)
    return f" ({n} answer(s) first imported from a batch file)" if n else ""


def _unpriced(m: Any) -> str:
    """The judges whose price is unknown, beside the cost (their $0 is not "free")."""
    from polyjudge.api.cost import PRICE_UNKNOWN, unpriced

    models = unpriced(m)
    return f" ({PRICE_UNKNOWN}: {', '.join(models)})" if models else ""


def _wall_time(total_s: float, session_s: Any) -> str:
    """One session: ``wall time: 42.7s``; after a resume this session's and every session's, labelled."""
    if not isinstance(session_s, (int, float)) or abs(total_s - session_s) < 0.05:
        return f"wall time: {total_s:.1f}s"
    return f"wall time: {session_s:.1f}s this session, {total_s:.1f}s in all sessions"


def _paying_less(result: RunResult) -> list[str]:
    """Summary lines on deduplication, samples per request and batches (only what happened)."""
    c = result.manifest.counts
    lines = []
    shared = c.get("shared_answers", 0)
    if shared:
        lines.append(f"deduplication: {c['judgments']} judgments from {c.get('distinct_requests', 0)} distinct "
                     f"requests; {shared} judgments share their request with another item")
    if c.get("multi_sample_requests"):
        lines.append(f"samples per request: {c['multi_sample_requests']} requests answered several runs each")
    for judge, what in result.samples_fallback.items():
        lines.append(f"samples per request: judge {judge}: {what}; one request per run instead")
    if c.get("answered_by_batch"):
        lines.append(f"batch: {c['answered_by_batch']} answers through the Batch API (at the batch price)")
    return lines


def guard_judge_outputs(spec: JudgingSpec, **files: str | None) -> None:
    """Refuse a run directory, --record or --batch-export (and ``files``: flag name -> path) that
    is one of the command's inputs or another of its outputs (exit 2, naming both)."""
    out = spec.output.out
    outputs = {"out": run_dir_target("-o/--out", None if out is None else str(out)),
               "record": file_target("--record", spec.cache.record),
               "batch_export": file_target("--batch-export", spec.execution.batch_export)}
    for name, path in files.items():
        outputs[name] = file_target("--" + name.replace("_", "-"), path)
    guard_outputs(outputs)


def judge_and_summarise(items: list[Item], spec: JudgingSpec, fmt: str) -> RunResult:
    """Judge into the spec's run directory and print the summary; a run that stopped short (endpoint
    given up, too many failed requests) still prints its counts before its error line (exit 3)."""
    out, rate = spec.output.out, spec.budget.max_failure_rate
    assert out is not None
    try:
        result = api_judge(items, spec)
    except RunInterrupted:
        raise
    except BudgetExceeded as exc:
        print_summary(exc.result, Path(out), max_failure_rate=rate, table=False)
        raise SpendingCapReached(str(exc)) from None
    except RunStopped as exc:
        print_summary(exc.result, Path(out), max_failure_rate=rate, table=False)
        raise
    print_summary(result, Path(out), fmt, max_failure_rate=rate)
    return result


@dataclass(frozen=True, slots=True)
class JudgeCall:
    """``polyjudge judge``'s parsed flags: the judging's spec, and how the command prints."""

    spec: JudgingSpec
    fmt: str
    dry_run: bool
    print_spec: bool = False


@click.command(cls=RegistryHelpCommand)
@click.argument("input_path", metavar="INPUT", type=click.Path())
@out_option("Run directory (re-running the same command resumes from it); not needed with --dry-run.",
            legacy_decls=("-O",))
@key_option("judging", "input_format")  # the [[judging]] keys' declarations (data/study_keys.py)
@format_option(legacy_input=INPUT_FORMATS)
@key_option("judging", "src_lang")
@key_option("judging", "tgt_lang")
@input_options
@key_option("judging", "limit")
@click.option("--dry-run", is_flag=True,
              help="Print the requests, tokens and an upper bound of the cost the run would take, and warn "
                   "about prompts over a model's context; sends and writes nothing.")
@click.option("--print-spec", is_flag=True,
              help="Print this judging as a study file's [[judging]] table (the options given that differ from "
                   "their defaults; paths as given) and exit without judging.")
@judge_options
@takes_judging(JudgeCall)
def judge(call: JudgeCall) -> None:
    """Judge every item of INPUT and write a run directory (re-running resumes).

    INPUT is a JSONL/CSV/TSV/parquet file, an mt-metrics-eval test-set folder
    (ROOT/wmt23 with --lp en-de) or a Hugging Face dataset (hf:NAME[:CONFIG][:SPLIT], hf:PATH).
    """
    from polyjudge.api.inputs import read_input, with_testset_reference

    spec = call.spec
    if call.print_spec:
        _print_spec()
        return
    if spec.output.out is None and not call.dry_run:
        raise click.UsageError("Missing option '-o' / '--out'.")
    if not call.dry_run:
        guard_judge_outputs(spec)
    items = read_input(spec.data)
    # The items live until the command ends: frozen, the garbage collector no longer walks a million of
    # them each time it runs (about a tenth of a million-item dry run's time); thawed when it returns, so
    # a process that runs commands in turn (tests, notebooks) collects them as usual.
    gc.freeze()
    try:
        _judge_items(items, with_testset_reference(spec, items), call.fmt, call.dry_run)
    finally:
        gc.unfreeze()


def _print_spec() -> None:
    """``--print-spec``: this command line's judging as a study's ``[[judging]]`` table (secrets masked)."""
    from polyjudge.api import describe_judge
    from polyjudge.api.runs import redact
    from polyjudge.cli.options import warn, with_legacy_spellings

    ctx = click.get_current_context()
    given = with_legacy_spellings(ctx)
    if given.get("judges"):  # parsed into JudgeSpec objects: written back as the text a study takes
        given["judges"] = tuple(describe_judge(j, mask=False) for j in given["judges"])
    table = _judging_table(ctx, given, ctx.params["input_path"], ctx.params.get("out"))
    if redact(table) != table:  # a study file is kept and shared: keys stay in their environment variable
        warn("--print-spec masked the secrets of the options ([REDACTED]); give keys with --api-key-env")
    click.echo(redact(table), nl=False)


def _judging_table(ctx: click.Context, given: dict[str, Any], input_path: str, out: str | None) -> str:
    """The judging of this command line as a study's ``[[judging]]`` table: a name (the run directory's),
    the input, every setting of the run's identity (defaults included, so the table means the same run
    under a later version whose defaults differ; a protocol's default temperature written out) and every
    other study key whose value differs from its default. One-off actions (``restart``) are never written:
    pasted into a study they would act at every ``study run``."""
    from polyjudge.api.settings import command_line

    declared = {s.dest: s for s in command_line()}
    lines = ["[[judging]]", f"name = {toml_value(Path(out).name if out else Path(input_path).stem)}",
             f"input = {toml_value(input_path)}"]
    defaults = ctx.command.make_context(ctx.info_name, [input_path], parent=ctx.parent).params
    for param in ctx.command.params:
        key, name = study_key(param), param.name or ""
        setting = declared.get(name)
        if key is None or getattr(param, "hidden", False) or not param.expose_value \
                or name in STUDY_LEAVES_OUT["judge"] or (setting is not None and setting.one_off):
            continue
        value = given.get(name)
        if setting is not None and setting.identity:
            value = _identity_value(setting.name, value, given)
        elif value == defaults.get(name):
            continue
        if value is not None and value != ():
            lines.append(f"{key} = {toml_value(value)}")
    return "\n".join(lines) + "\n"


def _identity_value(name: str, value: Any, given: dict[str, Any]) -> Any:
    """An identity setting's value as the run uses it: the default judge named, the protocol's default
    temperature written out."""
    if name == "judges" and not value and not (given.get("backend") or given.get("model") or given.get("base_url")):
        from polyjudge.api.settings import default

        return tuple(default("judges"))
    if name == "temperature" and value is None:
        from polyjudge.api.registries import PROTOCOLS

        return float(PROTOCOLS.get(given["protocol"]).default_temperature)
    return value


def _judge_items(items: list[Item], spec: JudgingSpec, fmt: str, dry_run: bool) -> None:
    if dry_run:
        from polyjudge.api import estimate

        est: Estimate = estimate(items, spec)
        click.echo(json.dumps(est.to_dict()) if fmt == "json" else est.describe())
        if spec.extra.get("until_settled"):
            click.echo("--until-settled: judged in rounds that stop once every pair of systems is settled; the "
                       "numbers above are the most it can send (every segment)", err=True)
        return
    result = judge_and_summarise(items, spec, fmt)
    if spec.execution.batch_export is None:
        return
    if result.manifest.counts.get("status_pending", 0):
        click.echo(f"batch input written to {spec.execution.batch_export}; answer it (e.g. with vLLM's run_batch) "
                   "and load the output with --batch-import FILE", err=True)
    else:  # the store or the shared cache answered every request: nothing was exported
        click.echo(f"no batch input written to {spec.execution.batch_export}: every request of the run is answered "
                   "already (from its store or the shared cache)", err=True)


@dataclass(frozen=True, slots=True)
class ScoreCall:
    """``polyjudge score``'s parsed flags: the judging's spec, the files and how the command prints."""

    spec: JudgingSpec
    sources: str
    translations: tuple[str, ...]
    references: str | None
    src_lang: str
    tgt_lang: str
    fmt: str
    to_json: str | None


@click.command(cls=RegistryHelpCommand)
@click.option("-s", "--sources", required=True, type=click.Path(dir_okay=False), help="Source sentences, one per line.")
@click.option("-t", "--translations", required=True, multiple=True, type=click.Path(dir_okay=False),
              help="Hypotheses, one per line; repeat for several systems (each named by its file's stem), as "
                   "comet-score takes them.")
@click.option("-r", "--references", default=None, type=click.Path(dir_okay=False), help="References, one per line.")
@click.option("--src-lang", required=True, help="Source language code of the files.")
@click.option("--tgt-lang", required=True, help="Target language code of the files.")
@out_option("Keep a run directory (and resume from it).", legacy_decls=("-O",))
@format_option()
@click.option("--to-json", type=click.Path(dir_okay=False), default=None,
              help="Also write segment scores as JSON (comet-score's --to_json).")
@judge_options
@takes_judging(ScoreCall)
def score(call: ScoreCall) -> None:
    """Score parallel text files like comet-score: one line per segment, then the system score."""
    from polyjudge.api.inputs import read_systems

    spec, to_json, translations, fmt = call.spec, call.to_json, call.translations, call.fmt
    guard_judge_outputs(spec, to_json=to_json)
    items = read_systems(call.sources, translations, call.references, src_lang=call.src_lang,
                         tgt_lang=call.tgt_lang)
    try:
        result = api_judge(items, spec)
    except BudgetExceeded as exc:
        raise SpendingCapReached(str(exc)) from None
    per_file = _scores_per_file(translations, result)
    _print_scores(per_file, fmt)
    failed = sum(s is None for rows in per_file.values() for s in (r["score"] for r in rows))
    if failed:
        click.echo(f"{failed} segment(s) unscored; reasons: {json.dumps(result.failures())}", err=True)
    if to_json:
        from polyjudge.api.runs import atomic_write

        if Path(to_json).is_symlink():
            raise InputError("is a symlink; polyjudge does not write through symlinks", path=to_json,
                             field="to-json")
        atomic_write(Path(to_json), [json.dumps(_comet_shaped(per_file), ensure_ascii=False, indent=2)])


def _comet_shaped(per_file: dict[str, list[dict[str, Any]]]) -> dict[str, list[dict[str, Any]]]:
    """``--to-json`` as comet-score's ``--to_json`` writes it: per translation file its segments with
    ``src``, ``mt``, ``ref`` (when given) and the score under ``COMET`` (null: unscored)."""
    from polyjudge.api.exporting import COMET_SCORE_KEY

    return {name: [{**{k: v for k, v in r.items() if k != "score" and not (k == "ref" and v is None)},
                    COMET_SCORE_KEY: r["score"]} for r in rows] for name, rows in per_file.items()}


def _scores_per_file(translations: tuple[str, ...], result: RunResult) -> dict[str, list[dict[str, Any]]]:
    """Each translation file's segments (src, mt, ref, score) in file order, keyed by the file as given."""
    rows: dict[str, list[dict[str, Any]]] = {}
    by_system = {Path(t).stem: t for t in translations}
    for it, s in zip(result.items, result.segment_scores()):
        rows.setdefault(by_system[it.system or ""], []).append({"src": it.src, "mt": it.tgt, "ref": it.ref,
                                                                 "score": s})
    return {t: rows.get(t, []) for t in translations}


def _print_scores(per_file: dict[str, list[dict[str, Any]]], fmt: str) -> None:
    """comet-score's lines (text), a segment table (tsv; a system column with several files) or JSON."""
    if fmt == "json":
        click.echo(json.dumps(per_file, ensure_ascii=False, indent=2))
        return
    several = len(per_file) > 1
    if fmt == "tsv":
        click.echo("system\tsegment\tscore" if several else "segment\tscore")
    for name, rows in per_file.items():
        scores = [r["score"] for r in rows]
        for i, s in enumerate(scores):
            if fmt == "tsv":
                click.echo((f"{Path(name).stem}\t" if several else "") + f"{i}\t{'' if s is None else s}")
            else:
                click.echo(f"{name}\tSegment {i}\tscore: {'None' if s is None else f'{s:.4f}'}")
        got = [s for s in scores if s is not None]
        if fmt == "text":
            click.echo(f"{name}\tscore: {sum(got) / len(got):.4f}" if got else f"{name}\tscore: None")


@dataclass(frozen=True, slots=True)
class DemoCall:
    """``polyjudge demo``'s parsed flags: the judging's spec and the output format."""

    spec: JudgingSpec
    fmt: str


@click.command(cls=RegistryHelpCommand)
@out_option("Run directory of the demo.", default="polyjudge-demo", legacy_decls=("-O",))
@format_option()
@judge_options
@takes_judging(DemoCall)
def demo(call: DemoCall) -> None:
    """Judge the bundled example (real WMT21 TED segments, three systems, en→de) with the embedded judge."""
    from polyjudge.api.runs import read_items

    spec = call.spec
    guard_judge_outputs(spec)
    examples = resources.files("polyjudge").joinpath("examples")
    with resources.as_file(examples.joinpath(DEMO_ITEMS)) as path:
        items = read_items(path)
    click.echo(f"polyjudge demo: {len(items)} segments, protocol {spec.protocol.name}, "
               f"judge {', '.join(spec.judges.names())}", err=True)
    result = judge_and_summarise(items, spec, call.fmt)
    if result.manifest.counts.get("status_ok", 0) == 0:
        raise InputError("no judgment succeeded; see the failures above")
    click.echo(_demo_next_steps(str(spec.output.out), Path(str(examples))), err=True)


# The demo's example (real WMT21 TED en-de segments) and the experts' MQM scores of the same segments, made by
# scripts/make_demo_example.py (source and license: examples/README.md).
DEMO_ITEMS = "demo_ende.jsonl"
DEMO_HUMAN = "demo_ende_human.tsv"


def _demo_next_steps(out: str, examples: Path) -> str:
    """What the demo wrote and what to run next (on stderr: stdout keeps the summary's format).

    Every "next" line runs as printed: the human scores and the items are the files shipped in ``examples``.
    """
    run = shlex.quote(out)
    human = shlex.quote(str(examples / DEMO_HUMAN))
    items = shlex.quote(str(examples / DEMO_ITEMS))
    return "\n".join([
        f"written to {out}/: segments.tsv and systems.tsv (scores), judgments.jsonl (every answer),",
        "  manifest.json (judge, prompt, signature, tokens), mtme/ (mt-metrics-eval score files), store.sqlite",
        f"human MQM scores of the same segments (WMT21 TED, experts): {human}",
        "next:",
        f"  polyjudge report {run} -o demo-report.html        # the run as one HTML page",
        f"  polyjudge meta-eval --human {human} --metric {run} --lp en-de   # the judge against the experts",
        f"  polyjudge judge {items} -p mqm --judge openai:gpt-4o-mini --dry-run"
        "   # a real judge: cost first (needs OPENAI_API_KEY)",
    ])
