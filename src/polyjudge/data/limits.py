"""The default judge and the bounds of the numeric judging settings, in one light module.

The specs that check the settings (``backends.spec``, ``engine.spec``) and the command line's flag
types (shown by ``--help``) read them from here, so printing a command's help needs no engine.
Concurrency and per-request samples are capped because more only buys retries (-c 100000 against
one server took 111 s and 156 retries where -c 16 took 1.3 s); seeds fit the signed 32-bit field
every backend accepts, for the last run too (run r sends seed + r).
"""

from __future__ import annotations

DEFAULT_JUDGE = "llamacpp"
MAX_TIMEOUT_S = 86_400.0
MAX_N_CTX = 2**24
MAX_CONCURRENCY = 1_024
MAX_TEMPERATURE = 2.0
MAX_SEED = 2**31 - 1
MAX_RUNS = 1_000
MAX_SAMPLES_PER_REQUEST = 128
MAX_UNIT_TOKENS = 2**20  # --unit-max-tokens: a part of a document larger than any context window
MAX_RAY_RESOURCES = 1_024.0
MAX_ITEMS_PER_ROUND = 10_000_000  # --settle-round: more segments than any test set has

__all__ = ["DEFAULT_JUDGE", "MAX_CONCURRENCY", "MAX_ITEMS_PER_ROUND", "MAX_N_CTX", "MAX_RAY_RESOURCES", "MAX_RUNS",
           "MAX_SAMPLES_PER_REQUEST",
           "MAX_SEED", "MAX_TEMPERATURE", "MAX_TIMEOUT_S"]
