"""One registry pattern for everything that is looked up by name.

Protocols, backends, run aggregators and meta-evaluation statistics each have
one :class:`Registry`. The name lives on the registered object (a class
attribute ``name`` or the name given to the decorator); built-in entries are
registered by their module's decorators when the registry first needs them
(a registry given a ``package`` imports every module of it, in name order, before a
listing, so a new built-in is a new module and nothing else; looking one name up
imports only the modules that can hold it, see :meth:`Registry.get`), and
third-party packages add entries through an entry-point group
(``polyjudge.protocols``, ``polyjudge.backends``, ...), so a plugin appears in
``--help`` and works everywhere a built-in does, without a line changed here.

A registry listed by ``--help`` may also declare its built-ins (:class:`Builtin`: where each lives,
its summary and option names), so that names, summaries and options are listed without importing
the modules that implement them; a test holds each declaration to what its module registers.
"""

from __future__ import annotations

import importlib
import pkgutil
import sys
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass
from fnmatch import fnmatch
from typing import Any, Generic, NamedTuple, TypeVar

T = TypeVar("T")


class UnknownNameError(KeyError):
    """A name that no registry entry carries; the message lists the valid names."""

    def __init__(self, message: str) -> None:
        super().__init__(message)
        self.message = message

    def __str__(self) -> str:
        return self.message


@dataclass(frozen=True, slots=True)
class Builtin:
    """A built-in entry as its registry declares it: ``target`` (``"module:attribute"``, imported when the
    entry is looked up), the one-line ``summary`` listings show, and the names of its ``options``.
    tests/architecture/test_startup.py checks every declaration against the registered object."""

    target: str
    summary: str
    options: tuple[str, ...] = ()


