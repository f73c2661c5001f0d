"""The judge as a metric object, called the way the field calls its metrics from a notebook.

COMET's ``model.predict(data)``, sacrebleu's ``BLEU().corpus_score(hyps, [refs])`` and ``evaluate``'s
``metric.compute(predictions=, references=, sources=)`` take rows or lists and give scores back, with no file
in between. :class:`Judge` does the same over polyjudge's engine::

    import polyjudge
    judge = polyjudge.Judge(protocol="gemba-esa", judge="openai:gpt-4.1-mini")
    pred = judge.predict([{"src": "Hallo Welt", "mt": "Hello world", "lp": "de-en"}])
    pred.scores, pred.system_score, pred.signature

Its keywords are the judging settings of a study file's ``[[judging]]`` table (:func:`judge_keywords`, read
from their declarations: ``polyjudge.data.settings`` and ``polyjudge.data.study_keys``), each checked as the
study file checks it; ``progress`` (a ``tqdm.auto`` bar, on by default) is the one keyword of Python's own.

The engine runs in a worker thread with an event loop of its own, so ``predict`` works where a loop is
running already (Jupyter, IPython) as in a script; ``await judge.apredict(data)`` does the same without
blocking the caller's loop. Ctrl-C (a kernel interrupt) stops sending and keeps the answers so far in the
shared response cache: the next call pays only for the rest. Nothing is written to the working folder
unless ``out=`` names a run directory, which then resumes like ``polyjudge judge -o``.
"""

from __future__ import annotations

import asyncio
import dataclasses
import difflib
import inspect
import json
import os
import threading
from collections.abc import Callable, Iterator, Mapping, Sequence
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

from polyjudge.data.errors import InputError

if TYPE_CHECKING:
    from polyjudge.api.reranking import RerankConfig, RerankEstimate
    from polyjudge.api.study_file import Key
    from polyjudge.data.records import Item
    from polyjudge.engine.core import Estimate
    from polyjudge.engine.result import RunResult
    from polyjudge.engine.spec import JudgingSpec
    from polyjudge.reranking.run import RerankResult

# Python's own keyword (no study key): the notebook's progress bar.
PROGRESS = "progress"
# [[judging]] keys that choose from an input file; rows given in code are chosen by the caller.
_FILE_ONLY = ("input_format", "systems", "exclude_systems", "ref", "limit")
# Seconds between two looks at the worker (progress bar, a finished run).
_POLL_S = 0.05


def judge_keywords() -> dict[str, Key]:
    """Every keyword of :class:`Judge` but ``progress``: the keys of a study file's ``[[judging]]`` table
    besides its own ``name`` and ``input`` (the judging settings and the input keys), by key."""
    from polyjudge.api.study_file import table_keys

    return table_keys("judging")


def _shaped(key: Key, value: Any) -> Any:
    """A Python value in the shape a study file gives the key (a list for a repeatable key, ``KEY=VALUE``
    text for a mapping, text for a path); objects the study file has no shape for are left as they are."""
    if isinstance(value, os.PathLike):
        value = os.fspath(value)
    if not key.many:
        return value
    if isinstance(value, Mapping):
        return [f"{k}={json.dumps(v) if not isinstance(v, str) else v}" for k, v in value.items()]
    if isinstance(value, str):
        return [value]
    if isinstance(value, Sequence):
        return [os.fspath(v) if isinstance(v, os.PathLike) else v for v in value]
    return value


def _checked(name: str, key: Key, value: Any) -> Any:
    """``value`` of keyword ``name`` checked as the study file checks its key (InputError naming the keyword)."""
    from polyjudge.api.study_file import Source, convert
    from polyjudge.backends.registry import JudgeSpec

    if name == "prices" and isinstance(value, Mapping):
        return dict(value)  # the price table itself (the study file names a file)
    shaped = _shaped(key, value)
    if key.many and isinstance(shaped, list) and any(isinstance(v, JudgeSpec) for v in shaped):
        return tuple(shaped)  # parsed judges are taken as they are
    try:
        return convert(Source("", ""), ("judging", 0), name, key, shaped)
    except InputError as exc:
        raise InputError(exc.reason, field=name, setting=True) from None


