"""Parallel judging sets: the same judged content in several languages.

Following Fu & Liu (2025), each question is judged with its gold answer in
every language; because a judge that always says "correct" would look
perfect on gold answers alone, each question is also paired with a
deliberately wrong answer (another question's gold answer), so accuracy is
measured in both directions.

The wrong answer is chosen once per question, identically for every
language (a seeded single cycle over the selected questions, skipping donors
whose answer equals this question's answer in any selected language), so
the wrong items are parallel too.

Every :class:`Item` has ``src`` = question, ``tgt`` = judged answer,
``src_lang`` = ``tgt_lang`` = language, ``system`` = ``"gold"`` or
``"wrong"``, ``seg_id`` = the aligned item id, and in ``extra``:
``item_id``, ``language``, ``dataset``, ``answer_kind``, ``gold_label``
(``"correct"``/``"incorrect"``), ``question``, ``gold_answer``, ``donor_id``
(for wrong answers) and, for XQuAD (and JSONL sets with one), ``context``.

Besides XQuAD and MGSM, any parallel set can be given as JSONL
(:func:`load_jsonl_parallel`): one line per item and language with ``id``,
``lang``, ``question``, ``answer`` and optionally ``context``.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

from polyjudge.data import textio
from polyjudge.data.errors import InputError
from polyjudge.data.readers import iter_jsonl, json_type, read_json
from polyjudge.data.records import Item

XQUAD_LANGUAGES = ("ar", "de", "el", "en", "es", "hi", "ro", "ru", "th", "tr", "vi", "zh")
MGSM_LANGUAGES = ("bn", "de", "en", "es", "fr", "ja", "ru", "sw", "te", "th", "zh")


@dataclass(frozen=True, slots=True)
class _Question:
    item_id: str
    question: str
    answer: str
    context: str | None = None
    title: str | None = None


def _norm(ans: str) -> str:
    return " ".join(ans.strip().lower().split()).rstrip(".")


def _donors(ids: list[str], answers: dict[str, dict[str, str]], seed: int) -> dict[str, str]:
    """For each id, the id whose answer serves as its wrong answer.

    Walks a seeded random cycle over ``ids`` and takes the next element whose
    answer differs from this one's in every language (``answers[lang][id]``).
    """
    n = len(ids)
    if n < 2:
        raise InputError("wrong answers need at least two questions")
    order = [ids[i] for i in np.random.default_rng(seed).permutation(n)]
    out: dict[str, str] = {}
    for k, qid in enumerate(order):
        for step in range(1, n):
            cand = order[(k + step) % n]
            if all(_norm(a[cand]) != _norm(a[qid]) for a in answers.values()):
                out[qid] = cand
                break
        else:
            raise InputError(f"no question has an answer different from question {textio.short(qid)}")
    return out


def _build(dataset: str, per_lang: dict[str, dict[str, _Question]], ids: list[str],
           wrong: bool, seed: int) -> list[Item]:
    answers = {lang: {q: per_lang[lang][q].answer for q in ids} for lang in per_lang}
    donors = _donors(ids, answers, seed) if wrong else {}
    items: list[Item] = []
    for lang, qs in per_lang.items():
        for qid in ids:
            q = qs[qid]
            kinds: list[tuple[str, str, str, str | None]] = [("gold", q.answer, "correct", None)]
            if wrong:
                d = donors[qid]
                kinds.append(("wrong", qs[d].answer, "incorrect", d))
            for kind, answer, label, donor in kinds:
                extra = {"item_id": qid, "language": lang, "dataset": dataset,
                         "answer_kind": kind, "gold_label": label, "question": q.question,
                         "gold_answer": q.answer}
                if donor is not None:
                    extra["donor_id"] = donor
                if q.context is not None:
                    extra["context"] = q.context
                items.append(Item(src=q.question, tgt=answer, src_lang=lang, tgt_lang=lang,
                                  doc_id=q.title, seg_id=qid, system=kind, extra=extra,
                                  origin=f"{dataset}:{lang}:{qid}"))
    return items


def _check_languages(languages: list[str]) -> list[str]:
    langs = [lang.strip() for lang in languages if lang.strip()]
    if not langs:
        raise InputError("no languages given", field="languages")
    if len(set(langs)) != len(langs):
        raise InputError(f"a language is listed twice: {','.join(langs)}", field="languages")
    return langs


def _limit(ids: list[str], limit: int | None) -> list[str]:
    if limit is not None:
        if limit < 1:
            raise InputError("limit must be at least 1", field="limit")
        ids = ids[:limit]
    return ids


def _field(obj: Any, key: str, kind: type, where: str, path: Path) -> Any:
    """``obj[key]`` of the expected JSON type, else an InputError saying what the layout needs."""
    if not isinstance(obj, dict):
        raise InputError(f"not in SQuAD v1.1 layout: {where} must be an object, got {json_type(obj)}",
                         path=str(path))
    if key not in obj:
        raise InputError(f"not in SQuAD v1.1 layout: {where} has no '{key}'", path=str(path), field=key)
    value = obj[key]
    if not isinstance(value, kind) or isinstance(value, bool):
        expected = "a list" if kind is list else "a string"
        raise InputError(f"not in SQuAD v1.1 layout: {where}.{key} must be {expected}, got {json_type(value)}",
                         path=str(path), field=key)
    return value


def read_xquad(path: Path) -> dict[str, _Question]:
    """One XQuAD (SQuAD v1.1) file as ``question id -> question``, file order."""
    data = read_json(path, "XQuAD file")
    out: dict[str, _Question] = {}
    for a, article in enumerate(_field(data, "data", list, "the file", path)):
        title = article.get("title") if isinstance(article, dict) else None
        for p, para in enumerate(_field(article, "paragraphs", list, f"data[{a}]", path)):
            where = f"data[{a}].paragraphs[{p}]"
            context = _field(para, "context", str, where, path)
            for q, qa in enumerate(_field(para, "qas", list, where, path)):
                at = f"{where}.qas[{q}]"
                qid = _field(qa, "id", str, at, path)
                answers = _field(qa, "answers", list, at, path)
                if not answers:
                    raise InputError(f"question {textio.short(qid)} has no answer", path=str(path),
                                     field="answers")
                answer = _field(answers[0], "text", str, f"{at}.answers[0]", path)
                out[qid] = _Question(qid, _field(qa, "question", str, at, path), answer, context,
                                     title if isinstance(title, str) else None)
    return out


def load_xquad_parallel(root: str | Path, languages: list[str], *, limit: int | None = None,
                        wrong: bool = True, seed: int = 0) -> list[Item]:
    """XQuAD judging set aligned by question id (``root/xquad.LANG.json``).

    Questions are those present in every selected language, in the first
    language's file order; ``limit`` keeps the first N of them.
    """
    langs = _check_languages(languages)
    per_lang = {lang: read_xquad(Path(root) / f"xquad.{lang}.json") for lang in langs}
    common = set.intersection(*(set(q) for q in per_lang.values()))
    ids = _limit([q for q in per_lang[langs[0]] if q in common], limit)
    return _build("xquad", per_lang, ids, wrong, seed)


def read_mgsm(path: Path) -> list[_Question]:
    """One MGSM TSV file (``question<TAB>answer``, no header), one question per line."""
    if not path.exists():
        raise InputError("MGSM file not found", path=str(path))
    out = []
    for n, line in textio.iter_lines(path):
        if not line.strip():
            continue
        parts = line.split("\t")
        if len(parts) != 2 or not parts[1].strip():
            raise InputError(f"expected 'question<TAB>answer', got {len(parts)} field(s)",
                             path=str(path), line=n)
        out.append(_Question(f"mgsm-{n:03d}", parts[0].strip(), parts[1].strip()))
    return out


def load_mgsm_parallel(root: str | Path, languages: list[str], *, limit: int | None = None,
                       wrong: bool = True, seed: int = 0) -> list[Item]:
    """MGSM judging set aligned by line (``root/mgsm_LANG.tsv``); item id ``mgsm-LLL``."""
    langs = _check_languages(languages)
    per_lang: dict[str, dict[str, _Question]] = {}
    n_lines = None
    for lang in langs:
        path = Path(root) / f"mgsm_{lang}.tsv"
        qs = read_mgsm(path)
        if n_lines is not None and len(qs) != n_lines:
            raise InputError(f"{len(qs)} problems, but {n_lines} in {langs[0]}: files are not "
                             "line-aligned", path=str(path))
        n_lines = len(qs)
        per_lang[lang] = {q.item_id: q for q in qs}
        first = per_lang[langs[0]]
        moved = next((q.item_id for q in qs if q.item_id not in first), None)
        if moved is not None:  # same count, but a blank line sits elsewhere
            raise InputError(f"files are not line-aligned: this file has a problem on line {int(moved[5:])}, "
                             f"the {langs[0]} file a blank line there", path=str(path), line=int(moved[5:]))
    ids = _limit(list(per_lang[langs[0]]), limit)
    return _build("mgsm", per_lang, ids, wrong, seed)


JSONL_FIELDS = ("id", "lang", "question", "answer", "context")


def _jsonl_text(row: dict[str, Any], key: str, path: Path, line: int, *, required: bool = True,
                numbers: bool = False) -> str | None:
    """``row[key]`` as a non-empty string (a number too when ``numbers``), else an
    InputError naming the file, line and field."""
    value = row.get(key)
    if value is None:
        if required:
            raise InputError(f"missing field '{key}'", path=str(path), line=line, field=key)
        return None
    if isinstance(value, bool) or not isinstance(value, str | int | float) or (
            not numbers and not isinstance(value, str)):
        kind = "a string or a number" if numbers else "a string"
        raise InputError(f"'{key}' must be {kind}, got {json_type(value)}", path=str(path), line=line, field=key)
    text = value if isinstance(value, str) else format(value, "g") if isinstance(value, float) else str(value)
    if not text.strip():
        raise InputError(f"'{key}' is empty", path=str(path), line=line, field=key)
    return text


def _jsonl_required(row: dict[str, Any], key: str, path: Path, line: int, *, numbers: bool = False) -> str:
    text = _jsonl_text(row, key, path, line, numbers=numbers)
    if text is None:  # _jsonl_text raised already; this keeps the type exact
        raise InputError(f"missing field '{key}'", path=str(path), line=line, field=key)
    return text


def read_parallel_jsonl(path: str | Path) -> tuple[dict[str, dict[str, _Question]], list[str]]:
    """A parallel set as JSONL: one object per item and language with ``id``,
    ``lang``, ``question``, ``answer`` and optionally ``context`` (other fields
    are ignored). Returns ``lang -> id -> question`` and the ids in file order.

    The same ``id`` in two languages is the same item; an ``id`` twice in one
    language, a missing or empty field, or a value of the wrong type raises
    InputError with the file, line and field.
    """
    p = Path(path)
    if not p.is_file():
        raise InputError("parallel data file not found", path=str(p))
    per_lang: dict[str, dict[str, _Question]] = {}
    first_line: dict[tuple[str, str], int] = {}
    order: dict[str, None] = {}
    for n, row in iter_jsonl(p, user_text=True):
        qid = _jsonl_required(row, "id", p, n, numbers=True)
        lang = _jsonl_required(row, "lang", p, n).strip()
        question = _jsonl_required(row, "question", p, n)
        answer = _jsonl_required(row, "answer", p, n, numbers=True)
        context = _jsonl_text(row, "context", p, n, required=False)
        if (qid, lang) in first_line:
            raise InputError(f"item {textio.short(qid)} appears twice in language {textio.short(lang)} (first on line "
                             f"{first_line[(qid, lang)]})", path=str(p), line=n, field="id")
        first_line[(qid, lang)] = n
        per_lang.setdefault(lang, {})[qid] = _Question(qid, question, answer, context)
        order.setdefault(qid, None)
    if not per_lang:
        raise InputError("no items in the parallel data file", path=str(p))
    return per_lang, list(order)


def load_jsonl_parallel(path: str | Path, languages: list[str] | None = None, *, limit: int | None = None,
                        wrong: bool = True, seed: int = 0) -> list[Item]:
    """A judging set from a parallel JSONL file (see :func:`read_parallel_jsonl`).

    ``languages`` selects languages (default: every language in the file, in
    order of first appearance); items are those present in every selected
    language, in file order, and ``limit`` keeps the first N of them.
    """
    p = Path(path)
    per_lang, ids = read_parallel_jsonl(p)
    langs = _check_languages(languages) if languages else list(per_lang)
    missing = [lang for lang in langs if lang not in per_lang]
    if missing:
        raise InputError(f"language {textio.short(missing[0])} is not in the file (it has "
                         f"{textio.short(', '.join(per_lang))})", path=str(p), field="languages")
    if len(langs) < 2:
        raise InputError(f"a parallel set needs at least two languages, the file has {', '.join(langs)}",
                         path=str(p), field="lang")
    common = [q for q in ids if all(q in per_lang[lang] for lang in langs)]
    if not common:
        raise InputError(f"no item id is present in every language ({', '.join(langs)})", path=str(p), field="id")
    selected = {lang: per_lang[lang] for lang in langs}
    return _build(p.stem, selected, _limit(common, limit), wrong, seed)


def jsonl_task(items: list[Item]) -> str:
    """The pointwise task a JSONL set calls for: ``qa`` (judged against a context)
    when every item has one, ``math`` (question and answer only) when none has."""
    with_context = {bool(it.extra.get("context")) for it in items}
    if with_context == {True}:
        return "qa"
    if with_context == {False}:
        return "math"
    raise InputError("some items have a 'context' and others do not; give the task (--task)", field="context")


LOADERS = {"xquad": load_xquad_parallel, "mgsm": load_mgsm_parallel}
TASK_OF_DATASET = {"xquad": "qa", "mgsm": "math"}


def load_parallel(dataset: str, root: str | Path, languages: list[str], *,
                  limit: int | None = None, wrong: bool = True, seed: int = 0) -> list[Item]:
    """Dispatch on ``dataset`` (``xquad`` or ``mgsm``); ``root`` is the dataset folder."""
    if dataset not in LOADERS:
        raise InputError(f"unknown parallel dataset '{dataset}'; known: {', '.join(LOADERS)}",
                         field="dataset")
    return LOADERS[dataset](root, languages, limit=limit, wrong=wrong, seed=seed)
