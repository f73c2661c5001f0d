"""Planning: items × runs × judges -> tasks with stable cache keys."""

from __future__ import annotations

import dataclasses
import hashlib
import json
import operator
import sys
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from json.encoder import encode_basestring  # json.dumps' own (C) escaping
from pathlib import Path
from typing import Any, Protocol

from polyjudge._version import __version__
from polyjudge.data.chat import GenerateRequest, Message
from polyjudge.data.records import CORE_FIELDS, DocumentContext, Item, document_contexts
from polyjudge.engine.long_prompts import has_long_piece, hash_canonical, message_json
from polyjudge.protocols.base import JudgeProtocol


@dataclass(frozen=True, slots=True)
class Task:
    item_index: int
    run_index: int
    judge_index: int
    judge: str
    request: GenerateRequest
    prompt_hash: str
    key: str


_FIELDS: tuple[str, ...] | None = None


def _request_fields() -> tuple[str, ...]:
    global _FIELDS
    if _FIELDS is None:
        _FIELDS = tuple(f.name for f in dataclasses.fields(GenerateRequest) if f.name not in ("messages", "seed"))
    return _FIELDS


# GenerateRequest's fields in their order, and where the seed is among them (with_seed).
_ALL_FIELDS = tuple(f.name for f in dataclasses.fields(GenerateRequest))
_SEED_AT = _ALL_FIELDS.index("seed")
_values_of = operator.attrgetter(*_ALL_FIELDS)


def with_seed(request: GenerateRequest, seed: int | None) -> GenerateRequest:
    """``dataclasses.replace(request, seed=seed)``, without walking the fields' descriptions per call
    (a task's request is made this way once per task)."""
    values = list(_values_of(request))
    values[_SEED_AT] = seed
    return GenerateRequest(*values)


# Field values the fast path writes as they are (anything else, such as a dataclass, takes the slow path).
_PLAIN_TYPES = (str, int, float, bool, type(None), dict, list, tuple)


def prompt_hash(request: GenerateRequest) -> str:
    """SHA-256 of the canonical request without its seed (what :meth:`GenerateRequest.canonical` gives).

    Built field by field rather than through ``dataclasses.asdict``, which deep-copies the
    JSON schema of every prompt: the fields' JSON around the messages is written once per
    distinct set of fields (:func:`_frame`) and the messages are written into it. The bytes
    hashed are the same, so stored keys stay valid.
    """
    fields = canonical_fields(request)
    return _slow_prompt_hash(request) if fields is None else hash_messages(fields, request.messages)


def canonical_fields(request: GenerateRequest) -> dict[str, Any] | None:
    """The fields of the request's canonical form besides messages and seed (None when one of them
    is not plain JSON, such as a dataclass: the slow path writes it)."""
    d: dict[str, Any] = {}
    optional = GenerateRequest._OPTIONAL_DEFAULTS
    for name in _request_fields():
        value = getattr(request, name)
        if type(value) not in _PLAIN_TYPES:
            return None
        if name in optional and value == optional[name]:
            continue
        d[name] = value
    return d


def hash_messages(fields: dict[str, Any], messages: Sequence[Message]) -> str:
    """The prompt hash of ``messages`` sent with ``fields`` (:func:`canonical_fields`). A prompt
    holding a long shared value (a whole document) is hashed by :func:`long_prompts.hash_canonical`:
    the same digest, the document hashed once."""
    return hash_framed(_frame(fields), messages)


def hash_framed(frame: tuple[str, str], messages: Sequence[Message]) -> str:
    """:func:`hash_messages` with the fields' JSON before and after the messages already written."""
    head, tail = frame
    if has_long_piece(messages):
        return hash_canonical(head, tail, messages)
    body = ",".join([message_json(m.role, m.content) for m in messages])
    return hashlib.sha256(f"{head}[{body}]{tail}".encode()).hexdigest()


# The canonical JSON of a request's fields before and after its messages, by the fields' repr
# (a repr names every value with its type, so equal reprs write equal JSON).
_FRAMES: dict[str, tuple[str, str]] = {}
_MESSAGES_STAND_IN = "\ue005messages\ue005"