def _unknown(name: str, known: Sequence[str]) -> TypeError:
    from polyjudge.data.settings import old_keys

    renamed = old_keys().get(name)
    close = difflib.get_close_matches(name, known, n=1)
    hint = f" (its name now: {renamed[0].study_key!r})" if renamed else f" (did you mean {close[0]!r}?)" if close \
        else " (the judging settings: polyjudge.api.judge_keywords())"
    return TypeError(f"Judge() got an unexpected keyword argument {name!r}{hint}")


def _params(settings: Mapping[str, Any]) -> dict[str, Any]:
    """The judging's values by the names the command line parses them into, as a study table gives them."""
    from polyjudge.api.study_file import _dest

    keys = judge_keywords()
    for name in settings:
        if name not in keys and name != PROGRESS:
            raise _unknown(name, [*keys, PROGRESS])
    params = {_dest(k): k.command_default for k in keys.values()}
    for name, value in settings.items():
        if name in keys:
            params[_dest(keys[name])] = _checked(name, keys[name], value)
    params["input_path"] = None
    return params


def _spec(params: Mapping[str, Any]) -> JudgingSpec:
    from polyjudge.api.judging_values import judging_spec

    try:
        return judging_spec(params, progress=False)  # the bar is the notebook's (tqdm), not the terminal's
    except InputError as exc:
        field_ = (exc.field or "").lstrip("-").replace("-", "_") or None
        raise InputError(exc.reason, path=exc.path, line=exc.line, field=field_, setting=True) from None


# --------------------------------------------------------------------------- results


@dataclass(frozen=True, slots=True)
class PredictionMetadata:
    """What a prediction holds besides its scores: per row, the error spans of a span protocol (XCOMET's
    ``metadata.error_spans``: a list of ``{text, start, end, severity, category}`` per row, None for a row
    without an answer; None for other protocols), each row's status (``ok``, ``failed``, ``pending``: never
    sent), each judge's scores (a panel's members), and the failures with their reasons and counts."""

    error_spans: list[list[dict[str, Any]] | None] | None = None
    status: list[str] = field(default_factory=list)
    judges: dict[str, list[float | None]] = field(default_factory=dict)
    failures: dict[str, int] = field(default_factory=dict)


_PREDICTION_KEYS = ("scores", "system_score", "systems", "metadata", "signature", "cost")


@dataclass(frozen=True)
class Prediction(Mapping[str, Any]):
    """A judge's scores of some rows, in their order (COMET's prediction shape: ``pred.scores`` and
    ``pred["scores"]``). ``scores``: one per row, None where the judgment failed or was never sent;
    ``system_score``: their mean over the scored rows; ``systems``: each system's mean when rows name
    systems (best first); ``signature``: how the numbers were made (sacrebleu's style); ``cost``: USD
    the run cost (answers from the shared cache cost nothing; with ``out=``, every session of that run
    directory, as its manifest counts); ``run``: the engine's
    :class:`~polyjudge.api.RunResult` with every judgment."""

    scores: list[float | None]
    system_score: float | None
    systems: dict[str, float | None]
    metadata: PredictionMetadata
    signature: str
    cost: float
    run: RunResult = field(repr=False)

    def __getitem__(self, key: str) -> Any:
        if key not in _PREDICTION_KEYS:
            raise KeyError(key)
        return getattr(self, key)

    def __iter__(self) -> Iterator[str]:
        return iter(_PREDICTION_KEYS)

    def __len__(self) -> int:
        return len(_PREDICTION_KEYS)

    def to_pandas(self) -> Any:
        """One row per input row: its texts, ids and languages, ``score``, ``status``, each panel member's
        ``score:JUDGE`` and, for span protocols, ``error_spans`` (needs ``pip install 'polyjudge[pandas]'``)."""
        import pandas as pd

        rows = []
        for i, item in enumerate(self.run.items):
            row: dict[str, Any] = {"src": item.src, "mt": item.tgt, "ref": item.ref, "src_lang": item.src_lang,
                                   "tgt_lang": item.tgt_lang, "system": item.system, "doc_id": item.doc_id,
                                   "seg_id": item.seg_id, "score": self.scores[i], "status": self.metadata.status[i]}
            if len(self.metadata.judges) > 1:
                row |= {f"score:{j}": s[i] for j, s in self.metadata.judges.items()}
            if self.metadata.error_spans is not None:
                row["error_spans"] = self.metadata.error_spans[i]
            rows.append(row)
        return pd.DataFrame(rows)