class Registry(Generic[T]):
    """Named entries of one kind.

    ``package``'s modules (found with :mod:`pkgutil`, in name order; only those whose name matches
    ``pattern``, an :mod:`fnmatch` pattern, when the package holds other things too) and
    ``modules`` are imported (once) before the first lookup or listing, so that
    their ``@register`` decorators run; ``entry_point_group`` names the
    entry-point group read for plugins. An entry point may load a registered
    object (its module's decorator registers it) or a plain object, which is
    registered under the entry point's name.
    """

    def __init__(self, kind: str, *, package: str | None = None, pattern: str = "*", modules: Iterable[str] = (),
                 entry_point_group: str | None = None, builtins: Mapping[str, Builtin] | None = None) -> None:
        self.kind = kind
        self.builtins: Mapping[str, Builtin] = builtins or {}
        self._pattern = pattern
        self.entry_point_group = entry_point_group
        self._package = package
        self._modules = tuple(modules)
        self._entries: dict[str, T] = {}
        self._loaded = False
        self._plugins_loaded = False
        self._plugin_errors: dict[str, str] = {}

    # -- registering -------------------------------------------------------------
    def register(self, name: str | None = None) -> Callable[[T], T]:
        """Decorator: register the object under ``name`` (default: its ``name`` attribute)."""

        def deco(obj: T) -> T:
            key = name if name is not None else getattr(obj, "name", None)
            if not isinstance(key, str) or not key:
                raise TypeError(f"a registered {self.kind} needs a name (class attribute 'name' "
                                f"or register('NAME')), got {obj!r}")
            self._entries[key] = obj
            return obj

        return deco

    def add(self, name: str, obj: T) -> None:
        """Register ``obj`` under ``name`` without a decorator (tests, dynamic entries)."""
        self._entries[name] = obj

    # -- looking up --------------------------------------------------------------
    def _load(self) -> None:
        if self._loaded:
            return
        self._loaded = True
        modules = self.builtin_modules()
        for module in modules:
            importlib.import_module(module)
        # Built-ins list in the order of their modules, whatever was imported first.
        rank = {m: i for i, m in enumerate(modules)}
        self._entries = dict(sorted(self._entries.items(),
                                    key=lambda kv: rank.get(getattr(kv[1], "__module__", ""), len(rank))))
        self._load_plugins()

    def _load_plugins(self) -> None:
        if self._plugins_loaded or self.entry_point_group is None:
            return
        self._plugins_loaded = True
        from importlib import metadata  # only when plugins are looked up: keeps imports cheap

        for ep in metadata.entry_points(group=self.entry_point_group):
            if ep.name in self._entries or ep.name in self.builtins:
                continue  # a built-in name is never replaced by a plugin
            before = set(self._entries)
            try:
                obj = ep.load()
            except Exception as exc:  # a broken plugin must not break the tool
                self._plugin_errors[ep.name] = f"{type(exc).__name__}: {exc}"
                print(f"polyjudge: warning: {self.kind} plugin '{ep.name}' ({ep.value}) "
                      f"failed to load: {exc}", file=sys.stderr)
                continue
            # Loading ran the module's decorators (a statistic, a preset: the registry holds a record
            # built from the object), or the object is plain and is registered under the entry point's name
            # (built-ins its imports registered on the way do not count).
            if not (set(self._entries) - before - set(self.builtins)) and obj not in self._entries.values():
                self._entries[ep.name] = obj

    def _listed(self) -> list[str]:
        """Every name in listing order; a registry with declared built-ins imports none of their modules."""
        if not self.builtins:
            self._load()
            return list(self._entries)
        self._load_plugins()
        return list(self.builtins) + [n for n in self._entries if n not in self.builtins]

    def builtin_modules(self) -> tuple[str, ...]:
        """The modules holding built-in entries: every module of ``package`` (name order), then ``modules``."""
        found: list[str] = []
        if self._package is not None:
            package = importlib.import_module(self._package)
            found = sorted(f"{self._package}.{info.name}" for info in pkgutil.iter_modules(package.__path__)
                           if not info.name.startswith("_") and fnmatch(info.name, self._pattern))
        return tuple(found) + tuple(m for m in self._modules if m not in found)

    def _find_builtin(self, name: str) -> None:
        """Import only the built-in modules that can register ``name``, before the full load.

        A module whose file is called after the name goes first, then every module whose source holds
        the name as a string literal (the decorator's or the class attribute's); the search stops at the
        first module that registers it. A name registered in no such module is left to the full load,
        so this only ever saves imports: what ``get`` returns is what it returned after a full load
        (built-in names are unique, and a plugin never replaces a built-in)."""
        for module in self._candidate_modules(name):
            importlib.import_module(module)
            if name in self._entries:
                return

    def _candidate_modules(self, name: str) -> list[str]:
        if self._package is None:
            return []
        package = importlib.import_module(self._package)
        quoted = (f'"{name}"'.encode(), f"'{name}'".encode())
        by_file: list[str] = []
        by_text: list[str] = []
        for info in sorted(pkgutil.iter_modules(package.__path__), key=lambda i: i.name):
            if info.name.startswith("_") or info.ispkg or not fnmatch(info.name, self._pattern):
                continue
            module = f"{self._package}.{info.name}"
            if info.name == name.replace("-", "_"):
                by_file.append(module)
                continue
            path = getattr(info.module_finder, "path", None)
            try:
                source = open(f"{path}/{info.name}.py", "rb").read() if path else b""
            except OSError:
                source = b""
            if any(q in source for q in quoted):
                by_text.append(module)
        return by_file + by_text

    def get(self, name: str) -> T:
        if not self._loaded and name not in self._entries and name in self.builtins:
            importlib.import_module(self.builtins[name].target.split(":")[0])
        if not self._loaded and name not in self._entries:
            self._find_builtin(name)
        if not self._loaded and name in self._entries:
            return self._entries[name]
        self._load()
        try:
            return self._entries[name]
        except KeyError:
            hint = self._plugin_errors.get(name)
            why = f" (its plugin failed to load: {hint})" if hint else ""
            raise UnknownNameError(f"unknown {self.kind} '{name}'{why}; available: "
                                   f"{', '.join(self.names())}") from None

    def __contains__(self, name: object) -> bool:
        if isinstance(name, str) and name in self.builtins:
            return True
        if isinstance(name, str) and not self._loaded and name not in self._entries:
            self._find_builtin(name)
        if isinstance(name, str) and name in self._entries:
            return True
        self._load()
        return name in self._entries

    def names(self) -> list[str]:
        """Registered names in registration order (built-ins first, then plugins)."""
        return self._listed()

    def items(self) -> list[tuple[str, T]]:
        self._load()
        return list(self._entries.items())

    def describe(self) -> dict[str, str]:
        """Name -> first line of the entry's docstring, for ``--help`` listings."""
        out: dict[str, str] = {}
        for name in self._listed():
            declared = self.builtins.get(name)
            if declared is not None:
                out[name] = declared.summary
                continue
            obj = self._entries[name]
            doc = getattr(obj, "summary", None) or (getattr(obj, "__doc__", None) or "")
            out[name] = str(doc).strip().splitlines()[0] if str(doc).strip() else ""
        return out

    def help_text(self, width: int = 100) -> str:
        """``name  summary`` lines, as shown in ``--help``."""
        desc = self.describe()
        pad = max((len(n) for n in desc), default=0)
        return "\n".join(f"{n.ljust(pad)}  {d}"[:width].rstrip() for n, d in desc.items())



