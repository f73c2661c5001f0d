"""Human annotation campaigns from Python: make one, serve it, see how far it is, export it.

    from polyjudge.api import AnnotateConfig, init_campaign, campaign_status, export_campaign
    tokens = init_campaign(AnnotateConfig("camp", items="data.tsv", scheme="esa", annotators="ana,ben"))

:func:`campaign_or_file` is the one place the commands that read human judgments
(``meta-eval --human``, ``validate --human``, ``agreement``) turn a campaign
folder into a file their readers read: the campaign's export, written to a
temporary file that lives as long as the process.
"""

from __future__ import annotations

import asyncio
import atexit
import shutil
import tempfile
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import overload

from polyjudge.annotate.campaign import CampaignPlan, make_campaign
from polyjudge.annotate.export import export_lines
from polyjudge.annotate.schemes import SCHEMES
from polyjudge.annotate.status import (
    AnnotatorProgress,
    CampaignStatus,
    JudgeAgreement,
    PairF1,
    PpiEstimate,
    read_status,
    status_json,
)
from polyjudge.annotate.status import campaign_status as _status
from polyjudge.annotate.store import CampaignLock, CampaignStore, is_campaign, open_folder
from polyjudge.data.errors import InputError
from polyjudge.data.rating_task import load_task
from polyjudge.data.records import Item
from polyjudge.data.shapes import normalise_fields
from polyjudge.data.spec import InputSpec
from polyjudge.rundir import RunDir

DEFAULT_PORT = 8765
SCHEME_NAMES = tuple(SCHEMES)  # the command line's choices


@dataclass(frozen=True, slots=True)
class AnnotateConfig:
    """What ``annotate init`` makes: ``folder`` (new), its ``items`` (an input file any reader reads,
    or a run directory), the ``scheme``, the annotators (a count or comma-separated names), how many
    annotators see each item, the rating ``task`` file (forced-choice/response-set; default: a
    built-in acceptability task) and an optional sample (``sample`` items chosen ``by``
    judge-uncertainty or ppi from the judge's ``run``; a run given as ``items`` is the run)."""

    def __post_init__(self) -> None:
        normalise_fields(self)

    folder: str
    items: str
    scheme: str
    annotators: str = "1"
    per_item: int = 1
    task: str | None = None
    sample: int | None = None
    by: str | None = None
    run: str | None = None
    input_format: str | None = None
    lp: str | None = None
    seed: int = 0
    guidelines: str | None = None
    attention_checks: float = 0.0
    prefill: str | None = None
    prefill_share: float = 1.0


MAX_GUIDELINES = 256 * 1024  # characters of the guidelines file


def read_guidelines(path: str | None) -> str:
    """The guidelines file's Markdown ("" without one); InputError when it is not a readable text."""
    if path is None:
        return ""
    from polyjudge.data import textio

    text = textio.read_text(path)
    if len(text) > MAX_GUIDELINES:
        raise InputError(f"the guidelines are longer than {MAX_GUIDELINES} characters", path=path,
                         field="guidelines")
    return text


def _items(config: AnnotateConfig) -> tuple[list[Item], str | None]:
    if RunDir.is_run_dir(config.items):
        return RunDir.open(config.items).items, config.run or config.items
    from polyjudge.api.inputs import read_input

    return read_input(InputSpec(path=config.items, fmt=config.input_format, lp=config.lp)), config.run


def init_campaign(config: AnnotateConfig) -> dict[str, str]:
    """Create the campaign; returns annotator -> secret token (the links' last part)."""
    items, run = _items(config)
    task = load_task(config.task) if config.task else None
    if config.prefill is not None and not RunDir.is_run_dir(config.prefill):
        raise InputError("is not a run directory (give the judge's run of a span protocol)", path=config.prefill,
                         field="prefill")
    plan = CampaignPlan(config.folder, items, config.scheme, config.annotators, config.per_item, task,
                        config.sample, config.by, run, config.seed, guidelines=read_guidelines(config.guidelines),
                        attention_checks=config.attention_checks, prefill=config.prefill,
                        prefill_share=config.prefill_share)
    return make_campaign(plan)


def link_host(host: str) -> str:
    return f"[{host}]" if ":" in host else host


def annotator_links(folder: str | Path, host: str = "127.0.0.1", port: int = DEFAULT_PORT) -> dict[str, str]:
    """annotator -> ``http://HOST:PORT/a/TOKEN``."""
    store = CampaignStore(folder, readonly=True)
    try:
        return {n: f"http://{link_host(host)}:{port}/a/{t}" for n, t in store.annotators()}
    finally:
        store.close()