def _spans_of(merged: Any) -> list[dict[str, Any]] | None:
    if not isinstance(merged, dict) or not isinstance(merged.get("spans"), list):
        return None
    keep = ("text", "start", "end", "severity", "category")
    return [{k: s.get(k) for k in keep} for s in merged["spans"] if isinstance(s, dict)]


def prediction_of(run: RunResult) -> Prediction:
    """The :class:`Prediction` of an engine result (rows in input order)."""
    scores = run.segment_scores()
    got = [s for s in scores if s is not None]
    pending = {jd.item_index for jd in run.judgments if jd.status == "pending"} \
        if run.status_counts().get("pending") else set()  # a finished run's judgments are not read again
    status = ["ok" if s is not None else "pending" if i in pending else "failed" for i, s in enumerate(scores)]
    spans = [_spans_of(seg.merged) for seg in run.segments(run.judges[0])] if run.protocol.produces_spans else None
    systems = {r.system: r.score for r in run.system_rows()} if any(it.system for it in run.items) else {}
    metadata = PredictionMetadata(spans, status, {j: run.segment_scores(j) for j in run.judges}, run.failures())
    return Prediction(scores=scores, system_score=sum(got) / len(got) if got else None, systems=systems,
                      metadata=metadata, signature=run.manifest.signature,
                      cost=float(run.manifest.cost_usd or 0.0), run=run)


def _requests(items: Sequence[Item], spec: JudgingSpec) -> int:
    """The requests a full run of ``items`` sends (the progress bar's total)."""
    from polyjudge.engine.session import build_protocol

    return len(items) * (spec.generation.resolved(build_protocol(spec)).runs or 1) * len(spec.judges.judges)


def _on_rows(pred: Prediction, judged: Sequence[Item], rows: Sequence[Item]) -> Prediction:
    """``pred`` over the input ``rows`` when the run judged some of them (``until_settled`` draws a sample):
    a row not judged is None with status ``pending`` (never sent), as in an interrupted run."""
    if len(judged) == len(rows) and all(a is b for a, b in zip(judged, rows, strict=True)):
        return pred
    def key(item: Item) -> tuple[Any, ...]:  # not the reference: a test set's may be added on the way
        return item.src, item.tgt, item.system, item.doc_id, item.seg_id, item.src_lang, item.tgt_lang

    at = {key(item): k for k, item in enumerate(judged)}
    where = [at.get(key(row)) for row in rows]

    def spread(values: Sequence[Any] | None, missing: Any = None) -> list[Any] | None:
        return None if values is None else [missing if k is None else values[k] for k in where]

    meta = pred.metadata
    metadata = dataclasses.replace(
        meta, error_spans=spread(meta.error_spans), status=spread(meta.status, "pending") or [],
        judges={name: spread(scores) or [] for name, scores in meta.judges.items()})
    return dataclasses.replace(pred, scores=spread(pred.scores) or [], metadata=metadata)


@dataclass(frozen=True, slots=True)
class CorpusScore:
    """A corpus score in sacrebleu's shape: ``score`` (the mean segment score), ``name`` and the
    ``signature``; ``str()`` is ``NAME = SCORE``, :meth:`format` adds the signature as sacrebleu's does."""

    name: str
    score: float | None
    signature: str
    prediction: Prediction = field(repr=False)

    def format(self, signature: bool = False, width: int = 2) -> str:
        shown = "n/a" if self.score is None else f"{self.score:.{width}f}"
        return f"{self.name} = {shown}" + (f" ({self.signature})" if signature else "")

    def __str__(self) -> str:
        return self.format()


class PredictionInterrupted(KeyboardInterrupt):
    """Ctrl-C (a kernel interrupt) stopped a prediction: sending stopped, the answers so far are kept in the
    shared response cache (and in ``out`` when given); ``prediction`` holds them (None for rows not judged)."""

    def __init__(self, message: str, prediction: Prediction | None) -> None:
        super().__init__(message)
        self.prediction = prediction


