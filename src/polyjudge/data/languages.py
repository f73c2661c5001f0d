"""Language codes -> English names (for prompts) and language metadata (for analyses).

Judges read "German" more reliably than "de", and WMT data carries codes
(``en``, ``de``, ``zh``, sometimes with a region or script: ``pt-BR``,
``zh_Hant``). Names are English because the prompts are written in English.
"""

from __future__ import annotations

import functools
import re
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass
from importlib import resources
from typing import Any, cast

from polyjudge.data.errors import InputError
from polyjudge.data.records import Item

# ISO 639-1 (and a few ISO 639-3 codes used by WMT) -> English name.
LANGUAGE_NAMES: dict[str, str] = {
    "af": "Afrikaans", "am": "Amharic", "ar": "Arabic", "as": "Assamese", "az": "Azerbaijani",
    "be": "Belarusian", "bg": "Bulgarian", "bn": "Bengali", "bo": "Tibetan", "br": "Breton",
    "bs": "Bosnian", "ca": "Catalan", "cs": "Czech", "cy": "Welsh", "da": "Danish",
    "de": "German", "el": "Greek", "en": "English", "eo": "Esperanto", "es": "Spanish",
    "et": "Estonian", "eu": "Basque", "fa": "Persian", "fi": "Finnish", "fil": "Filipino",
    "fr": "French", "ga": "Irish", "gl": "Galician", "gu": "Gujarati", "ha": "Hausa",
    "he": "Hebrew", "hi": "Hindi", "hr": "Croatian", "ht": "Haitian Creole", "hu": "Hungarian",
    "hy": "Armenian", "id": "Indonesian", "ig": "Igbo", "is": "Icelandic", "it": "Italian",
    "iu": "Inuktitut", "ja": "Japanese", "jv": "Javanese", "ka": "Georgian", "kk": "Kazakh",
    "km": "Khmer", "kn": "Kannada", "ko": "Korean", "ku": "Kurdish", "ky": "Kyrgyz",
    "la": "Latin", "lb": "Luxembourgish", "lo": "Lao", "lt": "Lithuanian", "lv": "Latvian",
    "mg": "Malagasy", "mi": "Maori", "mk": "Macedonian", "ml": "Malayalam", "mn": "Mongolian",
    "mr": "Marathi", "ms": "Malay", "mt": "Maltese", "my": "Burmese", "nb": "Norwegian Bokmål",
    "ne": "Nepali", "nl": "Dutch", "nn": "Norwegian Nynorsk", "no": "Norwegian", "ny": "Chichewa",
    "or": "Odia", "pa": "Punjabi", "pl": "Polish", "ps": "Pashto", "pt": "Portuguese",
    "ro": "Romanian", "ru": "Russian", "rw": "Kinyarwanda", "sd": "Sindhi", "si": "Sinhala",
    "sk": "Slovak", "sl": "Slovenian", "sm": "Samoan", "sn": "Shona", "so": "Somali",
    "sq": "Albanian", "sr": "Serbian", "st": "Sesotho", "su": "Sundanese", "sv": "Swedish",
    "sw": "Swahili", "ta": "Tamil", "te": "Telugu", "tg": "Tajik", "th": "Thai",
    "tk": "Turkmen", "tl": "Tagalog", "tr": "Turkish", "tt": "Tatar", "ug": "Uyghur",
    "uk": "Ukrainian", "ur": "Urdu", "uz": "Uzbek", "vi": "Vietnamese", "wo": "Wolof",
    "xh": "Xhosa", "yi": "Yiddish", "yo": "Yoruba", "zh": "Chinese", "zu": "Zulu",
    # ISO 639-3 codes that appear in WMT test sets
    "liv": "Livonian", "sah": "Yakut", "chv": "Chuvash", "brx": "Bodo", "mni": "Manipuri",
    "arz": "Egyptian Arabic", "bho": "Bhojpuri", "mai": "Maithili", "yue": "Cantonese",
}

