"""Language codes -> English names (for prompts) and language metadata (for analyses).

Judges read "German" more reliably than "de", and WMT data carries codes
(``en``, ``de``, ``zh``, sometimes with a region or script: ``pt-BR``,
``zh_Hant``). Names are English because the prompts are written in English.
"""

from __future__ import annotations

import functools
import re
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from importlib import resources

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
    if key in _VARIANTS:
        return _VARIANTS[key]
    base = re.split(r"-", key, maxsplit=1)[0]
    if base in LANGUAGE_NAMES:
        return LANGUAGE_NAMES[base]
    if key in _NAMES_LOWER:
        return _NAMES_LOWER[key]
    return raw


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


__all__ = ["LANGUAGE_NAMES", "LanguageInfo", "language_code", "language_info", "language_name", "language_table",
           "parse_language_table"]


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


def check_languages(items: Sequence[Item], missing: Callable[[Item], Sequence[str]]) -> None:
    """Refuse items a protocol would prompt without a language: ``missing(item)`` names the language
    fields the item lacks for that protocol (none when it needs none). Raises
    :class:`MissingLanguages` for the first file with such items. An item with both languages has
    all a prompt can name, so ``missing`` is only asked about the others (a million items: ~0.1 s)."""
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