# --------------------------------------------------------------------------- running in a worker thread


class _Worker:
    """One engine call in a thread of its own (which has no event loop: the engine starts one there)."""

    def __init__(self, call: Callable[[], Any]) -> None:
        self.call, self.done = call, threading.Event()
        self.value: Any = None
        self.error: BaseException | None = None
        self.thread = threading.Thread(target=self._work, name="polyjudge-judge", daemon=True)

    def _work(self) -> None:
        try:
            self.value = self.call()
        except BaseException as exc:  # noqa: BLE001 - handed to the caller's thread
            self.error = exc
        finally:
            self.done.set()

    def start(self) -> _Worker:
        from polyjudge.engine.signals import show_status

        show_status(None)  # the counts the bar reads start at zero
        self.thread.start()
        return self

    def interrupt(self) -> None:
        """Stop sending as a first Ctrl-C does (the answers so far are kept)."""
        from polyjudge.engine.signals import interrupt_thread

        if self.thread.ident is not None:
            interrupt_thread(self.thread.ident)

    def result(self) -> Any:
        if self.error is not None:
            raise self.error
        return self.value


@contextmanager
def _bar(total: int, enabled: bool) -> Iterator[Callable[[bool], None]]:
    """A ``tqdm.auto`` bar of the judgments answered (a widget in Jupyter, text elsewhere); the callable it
    yields reads the engine's counts (``final``: the run ended, every judgment is accounted for)."""
    if not enabled or total == 0:
        yield lambda final: None
        return
    from tqdm.auto import tqdm

    from polyjudge.engine.signals import latest_status

    bar = tqdm(total=total, desc="judging", unit="judgment", leave=True)

    def update(final: bool) -> None:
        stats = latest_status()
        seen = 0 if stats is None else int(getattr(stats, "done", 0)) + int(getattr(stats, "failed", 0))
        now = total if final else min(seen, total)
        if now != bar.n:
            bar.update(now - bar.n)  # drawn only when the count moves

    try:
        yield update
    finally:
        bar.close()


def _wait(worker: _Worker, update: Callable[[bool], None]) -> None:
    """Wait for ``worker`` in this thread; Ctrl-C stops its sending and waits for it to keep what it has
    (a second Ctrl-C stops waiting: the worker ends by itself, its answers still kept as they arrive)."""
    try:
        while not worker.done.wait(_POLL_S):
            update(False)
    except KeyboardInterrupt:
        worker.interrupt()
        worker.done.wait()
    update(True)


async def _await(worker: _Worker, update: Callable[[bool], None]) -> None:
    """:func:`_wait` without blocking the running loop; a cancelled task (a kernel interrupt of an ``await``
    cell) stops the worker's sending and waits for it to keep its answers before it is cancelled."""
    try:
        while not worker.done.is_set():
            update(False)
            await asyncio.sleep(_POLL_S)
    except asyncio.CancelledError:
        worker.interrupt()
        await asyncio.to_thread(worker.done.wait)
        raise
    update(True)


def _interrupted(exc: Any, spec: JudgingSpec, out: Path | None) -> PredictionInterrupted:
    done, total = exc.result.answered_count(), len(exc.result.judgments)
    where = [w for w in ("the shared response cache" if spec.cache.use else "", str(out) if out else "") if w]
    kept = f"kept in {' and '.join(where)}; predict again to judge the rest (answers kept cost nothing)" \
        if where else "not kept (no shared cache and no run directory)"
    return PredictionInterrupted(f"interrupted: {done} of {total} judgments answered, {kept}",
                                 prediction_of(exc.result))


# --------------------------------------------------------------------------- the metric


def _init_signature() -> inspect.Signature:
    """``Judge.__init__``'s signature as notebooks show it: every keyword with its default."""
    params = [inspect.Parameter("self", inspect.Parameter.POSITIONAL_ONLY)]
    params += [inspect.Parameter(name, inspect.Parameter.KEYWORD_ONLY, default=key.default)
               for name, key in judge_keywords().items()]
    params.append(inspect.Parameter(PROGRESS, inspect.Parameter.KEYWORD_ONLY, default=True))
    return inspect.Signature(params)


