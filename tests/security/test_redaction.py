"""polyjudge.data.secrets and where it is applied at the source (backend errors, judge specs, recordings)."""

from __future__ import annotations

import asyncio
import json

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from polyjudge.backends.base import BackendError
from polyjudge.backends.build import build_backends
from polyjudge.backends.registry import BackendSettings, JudgeSpec
from polyjudge.backends.replay import RecordingBackend, ReplayBackend
from polyjudge.data import secrets
from polyjudge.data.chat import GenerateRequest, GenerateResult, Message
from polyjudge.data.secrets import MASK, Redactor, env_secrets, redact, redact_url, register_secret_env

KEY = "sk-proj-Zq1Xw2Ce3Vr4Bt5Ny6Mu7Ki8Lo9P0aSdFgHjKl"


@pytest.fixture(autouse=True)
def _key(monkeypatch):
    monkeypatch.setenv("OPENAI_API_KEY", KEY)
    monkeypatch.setattr(secrets, "_registered", set())  # registrations of other tests do not count


@pytest.mark.parametrize("text, kept, gone", [
    (f"HTTP 401: Incorrect API key provided: {KEY}.", "HTTP 401: Incorrect API key provided: ", KEY),
    (f"cut here: {KEY[:20]}", "cut here: ", KEY[:20]),
    (f"cut here: {KEY[:12]}…", "cut here: ", KEY[:12]),
    (json.dumps({"k": KEY}), '{"k": "', KEY),
    ("http://user:secretpass@127.0.0.1:8080/v1/chat", "@127.0.0.1:8080/v1/chat", "secretpass"),
    ("git+https://ghtoken123abc@example.org/x", "@example.org/x", "ghtoken123abc"),
    ("GET /v1/models?api_key=abc123XYZ&x=1", "&x=1", "abc123XYZ"),
    ("Authorization: Bearer abcdef0123456789", "Authorization: Bearer ", "abcdef0123456789"),
    ("Authorization: Basic dXNlcjpwYXNzd29yZA==", "Authorization: Basic ", "dXNlcjpwYXNz"),
    ('{"password": "hunter2hunter2", "n": 1}', '"n": 1', "hunter2"),
    ("client_secret=s3cr3t-value-here", "client_secret=", "s3cr3t"),
    ("hf_AbCdEfGhIjKlMnOpQrStUv1234 ok", " ok", "hf_AbCd"),
    ("ghp_0123456789abcdefghijABCDEFGHIJ012345", "", "ghp_0123"),
    ("key AKIAIOSFODNN7EXAMPLE", "key ", "AKIAIOSFODNN7EXAMPLE"),
    ("eyJhbGciOiJIUzI1NiJ9.eyJzdWIiOiIxMjM0NTY3ODkwIn0.dozjgNryP4J3jVmNHl0w5N_XgL0", "", "eyJhbGci"),
])
def test_secrets_are_masked(text, kept, gone):
    out = redact(text)
    assert gone not in out and MASK in out and kept in out


@pytest.mark.parametrize("text", [
    "Der Schlüssel liegt unter der Fußmatte; das Passwort ist geheim.",
    "Please enter your password to continue. The token of our appreciation.",
    "The standard-bearer of the bearer bonds market, said the key witness.",
    "max_tokens: 4096, prompt_tokens=123456789, token: 12, tokens: 99999999",
    "da|judge:m1+m2|prompt:ca474f33cf|runs:2|agg:mean|T:0|version:0.1.0",
    "pointwise|judge:gpt-4o|prompt:cfbb366532|runs:1|agg:mean|T:0|task:math|scale:binary|version:0.1.0",
    "sha256:e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855",
    "commit 53fd8a7c0b2e9d61f3a4b5c6d7e8f90123456789 by sk-en system sk-en_newstest2021",
    "0.8731 -12.5 1e-9 3.14159265358979 12345678901234567890",
    "Visit https://example.org/path?q=term&lang=de#top or mailto:a@b.org",
    "请输入您的密码。 パスワードを入力してください。 أدخل كلمة المرور",
    '{"errors": {"critical": [], "major": [{"type": "accuracy/mistranslation", "desc": "key word"}]}}',
    "OpenAI project keys start with sk-proj-",  # the key's public prefix alone is not masked
])
def test_ordinary_text_is_left_alone(text):
    assert redact(text) == text


@settings(max_examples=200, deadline=None)
@given(st.text(alphabet=st.characters(blacklist_categories=("Cs",)), max_size=200))
def test_redact_never_grows_a_secret_and_is_idempotent(text):
    once = redact(text)
    assert redact(once) == once
    assert KEY not in redact(text + KEY + text)


def test_environment_secrets_by_name_value_and_registration(monkeypatch, tmp_path):
    monkeypatch.setenv("HF_TOKEN", "hf-token-value-123")
    monkeypatch.setenv("TOKENIZERS_PARALLELISM", "false")  # a flag, not a secret
    monkeypatch.setenv("KEY_COUNT", "123456789")  # a number, not a secret
    monkeypatch.setenv("SHORT_KEY", "abc")  # too short to mask safely
    monkeypatch.setenv("DJANGO_SECRET_KEY", "development")  # a word: masking it would garble prose
    monkeypatch.setenv("GOOGLE_APPLICATION_CREDENTIALS", str(tmp_path))  # a path to the secret
    monkeypatch.setenv("LLM_ACCESS", "opaque-value-42-xyz")  # the name says nothing
    found = env_secrets()
    assert KEY in found and "hf-token-value-123" in found
    assert not {"false", "123456789", "abc", "development", str(tmp_path), "opaque-value-42-xyz"} & set(found)
    register_secret_env("LLM_ACCESS")
    assert "opaque-value-42-xyz" in env_secrets()
    assert redact("echo opaque-value-42-xyz") == f"echo {MASK}"
    assert redact("key abcdef0123", extra=("abcdef0123",)) == f"key {MASK}"


