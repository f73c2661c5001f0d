"""``polyjudge judge``, ``polyjudge score`` and ``polyjudge demo``."""

from __future__ import annotations

import asyncio
import json
import sys
from importlib import resources
from pathlib import Path
from typing import Any

import click

from polyjudge.data.errors import InputError
from polyjudge.data.records import Item


def _option_value(text: str) -> Any:
    try:
        return json.loads(text)
    except json.JSONDecodeError:
        return text


def judge_options(fn: Any) -> Any:
    """Options shared by every command that runs judges."""
    opts = [
        click.option("--backend", type=click.Choice(["llamacpp", "openai", "replay"]), default="llamacpp",
                     show_default=True, help="Backend of the (single) judge."),
        click.option("--model", "-m", default=None,
                     help="Model name (openai), GGUF path or default model name (llamacpp), recording (replay)."),
        click.option("--base-url", default=None, help="OpenAI-compatible endpoint, e.g. http://127.0.0.1:8000/v1."),
        click.option("--api-key-env", default="OPENAI_API_KEY", show_default=True,
                     help="Environment variable holding the API key (never written anywhere)."),
        click.option("--judge", "judges", multiple=True, metavar="SPEC",
                     help="A panel member: openai:MODEL[@URL], llamacpp[:MODEL], replay:FILE. Repeatable; "
                          "overrides --backend/--model."),
        click.option("--protocol", "-p", default="da", show_default=True, help="Judging protocol."),
        click.option("--runs", type=click.IntRange(min=1), default=None, help="Runs per item (protocol default)."),
        click.option("--temperature", "-T", type=float, default=None, help="Sampling temperature (protocol default)."),
        click.option("--aggregate", "--aggregator", "aggregator", default=None,
                     help="How runs are merged in segments.tsv: rrwa, mean (after 2σ outlier removal), "
                          "mean-all, median, max, min, geo, majority (all are kept in aggregates.tsv)."),
        click.option("--min-runs", type=click.IntRange(min=1), default=1, show_default=True,
                     help="Leave a segment unscored with fewer successful runs than this."),
        click.option("--concurrency", "-c", type=click.IntRange(min=1), default=16, show_default=True),
        click.option("--seed", type=int, default=0, show_default=True, help="Run r uses seed + r."),
        click.option("--prompt-template", type=click.Path(dir_okay=False), default=None,
                     help="Replace the protocol's Jinja2 prompt template."),
        click.option("--no-context", is_flag=True, help="Judge segments without document context."),
        click.option("--option", "-o", "protocol_options", multiple=True, metavar="KEY=VALUE",
                     help="Protocol-specific option (value parsed as JSON when possible). Repeatable."),
        click.option("--record", type=click.Path(dir_okay=False), default=None,
                     help="Append every request/answer to this JSONL (for --backend replay)."),
        click.option("--prices", type=click.Path(dir_okay=False), default=None,
                     help="JSON price table {model: [usd_per_mtok_in, usd_per_mtok_out]}."),
        click.option("--timeout", type=float, default=120.0, show_default=True, help="Seconds per request."),
        click.option("--n-ctx", type=int, default=8192, show_default=True, help="Context size (llamacpp)."),
        click.option("--quiet", "-q", is_flag=True, help="No progress bar."),
    ]
    for opt in reversed(opts):
        fn = opt(fn)
    return fn