class Judge:
    """An LLM judge held as a metric object (see the module's text). ``Judge(**settings)``: the judging
    settings of a study file's ``[[judging]]`` table (``protocol``, ``judge`` as a spec string or a list of
    them, ``runs``, ``temperature``, ``max_cost``, ``lp``, ...) and ``progress``. An unknown keyword is a
    ``TypeError`` naming it, a bad value an :class:`~polyjudge.api.InputError` naming the keyword."""

    def __init__(self, **settings: Any) -> None:
        params = _params(settings)
        self.settings: dict[str, Any] = dict(settings)
        self.spec = _spec(params)
        self.progress = bool(settings.get(PROGRESS, True)) and not params.get("quiet", False)
        self._signature: str | None = None

    def __repr__(self) -> str:
        from polyjudge.data.secrets import redact

        given = ", ".join(f"{k}={v!r}" for k, v in self.settings.items())
        return redact(f"Judge({given})")  # a judge's URL may carry credentials

    @staticmethod
    def defaults() -> dict[str, Any]:
        """Each keyword's default (the declared one: a study table without the key means the same)."""
        return {**{name: key.default for name, key in judge_keywords().items()}, PROGRESS: True}

    # ----------------------------------------------------------------------- input

    def _spec_for(self, out: str | Path | None) -> JudgingSpec:
        if out is None:
            return self.spec
        return self.spec.replace(output=dataclasses.replace(self.spec.output, out=Path(out)))

    def items(self, data: Any, lp: str | None = None) -> list[Item]:
        """``data`` as the items judged: a list of dicts (COMET's keys ``src``, ``mt``, ``ref``; ``lp`` or
        ``src_lang``/``tgt_lang``; ``system``, ``doc_id``, ``seg_id``), a pandas DataFrame, a Hugging Face
        ``Dataset``, a list of :class:`~polyjudge.api.Item`, or an input file (read as ``polyjudge judge``
        reads it, with this judge's input settings). ``lp`` names the languages of rows that name none."""
        from polyjudge.api.inputs import read_input
        from polyjudge.data.columns import parse_columns
        from polyjudge.data.rows import items_from_rows

        data_spec = self.spec.data if lp is None else dataclasses.replace(self.spec.data, lp=lp)
        if isinstance(data, str | os.PathLike):
            return read_input(dataclasses.replace(data_spec, path=os.fspath(data)))
        for name in _FILE_ONLY:
            if self.settings.get(name) not in (None, (), []):
                raise InputError("chooses from an input file; with rows given in code, choose the rows yourself",
                                 field=name, setting=True)
        return items_from_rows(_rows_of(data), lp=data_spec.lp, src_lang=data_spec.src_lang,
                               tgt_lang=data_spec.tgt_lang, columns=parse_columns(data_spec.columns))

    # ----------------------------------------------------------------------- judging

    def _start(self, data: Any, lp: str | None, out: str | Path | None) -> tuple[_Worker, JudgingSpec, list[Item]]:
        from polyjudge.api.inputs import with_testset_reference
        from polyjudge.api.settle import judge  # in rounds when until_settled is set

        items = self.items(data, lp)
        spec = with_testset_reference(self._spec_for(out), items)
        return _Worker(lambda: judge(items, spec)).start(), spec, items

    def _finish(self, worker: _Worker, spec: JudgingSpec, items: Sequence[Item] | None = None) -> Prediction:
        from polyjudge.engine.errors import RunInterrupted, RunStopped

        try:
            run = worker.result()
        except RunInterrupted as exc:
            raise _interrupted(exc, spec, spec.output.path) from None
        except RunStopped as exc:  # the spending cap, too many failures, an endpoint given up: raised as is
            exc.prediction = prediction_of(exc.result)  # type: ignore[attr-defined]
            raise
        pred = prediction_of(run) if items is None else _on_rows(prediction_of(run), run.items, items)
        self._signature = pred.signature
        return pred

    def predict(self, data: Any, *, lp: str | None = None, out: str | Path | None = None,
                progress: bool | None = None) -> Prediction:
        """Judge every row of ``data`` (see :meth:`items`) and return their :class:`Prediction`, rows in
        input order. Works with and without a running event loop. ``out``: a run directory to write (and
        resume from); without it nothing is written but the shared response cache. ``progress``: this
        call's bar (default: the judge's)."""
        worker, spec, items = self._start(data, lp, out)
        with _bar(_requests(items, spec), self.progress if progress is None else progress) as update:
            _wait(worker, update)
        return self._finish(worker, spec, items)

    async def apredict(self, data: Any, *, lp: str | None = None, out: str | Path | None = None,
                       progress: bool | None = None) -> Prediction:
        """:meth:`predict` for async code: ``await judge.apredict(data)`` leaves the caller's loop free."""
        worker, spec, items = self._start(data, lp, out)
        with _bar(_requests(items, spec), self.progress if progress is None else progress) as update:
            await _await(worker, update)
        return self._finish(worker, spec, items)

    def estimate(self, data: Any, *, lp: str | None = None, out: str | Path | None = None) -> Estimate:
        """What :meth:`predict` would send and cost (``polyjudge judge --dry-run``): requests, tokens, an upper
        bound of the cost, what the shared cache (and ``out``) already answer. Nothing is sent or written."""
        from polyjudge.engine.session import estimate

        items, spec = self.items(data, lp), self.spec
        worker = _Worker(lambda: estimate(items, spec, out=out)).start()
        _wait(worker, lambda final: None)
        return worker.result()  # type: ignore[no-any-return]

    # ----------------------------------------------------------------------- the field's other shapes

    def corpus_score(self, hypotheses: Sequence[str], references: Sequence[Sequence[str]] | None = None, *,
                     sources: Sequence[str], lp: str | None = None) -> CorpusScore:
        """sacrebleu's call: ``corpus_score(hyps, [refs], sources=srcs, lp="en-de")``; one reference stream
        at most (the judge reads one reference)."""
        pred = self.predict(_columns(hypotheses, references, sources), lp=lp)
        return CorpusScore(self.spec.protocol.name, pred.system_score, pred.signature, pred)

    def compute(self, *, predictions: Sequence[str], references: Sequence[str] | None = None,
                sources: Sequence[str], lp: str | None = None) -> dict[str, Any]:
        """``evaluate``'s COMET call: ``{"mean_score": ..., "scores": [...]}``."""
        pred = self.predict(_columns(predictions, None if references is None else [references], sources), lp=lp)
        return {"mean_score": pred.system_score, "scores": pred.scores}

    def rerank(self, sources: Sequence[str], candidates: Sequence[Sequence[str]], *, method: str = "qe",
               lp: str | None = None, out: str | Path | None = None, **settings: Any) -> RerankResult:
        """Choose one of each source's ``candidates`` with this judge (:func:`polyjudge.api.rerank`): ``method``
        ``qe`` (the best-scored candidate) or ``mbr`` (the one the others, as pseudo-references, rate best);
        other keywords are :class:`~polyjudge.api.RerankConfig` fields (``prune=True``, ``held_out=...``).
        Works with and without a running event loop; ``out`` as in :meth:`predict`."""
        from polyjudge.api.reranking import rerank

        cfg = self._rerank_config(method, lp, settings)
        worker = _Worker(lambda: rerank(sources, candidates, cfg, out=out)).start()
        _wait(worker, lambda final: None)
        return worker.result()  # type: ignore[no-any-return]

    def rerank_estimate(self, sources: Sequence[str], candidates: Sequence[Sequence[str]], *, method: str = "qe",
                        lp: str | None = None, **settings: Any) -> RerankEstimate:
        """What :meth:`rerank` would send and cost (an MBR matrix is up to N x (N - 1) requests per source);
        nothing is sent or written."""
        from polyjudge.api.reranking import rerank_estimate

        cfg = self._rerank_config(method, lp, settings)
        worker = _Worker(lambda: rerank_estimate(sources, candidates, cfg)).start()
        _wait(worker, lambda final: None)
        return worker.result()  # type: ignore[no-any-return]

    def _rerank_config(self, method: str, lp: str | None, settings: Mapping[str, Any]) -> RerankConfig:
        from polyjudge.api.reranking import RerankConfig
        from polyjudge.data.columns import split_pair

        if "judge" in settings:
            raise TypeError("Judge.rerank() judges with this judge; to rerank with another, use polyjudge.rerank")
        data = self.spec.data  # as in predict: lp= given here wins, then the judge's src_lang/tgt_lang, its lp
        langs = {k: v for k in ("src_lang", "tgt_lang") if (v := getattr(data, k)) and lp is None}
        if lp is not None or (data.lp and not langs):
            langs["src_lang"], langs["tgt_lang"] = split_pair(lp or data.lp, path=None, line=None, field="lp")
        try:
            return RerankConfig(judge=self.spec, method=method, **{**langs, **settings})
        except TypeError as exc:
            raise TypeError(f"Judge.rerank() {exc}") from None

    def get_signature(self) -> str:
        """The signature of this judge's numbers (the last prediction's; before any, the one it will have)."""
        if self._signature is not None:
            return self._signature
        return planned_signature(self.spec)