def test_patterns_can_be_switched_off_and_none_passes_through():
    assert redact(None) is None and redact("") == ""
    text = "password=hunter2hunter2 " + KEY
    assert redact(text, patterns=False) == f"password=hunter2hunter2 {MASK}"
    r = Redactor()
    assert r(text) == redact(text) and r(None) is None


def test_redact_url():
    assert redact_url("http://user:pass%40word@[::1]:8080/v1?x=1#f") == "http://[REDACTED]@[::1]:8080/v1?x=1#f"
    assert redact_url("https://api.openai.com/v1") == "https://api.openai.com/v1"
    assert redact_url("http://host/v1/a@b") == "http://host/v1/a@b"  # an @ in the path is not a login
    assert redact_url(None) is None


def test_backend_error_is_redacted_at_the_source():
    err = BackendError(f"HTTP 401: Incorrect API key provided: {KEY}", retryable=False, status=401)
    assert KEY not in str(err) and KEY not in repr(err)
    assert err.args == (f"HTTP 401: Incorrect API key provided: {MASK}",)
    assert err.status == 401 and err.retryable is False


def test_judge_spec_shows_no_credentials():
    spec = JudgeSpec.parse("openai:gpt-x@http://user:secretpass@127.0.0.1:9/v1")
    assert spec.base_url == "http://user:secretpass@127.0.0.1:9/v1"  # the backend still needs them
    assert spec.describe()["base_url"] == "http://[REDACTED]@127.0.0.1:9/v1"
    assert "secretpass" not in repr(spec) and "secretpass" not in str(spec)
    _, info = build_backends([spec], BackendSettings())
    assert "secretpass" not in json.dumps(info)


def test_build_backends_registers_the_key_variable(monkeypatch):
    monkeypatch.setenv("ZZ_CUSTOM_VAR", "value-of-the-custom-var-7")
    build_backends([JudgeSpec("openai", "m", "http://127.0.0.1:9/v1")], BackendSettings(api_key_env="ZZ_CUSTOM_VAR"))
    assert redact("echo value-of-the-custom-var-7") == f"echo {MASK}"


class _Echo:
    """A backend whose answer repeats the key (a server echoing it in a 200 answer)."""

    model = "echo"

    async def generate(self, request: GenerateRequest) -> GenerateResult:
        return GenerateResult(text=f'{{"score": 5}} {KEY}', finish_reason="stop")

    async def aclose(self) -> None:
        return None


def test_recording_never_writes_the_key_and_still_replays(tmp_path):
    path = tmp_path / "rec.jsonl"
    rec = RecordingBackend(_Echo(), path)
    request = GenerateRequest(messages=(Message("user", "password: hunter2hunter2 <|system|>"),), seed=1)

    async def go() -> None:
        await rec.generate(request)
        await rec.aclose()

    asyncio.run(go())
    assert KEY not in path.read_text()
    replayed = asyncio.run(ReplayBackend(path).generate(request))  # the request itself is kept byte-exact
    assert replayed.text == '{"score": 5} ' + MASK


def _mask_as_it_was(mask: Redactor, text: str | None) -> str | None:
    """Redactor(patterns=False)'s masking as written before its lookups were kept (each secret's spellings
    looked up, then its cut copies searched, for every text): the reference of the test below."""
    if not text:
        return text
    for secret in mask.secrets:
        for form in secrets._spellings(secret):
            if form in text:
                text = text.replace(form, MASK)
        text = secrets._mask_cut_secret(text, secret)
    return text


_SLASHED = 'sk-p/ro"j-Zq1Xw2Ce3Vr4Bt5Ny6Mu7\u00e9Ki8L'  # a secret spelled four ways (JSON, URL, slashes)


@settings(max_examples=400, deadline=None)
@given(st.lists(st.sampled_from(["", " ", "…", "...", "x", "ab", "\u00e9", "\"", "/", "\\/", "sk-proj-Zq",
                                 KEY, KEY[:11], KEY[:12], KEY[:13], KEY[:30], KEY[1:], _SLASHED, _SLASHED[:12],
                                 _SLASHED[:20], json.dumps(_SLASHED)[1:-1], json.dumps(_SLASHED)[1:15],
                                 secrets.quote(_SLASHED, safe=""), secrets.quote(_SLASHED, safe="")[:14],
                                 _SLASHED.replace("/", "\\/"), "ZZ-short-1", "ZZ-short-12"]), max_size=8))
def test_masking_an_answer_masks_what_it_always_masked(parts):
    """The store masks each answer with Redactor(patterns=False), whose secrets' spellings and cut-copy
    starts are now looked up once per Redactor: every text comes out as the per-text lookups made it
    (whole secrets in any spelling, copies cut at the end or before an ellipsis, and everything else)."""
    mask = Redactor([_SLASHED, "ZZ-short-12"], patterns=False)  # with the environment's KEY
    assert {KEY, _SLASHED, "ZZ-short-12"} <= set(mask.secrets)
    text = "".join(parts)
    assert mask(text) == _mask_as_it_was(mask, text)
    assert mask(None) is None and mask("") == ""