# Region / script subtags that change what a judge should expect.
_VARIANTS: dict[str, str] = {
    "zh-hans": "Simplified Chinese", "zh-cn": "Simplified Chinese",
    "zh-hant": "Traditional Chinese", "zh-tw": "Traditional Chinese",
    "pt-br": "Brazilian Portuguese", "pt-pt": "European Portuguese",
    "es-mx": "Mexican Spanish", "es-419": "Latin American Spanish",
    "en-us": "American English", "en-gb": "British English", "fr-ca": "Canadian French",
    "sr-latn": "Serbian (Latin script)", "sr-cyrl": "Serbian (Cyrillic script)",
}

_NAMES_LOWER = {v.lower(): v for v in LANGUAGE_NAMES.values()}
# Codes the user named (``--language-names ge=Georgian-variant``): known, and named so in prompts.
_declared: dict[str, str] = {}


@functools.lru_cache(maxsize=4096)  # called twice per prompt with a handful of distinct codes
def language_name(code: str | None) -> str | None:
    """English name for a language code; None for None or an empty string.

    A region/script variant with a known name gets it (``pt-BR`` -> Brazilian
    Portuguese); otherwise the base code decides (``de-CH`` -> German). A
    value that is already a name (``German``) is returned as given, and an
    unknown code is returned unchanged so the prompt still says something.
    """
    if code is None or not code.strip():
        return None
    raw = code.strip()
    key = raw.lower().replace("_", "-")
    if key in _declared:
        return _declared[key]
    if key in _VARIANTS:
        return _VARIANTS[key]
    base = re.split(r"-", key, maxsplit=1)[0]
    if base in LANGUAGE_NAMES:
        return LANGUAGE_NAMES[base]
    if key in _NAMES_LOWER:
        return _NAMES_LOWER[key]
    if base in _declared:
        return _declared[base]
    if not _valid_tag(key):
        return raw
    norm = _normal_language(base)  # ISO 639-2/3 forms of 639-1 languages (FLORES' deu_Latn, zho_Hant)
    return _VARIANTS.get(norm + key[len(base):]) or LANGUAGE_NAMES.get(norm) or _registry_names().get(norm, raw)


def language_code(name_or_code: str) -> str | None:
    """Inverse lookup: ``"German"`` -> ``"de"``; a known code is returned as is."""
    key = name_or_code.strip().lower().replace("_", "-")
    if key.split("-")[0] in LANGUAGE_NAMES:
        return key
    for code, name in LANGUAGE_NAMES.items():
        if name.lower() == key:
            return code
    return None




# -- language metadata (resource class, script, family) -------------------------

@dataclass(frozen=True, slots=True)
class LanguageInfo:
    """One row of the shipped ``languages.tsv`` (sources in ``data/README.md``)."""

    code: str
    name: str
    resource_class: int | None  # Joshi et al. (2020): 0 (left behind) .. 5 (winners); None = not checked
    script: str  # ISO 15924
    family: str
    branch: str | None
    word_spaces: bool


LANGUAGE_TABLE = "languages.tsv"
LANGUAGE_COLUMNS = ("code", "name", "resource_class", "script", "family", "branch", "word_spaces")


def parse_language_table(text: str, path: str = LANGUAGE_TABLE) -> dict[str, LanguageInfo]:
    """Parse the language table (``#`` comment lines, a header, tab-separated rows)."""
    out: dict[str, LanguageInfo] = {}
    header: list[str] | None = None
    for n, line in enumerate(text.splitlines(), 1):
        if not line.strip() or line.startswith("#"):
            continue
        cells = line.split("\t")
        if header is None:
            header = cells
            if tuple(header) != LANGUAGE_COLUMNS:
                raise InputError(f"header must be {' '.join(LANGUAGE_COLUMNS)}", path=path, line=n)
            continue
        if len(cells) != len(header):
            raise InputError(f"{len(cells)} cells, the header has {len(header)}", path=path, line=n)
        row = dict(zip(header, cells))
        code = row["code"].strip().lower()
        if not code or code in out:
            raise InputError(f"empty or repeated code {code!r}", path=path, line=n, field="code")
        rc = row["resource_class"].strip()
        if rc and rc not in {"0", "1", "2", "3", "4", "5"}:
            raise InputError(f"resource class must be 0-5 or empty, got {rc!r}", path=path, line=n,
                             field="resource_class")
        if row["word_spaces"] not in ("yes", "no"):
            raise InputError("word_spaces must be yes or no", path=path, line=n, field="word_spaces")
        for col in ("name", "script", "family"):
            if not row[col].strip():
                raise InputError(f"empty {col}", path=path, line=n, field=col)
        out[code] = LanguageInfo(code, row["name"], int(rc) if rc else None, row["script"], row["family"],
                                 row["branch"] or None, row["word_spaces"] == "yes")
    return out