Judge.__init__.__signature__ = _init_signature()  # type: ignore[attr-defined]  # what notebooks show


def _rows_of(data: Any) -> list[Any]:
    """A DataFrame's or a dataset's rows (no import of pandas or datasets), or the rows given."""
    to_dict = getattr(data, "to_dict", None)
    if callable(to_dict) and hasattr(data, "columns") and hasattr(data, "iloc"):  # a pandas DataFrame
        return list(to_dict("records"))
    to_list = getattr(data, "to_list", None)
    if callable(to_list) and hasattr(data, "column_names"):  # a Hugging Face Dataset
        return list(to_list())
    if isinstance(data, Mapping) or not isinstance(data, Sequence | Iterator):
        raise InputError(f"expected rows (a list of dicts, a DataFrame or a Dataset), got {type(data).__name__}",
                         field="data", setting=True)
    return list(data)


def _columns(mt: Sequence[str], refs: Sequence[Sequence[str]] | None, sources: Sequence[str]) -> list[dict[str, Any]]:
    """Parallel lists as rows (sacrebleu's reference streams: one at most)."""
    streams = list(refs or [])
    if len(streams) > 1:
        raise InputError(f"{len(streams)} reference streams given; the judge reads one reference per row",
                         field="references", setting=True)
    lists = {"src": list(sources), "mt": list(mt), **({"ref": list(streams[0])} if streams else {})}
    sizes = {k: len(v) for k, v in lists.items()}
    if len(set(sizes.values())) > 1:
        raise InputError(f"the lists differ in length ({', '.join(f'{k} {n}' for k, n in sizes.items())})",
                         field="sources", setting=True)
    return [dict(zip(lists, values, strict=True)) for values in zip(*lists.values(), strict=True)]


