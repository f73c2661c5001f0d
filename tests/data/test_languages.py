"""Language code -> name mapping used in prompts."""

from polyjudge.data.languages import language_code, language_name


def test_language_names():
    assert language_name("de") == "German"
    assert language_name("ZH") == "Chinese"
    assert language_name("zh_Hant") == "Traditional Chinese"
    assert language_name("pt-BR") == "Brazilian Portuguese"
    assert language_name("de-CH") == "German"  # unknown region: base language
    assert language_name("German") == "German"  # already a name
    assert language_name("xx") == "xx"  # unknown codes pass through
    assert language_name(None) is None and language_name(" ") is None
    assert language_code("Japanese") == "ja" and language_code("en") == "en" and language_code("Klingon") is None