def _frame(fields: dict[str, Any]) -> tuple[str, str]:
    key = repr(fields)
    found = _FRAMES.get(key)
    if found is None:
        text = json.dumps({**fields, "messages": _MESSAGES_STAND_IN}, sort_keys=True, ensure_ascii=False,
                          separators=(",", ":"))
        head, _, tail = text.partition(f'"{_MESSAGES_STAND_IN}"')
        if len(_FRAMES) >= 64:
            _FRAMES.clear()
        found = _FRAMES[key] = (head, tail)
    return found


def _slow_prompt_hash(request: GenerateRequest) -> str:
    d = request.canonical()
    d.pop("seed", None)
    blob = json.dumps(d, sort_keys=True, ensure_ascii=False, separators=(",", ":"))
    return hashlib.sha256(blob.encode("utf-8")).hexdigest()


class HashLookup(Protocol):
    """Where prompt hashes of item fingerprints are kept (the run's store)."""

    readonly: bool

    def prompt_hashes_of(self, fingerprints: Sequence[str]) -> dict[str, str]: ...

    def put_prompt_hashes(self, pairs: Sequence[tuple[str, str]]) -> None: ...


_CODE_HASHES: dict[str, str] = {}
# What json.dumps(..., ensure_ascii=False, default=str) writes, with the encoder made once (Plan.fingerprint).
_FINGERPRINT_JSON = json.JSONEncoder(ensure_ascii=False, default=str)
# An item's core fields as the JSON of Item.to_dict writes their keys, and a reader of their values.
_CORE_KEYS = tuple(f"{encode_basestring(name)}: " for name in CORE_FIELDS)
_core_values = operator.attrgetter(*CORE_FIELDS)


def _json_atom(value: object) -> str:
    """``value`` as :data:`_FINGERPRINT_JSON` writes it (text, None and whole numbers without its
    machinery, which a fingerprint would otherwise set up a few times per item)."""
    if value is None:
        return "null"
    if type(value) is str:
        return str(encode_basestring(value))
    if type(value) is int:
        return int.__repr__(value)
    return _FINGERPRINT_JSON.encode(value)


def _item_json(item: Item) -> str:
    """:data:`_FINGERPRINT_JSON` of ``item.to_dict()``: written field by field for an item without extra
    fields (to_dict is then its core fields, in their order)."""
    if item.extra:
        return _FINGERPRINT_JSON.encode(item.to_dict())
    return "{" + ", ".join([key + _json_atom(value) for key, value in zip(_CORE_KEYS, _core_values(item))]) + "}"


def _code_hashes(protocol_module: str) -> list[str]:
    """SHA-256 of every source file prompts depend on: polyjudge.protocols, polyjudge.data (the chat
    messages among them) and the protocol's own module (a plugin), in a fixed order."""
    import polyjudge.data as data
    import polyjudge.protocols as protocols

    files: set[Path] = set()
    for package in (protocols, data):
        files |= set(Path(str(package.__file__)).parent.glob("*.py"))
    own = getattr(sys.modules.get(protocol_module), "__file__", None)
    if own:
        files.add(Path(own))
    out = []
    for path in sorted(files):
        key = str(path)
        if key not in _CODE_HASHES:
            _CODE_HASHES[key] = hashlib.sha256(path.read_bytes()).hexdigest()
        out.append(_CODE_HASHES[key])
    return out