@functools.cache
def language_table() -> dict[str, LanguageInfo]:
    """The shipped table, code -> :class:`LanguageInfo` (read once)."""
    res = resources.files("polyjudge.data").joinpath(LANGUAGE_TABLE)
    return parse_language_table(res.read_text(encoding="utf-8"))


def language_info(code: str | None) -> LanguageInfo | None:
    """Metadata of a language code (``pt-BR`` -> Portuguese, ``zh_Hant`` -> Chinese);
    None for an unknown or empty code."""
    if code is None or not code.strip():
        return None
    key = code.strip().lower().replace("_", "-")
    table = language_table()
    return table.get(key) or table.get(key.split("-")[0])


__all__ = ["LANGUAGE_NAMES", "LanguageInfo", "MissingLanguages", "UnknownLanguage", "check_code", "check_item_codes",
           "check_languages", "declare_languages", "language_code", "language_info", "language_name",
           "language_table", "nearest_codes", "parse_language_names", "parse_language_table"]


# The ways an input gives its items languages, as API field names (the CLI shows them as its flags).
LANGUAGE_SOURCES = ("src_lang", "tgt_lang", "lp", "columns")
_SHOWN_ROWS = 5


class MissingLanguages(InputError):
    """Items whose prompt would lose a language: names the file, the first rows, their count and the
    ways to give the languages (:data:`LANGUAGE_SOURCES`; ``flag`` turns a field name into what the
    caller calls it, e.g. a command-line flag)."""

    def __init__(self, path: str | None, rows: list[str], count: int, total: int, missing: list[str]) -> None:
        self.rows, self.count, self.total, self.missing = rows, count, total, missing
        super().__init__(self._reason(lambda name: name), path=path, field=missing[0])

    def _reason(self, flag: Callable[[str], str]) -> str:
        what = " and ".join({"src_lang": "source", "tgt_lang": "target"}.get(m, m) for m in self.missing)
        kinds = {row.split(" ")[0] for row in self.rows}
        shown = ", ".join(self.rows) if len(kinds) > 1 else \
            f"{kinds.pop()}{'s' if len(self.rows) > 1 else ''} " + ", ".join(r.split(" ")[1] for r in self.rows)
        more = ", …" if self.count > len(self.rows) else ""
        src, tgt, lp, columns = (flag(name) for name in LANGUAGE_SOURCES)
        return (f"{self.count} of {self.total} items have no {what} language ({shown}{more}); "
                f"a prompt never goes without them: give {lp} (e.g. en-de) or {src}/{tgt} for the whole input, "
                f"src_lang/tgt_lang columns (or map yours with {columns}), or a test set that names its pair")

    def with_flags(self, flag: Callable[[str], str]) -> InputError:
        """The same error, its ways to give the languages named by ``flag``."""
        return InputError(self._reason(flag), path=self.path, field=self.missing[0])


def _where(origin: str | None, index: int) -> tuple[str | None, str]:
    """(file, "row N") of an item's ``origin`` (``file.csv:12``); items made in code are "item N"."""
    if origin:
        path, _, line = origin.rpartition(":")
        if path and line.isdigit():
            return path, f"row {line}"
        return origin, f"item {index}"
    return None, f"item {index}"