def _build_backends(kw: dict[str, Any]) -> tuple[list[Any], list[dict[str, Any]]]:
    from polyjudge.backends import JudgeSpec, make_backend
    from polyjudge.backends.replay import RecordingBackend

    try:
        specs = [JudgeSpec.parse(s) for s in kw["judges"]] or [
            JudgeSpec(kw["backend"], kw["model"], kw["base_url"])]
    except ValueError as exc:
        raise click.BadParameter(str(exc), param_hint="--judge") from None
    backends = []
    for spec in specs:
        try:
            backend = make_backend(spec, api_key_env=kw["api_key_env"], timeout=kw["timeout"], n_ctx=kw["n_ctx"])
        except ValueError as exc:
            raise click.UsageError(str(exc)) from None
        except RuntimeError as exc:  # model not installed / not found
            raise click.ClickException(str(exc)) from None
        if kw["record"]:
            backend = RecordingBackend(backend, kw["record"])
        backends.append(backend)
    info = []
    for spec, b in zip(specs, backends):
        d = spec.describe() | {"model": b.model}
        if spec.backend == "llamacpp":
            d["model_file"] = str(getattr(getattr(b, "inner", b), "model_path", ""))
        info.append(d)
    return backends, info


def _protocol(kw: dict[str, Any]) -> Any:
    from polyjudge.protocols import ProtocolOptions, get_protocol

    extra: dict[str, Any] = {}
    for opt in kw["protocol_options"]:
        key, sep, value = opt.partition("=")
        if not sep or not key:
            raise click.BadParameter(f"expected KEY=VALUE, got '{opt}'", param_hint="--option")
        extra[key.strip()] = _option_value(value)
    options = ProtocolOptions(template=kw["prompt_template"], use_context=not kw["no_context"], extra=extra)
    try:
        return get_protocol(kw["protocol"], options)
    except KeyError as exc:
        raise click.BadParameter(str(exc.args[0]), param_hint="--protocol") from None


def run_judging(items: list[Item], kw: dict[str, Any], out: Path | None, *, dry_run: bool = False) -> Any:
    """Shared by judge/score/demo: build protocol and judges, run, write the run directory."""
    from polyjudge.engine import Estimate, run_async
    from polyjudge.engine.pricing import load_prices

    protocol = _protocol(kw)
    prices = load_prices(kw["prices"])
    if out is not None:
        out.mkdir(parents=True, exist_ok=True)
    backends, info = _build_backends(kw)
    result = asyncio.run(run_async(
        items, protocol, backends, runs=kw["runs"], temperature=kw["temperature"],
        aggregator=kw["aggregator"], concurrency=kw["concurrency"],
        store_path=(out / "store.sqlite") if out is not None else None, seed=kw["seed"],
        progress=not kw["quiet"] and sys.stderr.isatty(), prices=prices, judge_info=info, dry_run=dry_run,
        min_runs=kw["min_runs"]))
    if isinstance(result, Estimate):
        return result
    if out is not None:
        result.write(out)
    return result


def print_summary(result: Any, out: Path | None) -> None:
    m = result.manifest
    c = m.counts
    echo = lambda s="": click.echo(s, err=True)  # noqa: E731
    echo(f"signature: {m.signature}")
    ok = c.get("status_ok", 0)
    echo(f"items: {c['items']}  judgments: {c['judgments']}  ok: {ok}  failed: {c['judgments'] - ok}  "
         f"(sent now: {c['sent_this_session']}, from store: {c['from_store']}, retries: {c['retries']})")
    for reason, n in list(m.failures.items())[:8]:
        echo(f"  failure x{n}: {reason}")
    echo(f"tokens: {m.tokens['prompt']:,} prompt + {m.tokens['completion']:,} completion  "
         f"cost: ${m.cost_usd:.4f}  wall time: {m.wall_time_s:.1f}s")
    if out is not None:
        echo(f"run directory: {out}")
    click.echo("system\tscore\tn_segments")
    for row in result.system_rows():
        click.echo(f"{row.system}\t{'' if row.score is None else f'{row.score:.4f}'}\t{row.n_segments}")


@click.command()
@click.argument("input_path", metavar="INPUT", type=click.Path(dir_okay=False))
@click.option("--out", "-O", "out", type=click.Path(file_okay=False), required=True, help="Run directory.")
@click.option("--format", "fmt", type=click.Choice(["jsonl", "csv", "tsv"]), default=None,
              help="Input format (default: from the extension; WMT MQM TSV is detected).")