class Plan:
    """The tasks of a run (items × runs × judges), planned without building them all.

    Items are visited document by document (:attr:`order`), so requests sharing
    a prompt prefix run together. A task's request is rebuilt from its item
    when needed; only each item's prompt hash is kept (:meth:`prompt_hash`),
    so a run of a million judgments holds one short string per item, not a
    million prompts. :meth:`tasks_of` gives the same tasks, keys and order as
    :func:`plan_tasks`.
    """

    def __init__(self, items: Sequence[Item], protocol: JudgeProtocol, judges: Sequence[str], *, runs: int,
                 temperature: float, seed: int, reasoning_effort: str | None = None,
                 forms: Mapping[str, str] | None = None) -> None:
        self.items, self.protocol, self.judges = items, protocol, list(judges)
        # The name each judge's keys are made with: its own, or with its request form when the judge's
        # options change what is written (backends.form: ?structured=none answers are other answers).
        self.key_names = {j: key_name(j, (forms or {}).get(j, "")) for j in self.judges}
        # Part of every request (and so of its cache key): answers at another effort are other answers.
        self.reasoning_effort = reasoning_effort
        self.runs, self.temperature, self.seed = runs, temperature, seed
        self.contexts = document_contexts(list(items))
        doc_rank: dict[str | None, int] = {}
        for it in items:
            doc_rank.setdefault(it.doc_id, len(doc_rank))
        n_docs = len(doc_rank)
        self.order: list[int] = sorted(
            range(len(items)),
            key=lambda i: (doc_rank[items[i].doc_id] if items[i].doc_id is not None else n_docs + i, i))
        self._hashes: list[str | None] = [None] * len(items)
        # The keys of the items looked at last (a run asks for an item's keys several times: the store, the
        # shared cache, its tasks), bounded so a million-item plan never holds them all.
        self._keys: dict[int, tuple[str, ...]] = {}
        self._fingerprints: list[str | None] = [None] * len(items)
        # Requests rendered for their hash, until their tasks are built (_keep_request).
        self._requests: dict[int, tuple[GenerateRequest, int]] = {}  # with their characters
        self._request_chars = 0
        self._identity: str | None = None
        self._doc_digests: dict[int, tuple[tuple[str, ...], str]] = {}
        # The canonical fields every request of the plan shares (all but the per-item JSON schema).
        self._last_frame: tuple[Any, tuple[str, str]] | None = None
        self._fields = canonical_fields(GenerateRequest(
            messages=(), temperature=temperature, max_tokens=protocol.max_tokens, seed=None,
            top_logprobs=protocol.top_logprobs, reasoning_effort=reasoning_effort))

    def identity(self) -> str:
        """What an item's prompt depends on besides the item: protocol, options, template and code."""
        if self._identity is None:
            p = self.protocol
            parts = [__version__, p.name, type(p).__module__, type(p).__qualname__, p.template_hash,
                     json.dumps(p.options.extra, sort_keys=True, default=str), str(p.options.use_context),
                     str(p.options.template), repr(self.temperature), str(p.max_tokens)]
            if self.reasoning_effort is not None:
                parts.append(f"effort={self.reasoning_effort}")
            # The code that renders prompts (every module of protocols and data, the protocol's own):
            # an edited protocol never reuses the hashes of another version of its code. Whole packages,
            # not the modules loaded so far, so the identity does not depend on what ran before.
            parts += _code_hashes(type(p).__module__)
            self._identity = hashlib.sha256("\x00".join(parts).encode()).hexdigest()
        return self._identity

    def fingerprint(self, i: int) -> str:
        """A cheap stand-in for item ``i``'s prompt: its fields, its document context and :meth:`identity`.

        The store maps fingerprints to prompt hashes, so a resumed run finds its
        keys without rendering a single prompt.
        """
        fp = self._fingerprints[i]
        if fp is None:
            c = self.contexts[i]
            # json.dumps([identity, item.to_dict(), doc_id, digest, position], ensure_ascii=False, default=str)
            blob = (f"[{_json_atom(self.identity())}, {_item_json(self.items[i])}, {_json_atom(c.doc_id)}, "
                    f"{_json_atom(self._document_digest(c))}, {_json_atom(c.position)}]")
            fp = self._fingerprints[i] = hashlib.sha256(blob.encode("utf-8", "surrogatepass")).hexdigest()
        return fp

    def _document_digest(self, context: DocumentContext) -> str:
        """SHA-256 of a document's sources, once per document (not once per segment: quadratic)."""
        key = id(context.sources)
        found = self._doc_digests.get(key) if context.doc_id is not None else None
        if found is None or found[0] is not context.sources:
            blob = json.dumps(context.sources, ensure_ascii=False).encode("utf-8", "surrogatepass")
            found = (context.sources, hashlib.sha256(blob).hexdigest())
            if context.doc_id is not None:  # shared by the document's items; a lone segment is not
                self._doc_digests[key] = found
        return found[1]

    def resolve(self, indices: Sequence[int], known: HashLookup | None) -> None:
        """Find the prompt hashes of ``indices``: from ``known`` (the store's fingerprint table)
        where it has them, else by rendering (and telling ``known``, unless it is read-only)."""
        todo = [i for i in indices if self._hashes[i] is None]
        if not todo:
            return
        if known is None:
            for i in todo:
                self.prompt_hash(i)
            return
        fps = [self.fingerprint(i) for i in todo]
        found = known.prompt_hashes_of(fps)
        new: list[tuple[str, str]] = []
        for i, fp in zip(todo, fps):
            h = found.get(fp)
            if h is None:
                h = self.prompt_hash(i)
                new.append((fp, h))
            self._hashes[i] = h
        if new and not known.readonly:
            known.put_prompt_hashes(new)

    @property
    def n_tasks(self) -> int:
        return len(self.items) * self.runs * len(self.judges)

    def request(self, i: int) -> GenerateRequest:
        """Item ``i``'s request without a seed (every run and judge sends it with its own seed)."""
        kept = self._requests.pop(i, None)
        if kept is not None:
            self._request_chars -= kept[1]
            return kept[0]
        item = self.items[i]
        schema = self.protocol.output_schema(item)
        messages = tuple(self.protocol.messages(item, self.contexts[i]))
        request = GenerateRequest(messages=messages, temperature=self.temperature,
                                  max_tokens=self.protocol.max_tokens, seed=None, json_schema=schema,
                                  top_logprobs=self.protocol.top_logprobs, reasoning_effort=self.reasoning_effort)
        if self._hashes[i] is None:
            self._hashes[i] = self._hash_of(request)
            self._keep_request(i, request)
        return request

    def _hash_of(self, request: GenerateRequest) -> str:
        """:func:`prompt_hash` of one of this plan's requests: its fields besides the schema are the plan's
        own (:attr:`_fields`), so only a new schema object writes the JSON around the messages again."""
        schema = request.json_schema
        if self._fields is None or type(schema) not in _PLAIN_TYPES:
            return prompt_hash(request)
        return hash_framed(self._frame_of(schema), request.messages)

    def _keep_request(self, i: int, request: GenerateRequest) -> None:
        """Keep a request rendered for its hash (a first run's items, while the store's fingerprints
        are resolved) until its tasks are built, so its prompt is rendered once; the first ones only,
        within :data:`REQUESTS_KEPT` items and :data:`REQUEST_CHARS_KEPT` characters (they are sent first)."""
        size = sum(len(m.content) for m in request.messages)
        if len(self._requests) < REQUESTS_KEPT and self._request_chars + size <= REQUEST_CHARS_KEPT:
            self._requests[i] = (request, size)
            self._request_chars += size

    def prompt(self, i: int) -> tuple[tuple[Message, ...], str]:
        """Item ``i``'s messages and prompt hash, without building its request (the dry run's path:
        the same hash :meth:`request` finds)."""
        item = self.items[i]
        messages = tuple(self.protocol.messages(item, self.contexts[i]))
        h = self._hashes[i]
        if h is None:
            schema = self.protocol.output_schema(item)
            if self._fields is None or type(schema) not in _PLAIN_TYPES:
                h = prompt_hash(self.request(i))
            else:
                h = hash_framed(self._frame_of(schema), messages)
            self._hashes[i] = h
        return messages, h

    def _frame_of(self, schema: Any) -> tuple[str, str]:
        """The canonical JSON around the messages for this schema: written again only for another
        schema object (a protocol whose schema is the same for every item returns one object)."""
        if self._last_frame is None or self._last_frame[0] is not schema:
            self._last_frame = (schema, _frame({**(self._fields or {}), "json_schema": schema}))
        return self._last_frame[1]

    def prompt_hash(self, i: int) -> str:
        """Item ``i``'s prompt hash (its prompt is rendered the first time, then forgotten)."""
        h = self._hashes[i]
        if h is None:
            self.request(i)
            h = self._hashes[i]
            assert h is not None
        return h

    def keys_of(self, i: int) -> list[str]:
        """Item ``i``'s cache keys in task order (run, then judge)."""
        return list(self._keys_of(i))

    def _keys_of(self, i: int) -> tuple[str, ...]:
        found = self._keys.get(i)
        if found is None:
            h = self.prompt_hash(i)
            names = self.key_names
            found = tuple(task_key(names[judge], r, self.seed + r, h) for r in range(self.runs)
                          for judge in self.judges)
            if len(self._keys) >= KEYS_KEPT:
                self._keys.clear()
            self._keys[i] = found
        return found

    def tasks_of(self, i: int, base: GenerateRequest | None = None) -> list[Task]:
        """Item ``i``'s tasks (run, then judge), with their requests."""
        base = base if base is not None else self.request(i)
        h = self.prompt_hash(i)
        out: list[Task] = []
        keys = iter(self._keys_of(i))  # in the same order: run, then judge
        for r in range(self.runs):
            request = with_seed(base, self.seed + r)
            for j, judge in enumerate(self.judges):
                out.append(Task(i, r, j, judge, request, h, next(keys)))
        return out

    def tasks(self) -> list[Task]:
        """Every task, in planned order (small runs, the dry run and the batch paths)."""
        return [t for i in self.order for t in self.tasks_of(i)]