def check_languages(items: Sequence[Item], missing: Callable[[Item], Sequence[str]],
                    names: str | Sequence[str] | Mapping[str, str] | None = None) -> None:
    """Refuse items a protocol would prompt without a language or with a code no table knows: ``missing(item)``
    names the language fields the item lacks for that protocol (none when it needs none); ``names`` are the
    codes the user named (``language_names``, :func:`parse_language_names`), declared for the prompts.
    Raises :class:`UnknownLanguage` for the first unknown code (:func:`check_item_codes`), else
    :class:`MissingLanguages` for the first file with such items. An item with both languages has
    all a prompt can name, so ``missing`` is only asked about the others (a million items: ~0.1 s)."""
    declared = parse_language_names(names)
    check_item_codes(items, declared)
    declare_languages(declared)
    lacking_any = [i for i, it in enumerate(items) if not (it.src_lang and it.tgt_lang)]
    if not lacking_any:
        return
    bad: dict[str | None, list[str]] = {}
    lacking: dict[str, None] = {}
    counts: dict[str | None, int] = {}
    for index in lacking_any:
        item = items[index]
        names = missing(item)
        if not names:
            continue
        path, row = _where(item.origin, index + 1)
        rows = bad.setdefault(path, [])
        counts[path] = counts.get(path, 0) + 1
        if len(rows) < _SHOWN_ROWS:
            rows.append(row)
        lacking.update(dict.fromkeys(names))
    if bad:
        path, rows = next(iter(bad.items()))
        order = [name for name in ("src_lang", "tgt_lang") if name in lacking] + \
            [name for name in lacking if name not in ("src_lang", "tgt_lang")]
        raise MissingLanguages(path, rows, counts[path], len(items), order)


# -- checking codes -----------------------------------------------------------------------------------------
#
# A code is known when it is a valid BCP 47 tag (ISO 639-1/-2/-3 language, ISO 15924 script, ISO 3166 or UN
# M.49 region, registered variants: the IANA subtag registry as the ``langcodes`` package ships it, offline),
# written with '-' or '_' (WMT24++ and WMT25 write ``ar_EG``, ``sr_Cyrl_RS``), a language's English name
# (``German``), or a code the user named. Anything else is refused before a prompt is rendered.

NAMES_SETTING = "language_names"  # the API setting (the command line shows it as --language-names)
_MAX_SUGGESTIONS = 3
_TAG = re.compile(r"[A-Za-z0-9]{1,8}(?:[-_][A-Za-z0-9]{1,8})*")


def _key(code: str) -> str:
    return code.strip().replace("_", "-").lower()


@functools.lru_cache(maxsize=4096)
def _valid_tag(key: str) -> bool:
    """Whether ``key`` is a valid BCP 47 tag with a language (private-use ``x-...`` alone is not)."""
    from langcodes import Language
    from langcodes.tag_parser import LanguageTagError

    if not _TAG.fullmatch(key) or key.startswith("x-"):
        return False
    try:
        return bool(Language.get(key).is_valid())
    except (LanguageTagError, ValueError):
        return False


@functools.lru_cache(maxsize=1024)
def _normal_language(subtag: str) -> str:
    """The language subtag BCP 47 prefers for ``subtag`` (``deu`` -> ``de``, ``iw`` -> ``he``)."""
    from langcodes import Language

    return str(Language.get(subtag).language or subtag)


@functools.cache
def _registry_names() -> dict[str, str]:
    """Language subtag -> its first English description in the IANA registry (read once, ~0.5 s, only for
    a valid code our own table does not name, so that a prompt says "Kanuri" rather than "kr")."""
    from langcodes import registry_parser

    entries = cast(Callable[[], Iterable[dict[str, Any]]], registry_parser.parse_registry)()
    return {str(e["Subtag"]).lower(): str(e["Description"][0]) for e in entries
            if e.get("Type") == "language" and e.get("Description")}


