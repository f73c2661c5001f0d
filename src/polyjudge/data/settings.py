"""Every judging setting, declared once: its name, type, default, bounds, help and whether it is part
of a run's identity.

A setting's ``name`` is its Python keyword (``JudgeConfig(timeout=...)``) and, dashes for
underscores, its flag (``--timeout``) and its study key (``timeout = ...`` in a ``[[judging]]``
table). Everything else is derived from :data:`SETTINGS` and from nothing else:

* the click options of every command that judges (``cli.options.judge_options``: ``judge``,
  ``score``, ``demo``, ``probe``, ``pairwise`` and ``consistency``);
* a study file's ``[[judging]]`` keys and their JSON schema (``polyjudge study schema``), which
  come from those options, and ``--print-spec``, which writes every ``identity`` setting;
* the defaults of the specification's groups (``engine.spec``, ``backends.spec``, ...), of the
  backends' own settings and the flat Python form ``JudgeConfig`` (``engine.session``: one field
  per setting of a group, no list of its own);
* the manifest's record of the spec and, for every setting declared with ``identity``, the resume
  check and the signature (``engine.spec.JudgingSpec.identity_values``: its group's field or its
  ``extra`` value, default included; the few a protocol resolves, such as the temperature, are
  ``engine.spec.IDENTITY_RESOLVED``).

``group`` and ``member`` say where a setting lives in a ``JudgingSpec`` (``member`` defaults to
the name); a setting whose group has no field of its member's name is kept in the spec's
``extra`` (checked against its declaration, recorded in the manifest like the groups), so a new
setting is its declaration here and the code that reads it. ``flag`` overrides the long flag
(none does today: one vocabulary), ``off_flag`` names a boolean's off switch (``--no-context``),
``invert`` declares a flag that turns its setting off; ``old_flags``/``old_keys`` keep an earlier
release's spellings for one more (with a deprecation line). ``group`` ``"command"`` is a
command-line shorthand that fills other settings (``--model`` a judge, ``--quiet`` the progress
bar) and has no Python keyword.

The module is light (no click, no engine): ``--help`` reads it, and the bounds are ``data.limits``'.
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any

from polyjudge.data import limits

_UNBOUNDED = 1.7976931348623157e308
GROUPS = ("data", "judges", "protocol", "generation", "budget", "execution", "cache", "output")
KINDS = ("int", "float", "text", "flag", "choice", "file", "folder", "judge", "pair")


@dataclass(frozen=True, slots=True)
class Setting:
    """One judging setting (see the module's text).

    ``kind``: ``int``, ``float``, ``text``, ``flag`` (a boolean), ``choice`` (one of ``choices``:
    a tuple, or the name of a collection of ``polyjudge.api.registries``, a registry's names),
    ``file``/``folder`` (a path), ``judge`` (a judge spec) or ``pair`` (``KEY=VALUE``).
    ``also``: more long flags (a repeatable flag's singular, ``--protocol-option``); ``off_flag`` the
    flag that turns a boolean setting off (``--no-context``). ``old_flags`` and ``old_keys`` are
    spellings of an earlier release, accepted for one more with a deprecation line (an old key
    ``no_X`` of a boolean setting is its negation).
    ``low``/``high`` bound a number (``low_open``: above ``low``); ``many`` takes the flag several
    times (a list in a study). ``short`` adds a one-letter flag; ``metavar`` and ``show_default``
    shape ``--help``. ``python``: the setting is a keyword of the Python form (False for
    values the API takes as objects elsewhere). ``identity``: two runs differing in it are
    different runs (a run directory refuses to be resumed with another value; ``--print-spec`` always
    writes it). ``one_off``: an action of one command line (``restart``), never written by
    ``--print-spec``."""

    name: str
    group: str
    kind: str
    default: Any = None
    help: str = ""
    member: str | None = None
    low: float | None = None
    high: float | None = None
    low_open: bool = False
    choices: tuple[str, ...] | str | None = None
    many: bool = False
    short: str | None = None
    metavar: str | None = None
    show_default: bool = False
    identity: bool = False
    flag: str | None = None
    also: tuple[str, ...] = ()
    off_flag: str | None = None
    old_flags: tuple[str, ...] = ()
    old_keys: tuple[str, ...] = ()
    invert: bool = False
    on_command_line: bool = True
    python: bool = True
    one_off: bool = False

    def __post_init__(self) -> None:
        if self.group not in (*GROUPS, "command"):
            raise ValueError(f"setting {self.name!r}: unknown group {self.group!r}")
        if self.kind not in KINDS:
            raise ValueError(f"setting {self.name!r}: unknown kind {self.kind!r}")

    @property
    def field(self) -> str:
        """The setting's field in its group."""
        return self.member or self.name

    @property
    def long_flag(self) -> str:
        """Its long flag as the command line spells it."""
        return self.flag or "--" + self.name.replace("_", "-")

    @property
    def dest(self) -> str:
        """The parameter name the command line parses it into."""
        return self.long_flag[2:].replace("-", "_") if self.invert else self.name

    @property
    def study_key(self) -> str:
        """Its key in a study file's ``[[judging]]`` table."""
        return self.long_flag[2:].replace("-", "_")

    @property
    def command_default(self) -> Any:
        """What the command line passes when the flag is not given."""
        if self.many:
            return ()
        if self.kind == "flag":
            return not self.default if self.invert else bool(self.default)
        return self.default

    def value_of(self, parsed: Any) -> Any:
        """The setting's value from its command-line value."""
        return (not parsed) if self.invert else parsed


def _s(name: str, group: str, kind: str, default: Any = None, help: str = "", **more: Any) -> Setting:
    return Setting(name, group, kind, default, help, **more)


_SHOWN = {"show_default": True}

# In the order of ``polyjudge judge --help``.
SETTINGS: tuple[Setting, ...] = (
    # who judges
    _s("protocol", "protocol", "choice", "da", "Judging protocol (listed below).", member="name", short="-p",
       choices="PROTOCOLS", identity=True, **_SHOWN),
    _s("judges", "judges", "judge", (limits.DEFAULT_JUDGE,),
       "A judge: BACKEND[:MODEL][?OPTIONS][@URL[,URL...]], e.g. openai:gpt-4.1-mini, "
       "openai:MODEL@http://127.0.0.1:8000/v1, openai:MODEL?per_server=4@URL1,URL2, "
       "llamacpp, replay:FILE; OPTIONS are KEY=VALUE pairs joined by & (see the README). "
       f"Repeat for a panel. Default: {limits.DEFAULT_JUDGE} (or --backend/--model).",
       flag="--judge", many=True, metavar="SPEC", identity=True),
    _s("backend", "command", "choice", None,
       "Backend of a single judge (with --model/--base-url); --judge is the general form.", choices="BACKENDS"),
    _s("model", "command", "text", None,
       "Model of the single judge: API model name, GGUF path, or recording (replay).", short="-m"),
    _s("base_url", "command", "text", None, "Endpoint of the single judge, e.g. http://127.0.0.1:8000/v1."),
    _s("api_key_env", "judges", "text", "OPENAI_API_KEY",
       "Environment variable holding the API key (never written anywhere).", **_SHOWN),
    _s("protocol_options", "protocol", "pair", {},
       "Protocol option (value parsed as JSON when possible); see `polyjudge protocols`. Repeatable.",
       member="options", also=("--protocol-option",), many=True, metavar="KEY=VALUE", identity=True,
       old_keys=("protocol_option",)),
    _s("score_mode", "command", "choice", None,
       "sample: the score each answer writes; expected: one answer's probability-weighted "
       "score over the valid score tokens ({protocols}; the judge "
       "must return log-probabilities). Same as --protocol-option score_mode=...", choices=("sample", "expected")),
    _s("with_reference", "command", "flag", False,
       "Show each item's reference translation to the judge ({protocols}; every item needs "
       "'ref'). Recorded in the signature and the mt-metrics-eval "
       "name (-refA). Same as --protocol-option with_reference=true."),
    # runs, sampling, aggregation
    _s("runs", "generation", "int", None, "Runs per item (protocol default).", low=1, high=limits.MAX_RUNS),
    _s("temperature", "generation", "float", None, "Sampling temperature (protocol default).", short="-T",
       low=0.0, high=limits.MAX_TEMPERATURE, identity=True),
    _s("aggregator", "generation", "choice", None,
       "How runs are merged into the segment score (listed below; every one is kept in aggregates.tsv).",
       old_flags=("--aggregate",), old_keys=("aggregate",), choices="AGGREGATORS"),
    _s("min_runs", "generation", "int", 1, "Leave a segment unscored with fewer successful runs than this.",
       low=1, high=limits.MAX_RUNS, **_SHOWN),
    _s("concurrency", "execution", "int", 16, "Requests in flight at once.", short="-c", low=1,
       high=limits.MAX_CONCURRENCY, **_SHOWN),
    _s("seed", "generation", "int", 0, "Run r uses seed + r.", low=0, high=limits.MAX_SEED, identity=True, **_SHOWN),
    _s("prompt_template", "protocol", "file", None, "Replace the protocol's Jinja2 prompt template.",
       identity=True),
    _s("use_context", "protocol", "flag", True, "Judge segments with their document context (--no-context: "
       "without it).", off_flag="--no-context", old_keys=("no_context",), identity=True, **_SHOWN),
    # None (not given) is the segment and 3000 tokens; left out of the identity and signature then, so
    # segment runs keep theirs.
    _s("unit", "protocol", "choice", None,
       "What one request judges: segment (default), or document: a whole document of one system, its "
       "segments marked and the scores and spans mapped back to each (gemba-esa, da, mqm, tsa, gemba-spans, "
       "direct-index, error-free). contrastive-esa "
       "always judges one source's translations together.", choices=("segment", "document"), identity=True),
    _s("unit_max_tokens", "protocol", "int", None,
       "--unit document: split a document at segment boundaries into parts of at most about N tokens of "
       "source and translation (default 3000; the split is recorded in items.jsonl).", low=1,
       high=limits.MAX_UNIT_TOKENS, metavar="N", identity=True),
    _s("record", "cache", "file", None, "Append every request/answer to this JSONL (for the replay backend)."),
    _s("prices", "budget", "file", None,
       "JSON price table (USD per million tokens) over the built-in one: {model: [input, output]} "
       "or {model: {input, cached_input, output, batch_discount}}."),
    # sending and paying
    _s("samples_per_request", "generation", "int", 1,
       "Ask API judges for N runs in one request (n choices, each stored as its own run); a "
       "server that rejects or ignores n gets one request per run (said once).", low=1,
       high=limits.MAX_SAMPLES_PER_REQUEST, metavar="N", **_SHOWN),
    _s("batch", "execution", "flag", False,
       "Send through the judges' Batch API (openai): about half the price, answered within 24 h. "
       "Re-running re-attaches to the run's batches; see `polyjudge batch status|cancel`."),
    _s("batch_fallback", "execution", "choice", "batch",
       "Where failed or expired batch lines are retried: a new batch, or live requests.",
       choices=("batch", "live"), member="batch_options.fallback", **_SHOWN),
    _s("batch_export", "execution", "file", None,
       "Write the requests as a batch input JSONL (OpenAI, vLLM run_batch) instead of sending.", metavar="FILE"),
    _s("batch_import", "execution", "file", None,
       "Load a batch output JSONL (OpenAI, vLLM run_batch) into the run; sends nothing.", metavar="FILE"),
    _s("max_cost", "budget", "float", None,
       "Never let the run (all its sessions) cost more: sending stops before a request could "
       "pass the cap (exit 4); re-run with a higher cap to resume.", low=0.0, high=_UNBOUNDED, low_open=True,
       metavar="USD"),
    # judging in rounds until the systems' order is settled (api.settle; statistics: analysis.sequential)
    _s("until_settled", "budget", "flag", False,
       "Judge in rounds of randomly drawn segments (every system still in an open pair on the same ones; a "
       "system settled against every other is judged no more) and stop once every pair of systems is settled "
       "(or the items or --max-cost run out); open pairs are reported as ties. A later run without it resumes "
       "and sends only what is missing."),
    _s("settle_alpha", "budget", "float", 0.05,
       "--until-settled: the chance that any settled pair is ordered otherwise by the full data "
       "(every look and every pair included).", low=0.0, high=0.5, low_open=True, **_SHOWN),
    _s("settle_method", "budget", "choice", "bernstein",
       "--until-settled: bernstein, a guarantee at every sample size given the score range; asymptotic, "
       "one that holds as the sample grows, needs no range and settles many more pairs (docs: judging in rounds).",
       choices=("bernstein", "asymptotic"), **_SHOWN),
    _s("settle_by", "budget", "choice", "segment",
       "--until-settled: draw segments, or whole documents (doc_id), in each round.",
       choices=("segment", "document"), **_SHOWN),
    _s("settle_round", "budget", "int", None,
       "--until-settled: segments (or documents) drawn per round (default: a twentieth of them, at least 10).",
       low=1, high=limits.MAX_ITEMS_PER_ROUND, metavar="N"),
    _s("settle_range", "budget", "text", None,
       "--until-settled: LOW,HIGH, the range every segment score lies in (the guarantee needs it; "
       "default: the range the first round's scores span, said in the summary).", metavar="LOW,HIGH"),
    _s("rpm", "budget", "float", None, "At most N requests per minute per judge.", low=0.0, high=_UNBOUNDED,
       low_open=True, metavar="N"),
    _s("tpm", "budget", "float", None,
       "At most N tokens per minute per judge (prompt plus completion limit, as providers count).", low=0.0,
       high=_UNBOUNDED, low_open=True, metavar="N"),
    _s("timeout", "judges", "float", 120.0, "Seconds per request.", low=0.0, high=limits.MAX_TIMEOUT_S,
       low_open=True, **_SHOWN),
    _s("reasoning_effort", "judges", "choice", None,
       "Reasoning budget of reasoning models (openai reasoning_effort, anthropic effort); "
       "default: the model's own.", choices="REASONING_EFFORTS", identity=True),
    _s("per_server_concurrency", "judges", "int", None,
       "Requests in flight on each server of a judge that names several "
       "(openai:MODEL@URL1,URL2); a judge's own per_server=N option wins.", low=1, high=limits.MAX_CONCURRENCY,
       metavar="N"),
    _s("n_ctx", "judges", "int", 8192, "Context size (llamacpp); prompts that do not fit are warned about.",
       low=1, high=limits.MAX_N_CTX, **_SHOWN),
    _s("max_failure_rate", "budget", "float", 0.1,
       "Exit 3 (after writing the run) when more than this share of judgments failed: no answer "
       "after retries, refused, unparseable or truncated (each kind is counted).", low=0.0, high=1.0,
       **_SHOWN),
    _s("restart", "output", "flag", False,
       "Delete the run already in the run directory (outputs and store) and start over; "
       "without it a directory holding another protocol or configuration is refused.", one_off=True),
    # the shared response cache
    _s("cache_path", "cache", "folder", None,
       "Folder of the response cache every run shares: answers found there are not sent "
       "again (and cost nothing); every answer received is kept there (default: "
       "POLYJUDGE_CACHE, else the user cache folder; see `polyjudge cache stats`).", member="path",
       also=("--cache",), old_keys=("cache",), metavar="PATH"),
    _s("use_cache", "cache", "flag", True,
       "Read and fill the shared response cache (--no-cache: neither; send what the run directory lacks).",
       member="use", off_flag="--no-cache", old_keys=("no_cache",), **_SHOWN),
    # who sends
    _s("executor", "execution", "choice", "local",
       "Who sends the requests: this process, or a pool of Ray actors (pip install 'polyjudge[ray]').",
       choices="EXECUTORS", **_SHOWN),
    _s("ray_address", "execution", "text", None,
       "Ray cluster: auto, HOST:6379 or ray://HOST:10001 (default: RAY_ADDRESS, else a "
       "one-machine cluster).", metavar="ADDR"),
    _s("ray_actors", "execution", "int", None,
       "Actors in the pool (default: one per node); --concurrency is split between them.", low=1,
       high=limits.MAX_CONCURRENCY, metavar="N"),
    _s("ray_cpus_per_actor", "execution", "float", 1.0, "CPUs reserved by each Ray actor.", low=0.0,
       high=limits.MAX_RAY_RESOURCES, **_SHOWN),
    _s("ray_gpus_per_actor", "execution", "float", 0.0, "GPUs reserved by each Ray actor.", low=0.0,
       high=limits.MAX_RAY_RESOURCES, **_SHOWN),
    _s("ray_connect_timeout", "execution", "float", 30.0,
       "Give up (exit 2) when the cluster named by --ray-address or RAY_ADDRESS does not "
       "answer within this time.", low=0.0, high=_UNBOUNDED, low_open=True, member="ray_connect_timeout_s",
       metavar="SECONDS", **_SHOWN),
    _s("ray_logs", "execution", "flag", False,
       "Show Ray's own log lines on the terminal (default: they go to ray.log in the run "
       "directory; POLYJUDGE_RAY_LOGS=1 does the same)."),
    _s("quiet", "command", "flag", False, "No progress bar.", short="-q"),
    # Python only: values the API takes as objects
    _s("progress", "execution", "flag", False, "Show a progress bar.", on_command_line=False),
    _s("retry", "execution", "text", None, "The retry policy (engine.runner.RetryPolicy).", on_command_line=False),
    _s("batch_options", "execution", "text", None, "Batch API options (engine.batches.BatchOptions).",
       on_command_line=False),
    _s("ray_runtime_env", "execution", "text", None, "Ray's runtime environment of the actors (not recorded).",
       on_command_line=False),
    _s("src_lang", "data", "text", None, "Source language code for items that lack one.", on_command_line=False),
    _s("tgt_lang", "data", "text", None, "Target language code for items that lack one.", on_command_line=False),
    _s("language_names", "data", "text", None, "Names of language codes that are no BCP 47 tag (CODE=NAME,...; "
       "the input's --language-names).", on_command_line=False, identity=True),
)


def old_keys() -> dict[str, tuple[Setting, bool]]:
    """Study keys of an earlier release: old key -> (its setting, whether the old key meant the negation)."""
    return {old: (s, s.kind == "flag" and old.startswith("no_") and not s.name.startswith("no_"))
            for s in SETTINGS for old in s.old_keys}


def by_name() -> dict[str, Setting]:
    """Every declared setting by its name (read at call time, so a setting declared later counts)."""
    return {s.name: s for s in SETTINGS}


def get(name: str) -> Setting:
    return by_name()[name]


def default(name: str) -> Any:
    """The one default of the setting ``name`` (what every form of it starts from)."""
    return by_name()[name].default


def command_line() -> Iterator[Setting]:
    """The settings that are flags of every judging command, in ``--help`` order."""
    return (s for s in SETTINGS if s.on_command_line)


def of_group(group: str) -> Iterator[Setting]:
    return (s for s in SETTINGS if s.group == group)


def python_keywords() -> Iterator[Setting]:
    """The settings of the flat Python form (``JudgeConfig``): those of a group."""
    return (s for s in SETTINGS if s.group != "command" and s.python and "." not in s.field)


def identity_names() -> tuple[str, ...]:
    """The settings that are part of a run's identity."""
    return tuple(s.name for s in SETTINGS if s.identity)


def check_value(setting: Setting, value: Any) -> None:
    """``value`` of ``setting`` in its declared bounds (an InputError naming the setting)."""
    from polyjudge.data.shapes import check_range

    if setting.kind in ("int", "float") and setting.low is not None:
        high = _UNBOUNDED if setting.high is None else setting.high
        check_range(setting.name, value, setting.low, high, low_open=setting.low_open, whole=setting.kind == "int")
    elif setting.kind == "choice" and isinstance(setting.choices, tuple) and value is not None \
            and value not in setting.choices:
        from polyjudge.data.errors import InputError

        raise InputError(f"must be one of {', '.join(setting.choices)}, got {value!r}", field=setting.name,
                         setting=True)


def check_extra(values: Any) -> dict[str, Any]:
    """The values of declared settings that no group has a field for, each checked; a name that is not a
    declared setting is a ``TypeError``."""
    known = by_name()
    out = dict(values)
    for name, value in out.items():
        if name not in known:
            raise TypeError(f"JudgingSpec.extra: {name!r} is not a declared setting (polyjudge.data.settings)")
        check_value(known[name], value)
    return out


__all__ = ["GROUPS", "KINDS", "SETTINGS", "Setting", "by_name", "check_extra", "check_value", "command_line", "default",
           "get", "identity_names", "old_keys",
           "of_group", "python_keywords"]