def serve_campaign(folder: str | Path, *, host: str = "127.0.0.1", port: int = DEFAULT_PORT,
          ready: Callable[[dict[str, str]], None] | None = None) -> None:
    """Serve the campaign until SIGINT/SIGTERM; ``ready(links)`` once listening (port 0: a free port,
    the links carry it). Holds the campaign: a second server on it exits 2."""
    from polyjudge.annotate.server import serve_campaign as serve_loop  # aiohttp's server only when serving

    root = open_folder(folder)
    with CampaignLock(root):
        store = CampaignStore(root)
        try:
            def on_ready(actual: int) -> None:
                if ready is not None:
                    ready({n: f"http://{link_host(host)}:{actual}/a/{t}" for n, t in store.annotators()})
            asyncio.run(serve_loop(store, host, port, on_ready))
        except OSError as exc:
            raise InputError(f"cannot listen on {host}:{port}: {exc.strerror or exc}", field="port",
                             setting=True) from None
        finally:
            store.close()


def campaign_status(folder: str | Path) -> CampaignStatus:
    """Progress, agreement so far and (ppi-sampled) the PPI++ estimate; reads while a server runs."""
    store = CampaignStore(folder, readonly=True)
    try:
        return _status(store)
    finally:
        store.close()


def status_of(source: str | Path | CampaignStatus) -> CampaignStatus:
    """The status the report's ``--annotation`` renders: ``source`` itself, a campaign folder's status,
    or a status file written by ``annotate status --format json`` read back (exit 2 naming the file and
    the place in it when it is not one)."""
    if isinstance(source, CampaignStatus):
        return source
    if Path(source).is_file():
        from polyjudge.data import textio
        from polyjudge.data.readers import parse_json

        return read_status(parse_json(textio.read_text(source), path=str(source)), str(source))
    return campaign_status(source)


def export_campaign(folder: str | Path, to: str) -> str:
    """The campaign exported ``to`` mqm-tsv, esa-jsonl or ratings (newest versions only)."""
    store = CampaignStore(folder, readonly=True)
    try:
        return "".join(export_lines(store, to))
    finally:
        store.close()


_EXPORTS: dict[str, str] = {}


def _scratch() -> Path:
    if "dir" not in _EXPORTS:
        _EXPORTS["dir"] = tempfile.mkdtemp(prefix="polyjudge-campaign-")
        atexit.register(shutil.rmtree, _EXPORTS["dir"], True)
    return Path(_EXPORTS["dir"])


@overload
def campaign_or_file(path: None, *, kind: str = ...) -> None: ...
@overload
def campaign_or_file(path: str, *, kind: str = ...) -> str: ...
@overload
def campaign_or_file(path: Path, *, kind: str = ...) -> str | Path: ...
@overload
def campaign_or_file(path: str | Path, *, kind: str = ...) -> str | Path: ...
def campaign_or_file(path: str | Path | None, *, kind: str = "scores") -> str | Path | None:
    """``path`` itself, or, when it is a campaign folder, a file of its export that the reader of
    ``kind`` reads: ``scores`` (meta-eval: an MQM TSV for mqm campaigns, the ESA JSONL's scores
    otherwise) or ``ratings`` (validate, agreement)."""
    if path is None or not is_campaign(path):
        return path
    store = CampaignStore(path, readonly=True)
    try:
        scheme = store.info.scheme
        if kind == "ratings" or scheme.rating:
            to, suffix = "ratings", ".tsv"
        elif scheme.value == "points":
            to, suffix = "mqm-tsv", ".tsv"
        else:
            to, suffix = "scores", ".tsv"
        text = "".join(export_lines(store, to)) if to != "scores" else _mean_scores(store)
    finally:
        store.close()
    fd, name = tempfile.mkstemp(prefix=f"{Path(path).name}-", suffix=suffix, dir=_scratch())
    with open(fd, "w", encoding="utf-8", newline="\n") as fh:
        fh.write(text)
    return name


def _mean_scores(store: CampaignStore) -> str:
    """``system doc_id seg_id score``: each item's mean score over its annotators (esa, da)."""
    per: dict[int, list[float]] = {}
    for (_, item), ann in store.latest().items():
        if not store.items[item].check:  # attention checks are no results
            per.setdefault(item, []).append(float(ann.body["score"]))
    if not per:
        raise InputError("the campaign has no annotations yet", path=str(store.folder))
    lines = ["system\tdoc_id\tseg_id\tscore\n"]
    for item in sorted(per):
        it = store.items[item]
        lines.append(f"{it.system}\t{it.doc_id}\t{it.seg_id}\t{sum(per[item]) / len(per[item])!r}\n")
    return "".join(lines)


__all__ = ["DEFAULT_PORT", "SCHEME_NAMES", "AnnotateConfig", "AnnotatorProgress", "CampaignStatus", "JudgeAgreement",
           "PairF1", "PpiEstimate", "annotator_links", "campaign_or_file", "campaign_status", "export_campaign",
           "init_campaign", "link_host", "read_status", "serve_campaign", "status_json", "status_of"]