class RegistryKind(NamedTuple):
    """One kind of registry, declared once in :data:`REGISTRY_KINDS`; the rest follows from it.

    ``name`` is the listing command (``polyjudge NAME``, built by :mod:`polyjudge.cli.registry_cmd` and
    named in the command table of :mod:`polyjudge.cli.main`) and the key of
    :func:`polyjudge.api.registries.entries`; ``registry`` the ``"module:ATTRIBUTE"`` of its
    :class:`Registry`; ``register`` the ``"module:function"`` of the decorator :mod:`polyjudge.plugins`
    exports for it; ``options`` the ``"module:function"`` describing an entry's options in a listing
    (None: none); ``noun`` how the listing's ``--help`` names the entries (default: ``name``);
    ``short_help`` the line ``polyjudge --help`` shows (empty: no listing command). Targets are text, so
    declaring a kind imports nothing."""

    name: str
    registry: str
    register: str
    options: str | None = None
    noun: str = ""
    short_help: str = ""

    @property
    def listed(self) -> bool:
        """Whether ``polyjudge NAME`` lists this registry."""
        return bool(self.short_help)

    @property
    def command(self) -> str:
        """The ``"module:attribute"`` of its listing command."""
        return "polyjudge.cli.registry_cmd:" + self.name.replace("-", "_")

    def load(self) -> Registry[Any]:
        """The registry itself (importing its module)."""
        found: Registry[Any] = resolve(self.registry)
        return found


def resolve(target: str) -> Any:
    """The object a ``"module:attribute"`` target names."""
    module, attribute = target.split(":")
    return getattr(importlib.import_module(module), attribute)


_LISTED = "polyjudge.api.registries:"

# Every kind of registry, in listing order: a new kind is one line here.
REGISTRY_KINDS: tuple[RegistryKind, ...] = (
    RegistryKind("protocols", "polyjudge.protocols.registry:PROTOCOLS",
                 "polyjudge.protocols.registry:register_protocol", _LISTED + "protocol_options",
                 short_help="List the protocols with their options."),
    RegistryKind("backends", "polyjudge.backends.registry:BACKENDS", "polyjudge.backends.registry:register_backend",
                 _LISTED + "backend_options", short_help="List the backends with their options."),
    RegistryKind("statistics", "polyjudge.metaeval.statistics:STATISTICS",
                 "polyjudge.metaeval.statistics:register_statistic", _LISTED + "statistic_options",
                 short_help="List the statistics with their options."),
    RegistryKind("aggregators", "polyjudge.aggregate.runs:AGGREGATORS", "polyjudge.aggregate.runs:register_aggregator",
                 short_help="List the aggregators with their options."),
    RegistryKind("presets", "polyjudge.metaeval.tasks:PRESETS", "polyjudge.metaeval.tasks:register_preset",
                 short_help="List the presets with their options."),
    RegistryKind("readers", "polyjudge.data.readers:READERS", "polyjudge.data.readers:register_reader",
                 _LISTED + "reader_options", short_help="List the input readers with their options."),
    RegistryKind("score-formats", "polyjudge.metaeval.readers:SCORE_FORMAT_REGISTRY",
                 "polyjudge.metaeval.readers:register_score_format", _LISTED + "score_format_options",
                 "score formats", "List the score formats."),
    RegistryKind("span-formats", "polyjudge.metaeval.spans.readers:SPAN_FORMAT_REGISTRY",
                 "polyjudge.metaeval.spans.readers:register_span_format", _LISTED + "span_format_options",
                 "span formats", "List the span formats."),
    RegistryKind("writers", "polyjudge.rundir.writers:WRITERS", "polyjudge.rundir.writers:register_writer",
                 _LISTED + "writer_options", "output writers", "List the output writers with their options."),
    RegistryKind("batch-clients", "polyjudge.backends.batch:BATCH_CLIENTS",
                 "polyjudge.backends.batch:register_batch_client"),
    RegistryKind("batch-formats", "polyjudge.backends.batch:BATCH_LINE_FORMATS",
                 "polyjudge.backends.batch:register_batch_format"),
)


def lazy_members(module: str, homes: Mapping[str, str]) -> tuple[Callable[[str], Any], Callable[[], list[str]]]:
    """A package's ``__getattr__`` and ``__dir__`` for public names that load from their home modules
    (``homes``: name -> module) on first use, so a command pays only for what it calls; a name, once
    imported, is a plain attribute of ``module``."""

    def load(name: str) -> Any:
        home = homes.get(name)
        if home is None:
            raise AttributeError(f"module {module!r} has no attribute {name!r}")
        value = getattr(importlib.import_module(home), name)
        setattr(sys.modules[module], name, value)
        return value

    def listing() -> list[str]:
        return sorted(set(vars(sys.modules[module])) | set(homes))

    return load, listing

__all__ = ["REGISTRY_KINDS", "Builtin", "Registry", "RegistryKind", "UnknownNameError", "lazy_members", "resolve"]