def planned_signature(spec: JudgingSpec) -> str:
    """The signature a run of ``spec`` will write, before it runs (judges named by their model)."""
    from polyjudge.backends.registry import backend_class
    from polyjudge.engine.manifest import signature, signed_settings
    from polyjudge.engine.session import build_protocol

    protocol = build_protocol(spec)
    gen = spec.generation.resolved(protocol)
    settings = spec.judges.settings()
    names = []
    for j in spec.judges.judges:
        known = backend_class(j.backend).deferred(j, settings)
        names.append(str(known["model"]) if known else j.model or j.backend)
    return signature(protocol, names, gen.runs or 1, gen.aggregator or protocol.default_aggregator,
                     float(gen.temperature or 0.0), None, signed_settings(spec.identity_values(protocol, names)))


def load(name: str, **settings: Any) -> Judge:
    """A :class:`Judge` of a named setup of the papers (``polyjudge.api.judge_presets()``: ``gemba-mqm-v2``,
    ``gemba-esa``, ``tsa``, ...); ``settings`` change or add to it (``judge="openai:MODEL@URL"``)."""
    from polyjudge.api.setups import preset

    return Judge(**{**preset(name).settings, **settings})


__all__ = ["CorpusScore", "Judge", "Prediction", "PredictionInterrupted", "PredictionMetadata", "judge_keywords",
           "load", "planned_signature", "prediction_of"]