# Items whose keys a plan keeps at once (Plan._keys_of): more than the items of a chunk the engine works on.
KEYS_KEPT = 4096
# Requests a plan keeps between rendering an item for its hash and building its tasks (Plan._keep_request):
# at most this many, holding at most this many characters of messages.
REQUESTS_KEPT = 4096
REQUEST_CHARS_KEPT = 16 << 20


def plan_tasks(items: list[Item], protocol: JudgeProtocol, judges: list[str], *, runs: int,
               temperature: float, seed: int) -> list[Task]:
    """One task per (item, run, judge).

    Tasks are ordered document by document, then item, run and judge, so that
    requests sharing a prompt prefix (the same document context) run together
    and a local server can reuse its KV cache. Run ``r`` gets seed ``seed + r``:
    each run is its own sample, and the same run is reproducible.
    """
    return Plan(items, protocol, judges, runs=runs, temperature=temperature, seed=seed).tasks()


def key_name(judge: str, form: str) -> str:
    """The judge part of a task key: the judge's name, followed by its request form when it is not the
    default one (so the keys of a judge with default options are what they always were)."""
    return f"{judge}\x01{form}" if form else judge


def task_key(judge: str, run_index: int, seed: int, phash: str) -> str:
    """Cache key: the canonical request (via its hash), the judge and the run index.

    The run index is part of the key so that run 3 of 10 is its own sample,
    never a cached copy of run 1. ``judge`` is :attr:`Plan.key_names`' entry for the judge
    (:func:`key_name`): its request form is part of the key.
    """
    return hashlib.sha256(key_prefix(judge, run_index, seed) + phash.encode()).hexdigest()