def _known(key: str, declared: Mapping[str, str]) -> bool:
    # The codes this module names are valid tags (tests/data/test_language_codes.py): known without
    # loading the IANA registry (about 0.05 s of a first run's CPU).
    if key in declared or key in _NAMES_LOWER or key in LANGUAGE_NAMES:
        return True
    primary, _, rest = key.partition("-")
    if primary in declared:
        return not rest or _valid_tag(f"und-{rest}")
    return _valid_tag(key)


def _named_codes() -> dict[str, tuple[str, int]]:
    """Codes with an English name: code -> (name, resource class or -1), for suggestions."""
    table = language_table()
    out = {code: (name, -1) for code, name in LANGUAGE_NAMES.items()}
    for code, info in table.items():
        out[code] = (info.name, info.resource_class if info.resource_class is not None else -1)
    return out


def _one_edit(a: str, b: str) -> bool:
    """``a`` and ``b`` differ by one substituted letter or two swapped neighbours."""
    if len(a) != len(b):
        return False
    diff = [i for i, (x, y) in enumerate(zip(a, b)) if x != y]
    return len(diff) == 1 or (len(diff) == 2 and diff[1] == diff[0] + 1 and a[diff[0]] == b[diff[1]]
                              and a[diff[1]] == b[diff[0]])


def _region_language(subtag: str) -> str | None:
    """The language most used in the country ``subtag`` names (``ge`` Georgia -> ``ka``), when CLDR's likely
    subtags name one (they name none for private-use regions such as XX)."""
    from langcodes.data_dicts import LIKELY_SUBTAGS

    if len(subtag) != 2 or not subtag.isalpha():
        return None
    likely = LIKELY_SUBTAGS.get(f"und-{subtag.upper()}")
    return str(likely).split("-")[0] if likely else None


def nearest_codes(subtag: str) -> list[tuple[str, str]]:
    """Up to three named codes a user may have meant by the unknown ``subtag`` (``(code, name)``): a
    country's language (``ge``: Georgia's ``ka``, counted twice), languages whose English name starts with
    it (``ge``: German, Georgian) and codes one letter away (``ge``: ``de``); when some code has two of these
    hints only such codes are given, most hints first, then the better-resourced."""
    sub = subtag.lower()
    named = _named_codes()
    score: dict[str, int] = {}
    region = _region_language(sub)
    if region in named:  # a country's code for its language is the commonest slip (jp, cn, gr, dk, ua, cz)
        score[region] = 2
    for code, (name, _) in named.items():
        hits = int(len(sub) >= 2 and name.lower().startswith(sub)) + int(_one_edit(sub, code))
        if hits:
            score[code] = score.get(code, 0) + hits
    if not score:
        return []
    floor = min(2, max(score.values()))  # two hints agreeing beat any one; else every one-hint code
    ranked = sorted((c for c in score if score[c] >= floor), key=lambda c: (-score[c], -named[c][1], c))
    return [(c, named[c][0]) for c in ranked[:_MAX_SUGGESTIONS]]


class UnknownLanguage(InputError):
    """A language code that is no BCP 47 tag and was not named: says which subtag is unknown, the nearest
    named codes and how to name a code one really means (``flag`` of :meth:`with_flags` turns the API's
    ``language_names`` into the front end's own name)."""

    def __init__(self, shown: str, code: str, *, path: str | None = None, line: int | None = None,
                 field: str | None = None, setting: bool = False) -> None:
        self.shown, self.code = shown, code
        super().__init__(self._reason(lambda name: name), path=path, line=line, field=field, setting=setting)

    def _reason(self, flag: Callable[[str], str]) -> str:
        key = _key(self.code)
        primary = key.partition("-")[0]
        if primary and not _valid_tag(primary) and re.fullmatch(r"[a-z]{2,3}", primary):
            subtag = self.code.strip().replace("_", "-").partition("-")[0]
            found = nearest_codes(primary)
            said = f"unknown language code '{subtag}'"
            if found:
                said += "; did you mean " + ", ".join(f"'{c}' ({n})" for c, n in found) + "?"
        else:
            subtag = self.code.strip()
            said = f"'{subtag}' is not a language tag (BCP 47: a language code, then a script or region)"
        return f"{self.shown}: {said} (to use it anyway, name it: {flag(NAMES_SETTING)} {subtag}=NAME)"

    def with_flags(self, flag: Callable[[str], str]) -> InputError:
        field = flag(self.field) if self.setting and self.field is not None else self.field
        return InputError(self._reason(flag), path=self.path, line=self.line, field=field)


