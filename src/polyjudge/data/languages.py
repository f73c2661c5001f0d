"""Language codes -> English names, for prompts.

Judges read "German" more reliably than "de", and WMT data carries codes
(``en``, ``de``, ``zh``, sometimes with a region or script: ``pt-BR``,
``zh_Hant``). Names are English because the prompts are written in English.
"""

from __future__ import annotations

import re

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


__all__ = ["LANGUAGE_NAMES", "language_code", "language_name"]
