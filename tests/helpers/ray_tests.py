"""What the Ray executor's tests share: whether Ray is here, a local cluster per module, items
that make two systems and documents of four, and a scripted server quiet about reset connections."""

from __future__ import annotations

import importlib.util
import logging
from collections.abc import Iterator
from typing import Any

import pytest

from polyjudge.data.records import Item
from tests.helpers.extras import needs_extra, skip_reason
from tests.helpers.openai_server import ScriptedServer

HAVE_RAY = importlib.util.find_spec("ray") is not None
needs_ray = needs_extra("ray")  # skips without Ray, naming the extra (tests/helpers/extras.py)


def local_cluster() -> Iterator[Any]:
    """A local Ray cluster of 2 CPUs for a module's tests (use as a module-scoped fixture body)."""
    if not HAVE_RAY:
        pytest.skip(skip_reason("ray") or "")
    import ray

    ray.init(num_cpus=2, include_dashboard=False, logging_level=logging.WARNING)
    yield ray
    ray.shutdown()


def two_system_items(n: int) -> list[Item]:
    """``n`` items, systems A and B in turn, four segments to a document."""
    return [Item(src=f"source {i}", tgt=f"{'AB'[i % 2]} translation {i}", src_lang="en", tgt_lang="de",
                 doc_id=f"d{i // 4}", seg_id=str(i), system="AB"[i % 2]) for i in range(n)]


def quiet_server(responder: Any, **kw: Any) -> ScriptedServer:
    """The scripted server, quiet about connections reset by actors that are stopped or removed."""
    srv = ScriptedServer(responder, **kw)
    srv._httpd.handle_error = lambda request, address: None  # noqa: SLF001
    return srv