def parse_language_names(given: str | Sequence[str] | Mapping[str, str] | None) -> dict[str, str]:
    """``ge=Georgian-variant,xx=Klingon`` (comma-separated or repeated, or a mapping) as {code: name};
    the code is written as a tag (letters and digits, ``-``/``_`` between), the name is one short line."""
    if not given:
        return {}
    if isinstance(given, Mapping):
        pairs = list(given.items())
    else:
        chunks = [given] if isinstance(given, str) else list(given)
        pairs = []
        for chunk in (c.strip() for part in chunks for c in part.split(",")):
            if chunk:
                code, sep, name = (x.strip() for x in chunk.partition("="))
                if not sep:
                    raise InputError(f"expected CODE=NAME, got '{chunk}'", field=NAMES_SETTING, setting=True)
                pairs.append((code, name))
    out: dict[str, str] = {}
    for code, name in pairs:
        if not isinstance(code, str) or not _TAG.fullmatch(code.strip()):
            raise InputError(f"'{code}' is not written as a language code (letters and digits, '-' or '_' "
                             "between parts)", field=NAMES_SETTING, setting=True)
        if not isinstance(name, str) or not name.strip() or len(name) > 80 or not name.isprintable():
            raise InputError(f"the name of '{code}' must be one line of at most 80 characters",
                             field=NAMES_SETTING, setting=True)
        out[_key(code)] = name.strip()
    return out


def declare_languages(names: Mapping[str, str]) -> None:
    """Have prompts call the codes of ``names`` (from :func:`parse_language_names`) by these names, until the
    next declaration replaces them all: each judging declares its own (none clears them) after checking its
    items, before its prompts are rendered."""
    wanted = {_key(code): name for code, name in names.items()}
    if wanted != _declared:
        _declared.clear()
        _declared.update(wanted)
        language_name.cache_clear()


def check_code(code: str | None, *, shown: str | None = None, declared: Mapping[str, str] = {},
               field: str | None = None, setting: bool = False, path: str | None = None,
               line: int | None = None) -> None:
    """:class:`UnknownLanguage` when ``code`` is neither a BCP 47 tag nor a language's name nor one of
    ``declared`` (a named code, or a named language with a valid script or region); None and blanks pass
    (a missing language is :func:`check_languages`' business). ``shown``: what the message quotes (a pair
    such as ``en-ge``)."""
    if code is None or not str(code).strip():
        return
    if not _known(_key(str(code)), declared):
        raise UnknownLanguage(shown or str(code).strip(), str(code), path=path, line=line, field=field,
                              setting=setting)


def check_item_codes(items: Sequence[Item], declared: Mapping[str, str] = {}) -> None:
    """Every language code of ``items`` is known (:func:`check_code`); the first unknown one raises
    :class:`UnknownLanguage` naming the item's file, line and field. Each distinct code is looked up once."""
    checked: set[str | None] = {None, ""}
    for index, item in enumerate(items):
        src, tgt = item.src_lang, item.tgt_lang
        if src in checked and tgt in checked:
            continue
        for field, code in (("src_lang", src), ("tgt_lang", tgt)):
            if code in checked:
                continue
            if not isinstance(code, str) or not _known(_key(code), declared):
                path, where = _where(item.origin, index + 1)
                line = int(where.split(" ")[1]) if where.startswith("row ") else None
                raise UnknownLanguage(f"{src or '?'}-{tgt or '?'}", str(code), path=path, line=line, field=field)
            checked.add(code)