@click.option("--src-lang", default=None, help="Source language code for items that lack one.")
@click.option("--tgt-lang", default=None, help="Target language code for items that lack one.")
@click.option("--limit", type=click.IntRange(min=1), default=None, help="Judge only the first N items.")
@click.option("--dry-run", is_flag=True, help="Print how many requests and tokens the run would take.")
@judge_options
def judge(input_path: str, out: str, fmt: str | None, src_lang: str | None, tgt_lang: str | None,
          limit: int | None, dry_run: bool, **kw: Any) -> None:
    """Judge every item of INPUT and write a run directory (re-running resumes)."""
    from polyjudge.data.readers import read_items

    items = read_items(input_path, fmt=fmt, src_lang=src_lang, tgt_lang=tgt_lang)
    if limit is not None:
        items = items[:limit]
    result = run_judging(items, kw, Path(out), dry_run=dry_run)
    if dry_run:
        click.echo(result.describe())
        return
    print_summary(result, Path(out))


@click.command()
@click.option("-s", "--sources", required=True, type=click.Path(dir_okay=False), help="Source sentences, one per line.")
@click.option("-t", "--translations", required=True, type=click.Path(dir_okay=False), help="Hypotheses, one per line.")
@click.option("-r", "--references", default=None, type=click.Path(dir_okay=False), help="References, one per line.")
@click.option("--src-lang", required=True)
@click.option("--tgt-lang", required=True)
@click.option("--out", "-O", "out", type=click.Path(file_okay=False), default=None,
              help="Keep a run directory (and resume from it).")
@click.option("--to-json", type=click.Path(dir_okay=False), default=None, help="Write segment scores as JSON.")
@judge_options
def score(sources: str, translations: str, references: str | None, src_lang: str, tgt_lang: str,
          out: str | None, to_json: str | None, **kw: Any) -> None:
    """Score parallel text files like comet-score: one line per segment, then the system score."""
    from polyjudge.data.readers import read_parallel

    items = read_parallel(sources, translations, references, src_lang=src_lang, tgt_lang=tgt_lang)
    result = run_judging(items, kw, Path(out) if out else None)
    scores = result.segment_scores()
    for i, s in enumerate(scores):
        click.echo(f"{translations}\tSegment {i}\tscore: {'None' if s is None else f'{s:.4f}'}")
    got = [s for s in scores if s is not None]
    click.echo(f"{translations}\tscore: {sum(got) / len(got):.4f}" if got else f"{translations}\tscore: None")
    failed = len(scores) - len(got)
    if failed:
        click.echo(f"{failed} segment(s) unscored; reasons: {json.dumps(result.failures())}", err=True)
    if to_json:
        rows = [{"src": it.src, "mt": it.tgt, "ref": it.ref, "score": s} for it, s in zip(result.items, scores)]
        Path(to_json).write_text(json.dumps({translations: rows}, ensure_ascii=False, indent=2), encoding="utf-8")


@click.command()
@click.option("--out", "-O", "out", type=click.Path(file_okay=False), default="polyjudge-demo", show_default=True)
@judge_options
def demo(out: str, **kw: Any) -> None:
    """Judge the bundled example (two systems, en→de) with the embedded judge."""
    from polyjudge.data.readers import read_items

    example = resources.files("polyjudge").joinpath("examples").joinpath("demo_ende.jsonl")
    with resources.as_file(example) as path:
        items = read_items(path)
    click.echo(f"polyjudge demo: {len(items)} segments, protocol {kw['protocol']}, "
               f"judge {kw['judges'] or kw['backend']}", err=True)
    result = run_judging(items, kw, Path(out))
    print_summary(result, Path(out))
    if any(s is None for s in result.segment_scores()) and result.manifest.counts.get("status_ok", 0) == 0:
        raise InputError("no judgment succeeded; see the failures above")
