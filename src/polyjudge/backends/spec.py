"""The judges group of a judging's specification: who judges, and the settings every judge shares.

Judges are :class:`~polyjudge.backends.registry.JudgeSpec` objects, parsed once (the command
line's ``--judge`` type returns them; a spec given as text in Python is parsed here, once).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from polyjudge.backends.registry import BackendSettings, JudgeSpec
from polyjudge.data.errors import InputError
from polyjudge.data.limits import DEFAULT_JUDGE, MAX_CONCURRENCY, MAX_N_CTX, MAX_TIMEOUT_S
from polyjudge.data.settings import default
from polyjudge.data.shapes import check_range, normalise_fields


def parse_judge(text: str | JudgeSpec) -> JudgeSpec:
    """``text`` (``openai:MODEL@URL``, ...) as a JudgeSpec; an unknown backend or a bad option is an
    InputError naming the ``judges`` field."""
    if isinstance(text, JudgeSpec):
        return text
    try:
        return JudgeSpec.parse(text)
    except ValueError as exc:  # unknown backend or incomplete spec
        raise InputError(str(exc), field="judge") from None


def parse_judges(texts: Sequence[str | JudgeSpec]) -> tuple[JudgeSpec, ...]:
    return tuple(parse_judge(t) for t in texts)


@dataclass(frozen=True, slots=True)
class PanelSpec:
    """The judges group of a judging (``JudgingSpec.judges``; ``JudgesSpec`` before 0.3): ``judges``
    (several make a panel; text is parsed once, here) and what they share: the key's environment
    variable (its name only: the key is never kept), the per-request ``timeout``, an embedded model's
    ``n_ctx``, the ``reasoning_effort`` of reasoning models and the requests in flight per server of a
    pooled judge (``per_server_concurrency``; a judge's ``per_server=`` wins)."""

    judges: tuple[JudgeSpec, ...] = tuple(JudgeSpec(j) for j in default("judges"))
    api_key_env: str = default("api_key_env")
    timeout: float = default("timeout")
    n_ctx: int = default("n_ctx")
    reasoning_effort: str | None = default("reasoning_effort")
    per_server_concurrency: int | None = default("per_server_concurrency")

    def __post_init__(self) -> None:
        normalise_fields(self)
        check_range("timeout", self.timeout, 0.0, MAX_TIMEOUT_S, low_open=True)
        check_range("n_ctx", self.n_ctx, 1, MAX_N_CTX, whole=True)
        check_range("per_server_concurrency", self.per_server_concurrency, 1, MAX_CONCURRENCY, whole=True)
        if not self.judges:
            raise InputError("no judge given", field="judge")
        object.__setattr__(self, "judges", parse_judges(self.judges))

    def settings(self) -> BackendSettings:
        """What every backend of the panel is built with."""
        return BackendSettings(api_key_env=self.api_key_env, timeout=self.timeout, n_ctx=self.n_ctx,
                               reasoning_effort=self.reasoning_effort, max_per_server=self.per_server_concurrency)

    @property
    def is_default(self) -> bool:
        """The embedded judge alone, as given by default."""
        return self.judges == (JudgeSpec(DEFAULT_JUDGE),)

    def names(self) -> tuple[str, ...]:
        """Each judge as the user would write it (credentials in URLs masked)."""
        return tuple(describe_judge(j) for j in self.judges)


def describe_judge(spec: JudgeSpec, *, mask: bool = True) -> str:
    """``BACKEND[:MODEL][?OPTIONS][@URL]`` of ``spec`` with credentials masked (for messages and the manifest);
    ``mask=False`` gives the text as written (``--print-spec`` masks, and warns, itself)."""
    from polyjudge.backends.registry import redact_servers

    text = spec.backend + (f":{spec.model}" if spec.model else "")
    if spec.options:
        text += "?" + "&".join(f"{k}={v}" for k, v in spec.options)
    if spec.base_url:
        text += f"@{redact_servers(spec.base_url) if mask else spec.base_url}"
    return text


# Deprecated: the name of 0.2, one letter away from JudgeSpec (one judge); kept for one release.
JudgesSpec = PanelSpec

__all__ = ["DEFAULT_JUDGE", "JudgesSpec", "PanelSpec", "describe_judge", "parse_judge", "parse_judges"]