def key_prefix(judge: str, run_index: int, seed: int) -> bytes:
    """What :func:`task_key` hashes before the prompt hash: the same for every prompt of a judge's run,
    so a caller making many keys (a large run's summary) encodes it once."""
    return f"{judge}\x00{run_index}\x00{seed}\x00".encode()


def distinct_tasks(tasks: Iterable[Task]) -> list[Task]:
    """The first task of each cache key, in planned order: one request per distinct key.

    Items with the same prompt (identical translations from different
    systems, repeated segments) share their keys; the others are answered
    from the store by the same answer.
    """
    seen: set[str] = set()
    out: list[Task] = []
    for t in tasks:
        if t.key not in seen:
            seen.add(t.key)
            out.append(t)
    return out


def sample_groups(tasks: Iterable[Task], per_request: int | Mapping[str, int]) -> list[tuple[Task, ...]]:
    """Runs of one prompt and judge, at most ``per_request`` (per judge, when a mapping) to a group.

    A group is sent as one request with ``n`` = its size; choice k answers
    its k-th task, which keeps its own cache key. Groups keep the planned
    order of their first task (a prompt's runs stay together).
    """
    groups: dict[tuple[int, str], list[Task]] = {}
    for t in tasks:
        groups.setdefault((t.judge_index, t.prompt_hash), []).append(t)
    out: list[tuple[Task, ...]] = []
    for members in groups.values():
        size = per_request.get(members[0].judge, 1) if isinstance(per_request, Mapping) else per_request
        size = max(1, size)
        members.sort(key=lambda t: t.run_index)
        out += [tuple(members[i:i + size]) for i in range(0, len(members), size)]
    return out
