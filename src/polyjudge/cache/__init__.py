"""One response cache for the machine, shared by every run directory (see :mod:`.store`).

A run looks here for the answers its own store lacks before sending, and
keeps here every answer it receives; ``polyjudge cache stats|prune|clear``
keeps it bounded. The engine does both through :mod:`polyjudge.engine.caching`.
"""

from polyjudge.cache.location import ENV_VAR, cache_dir, default_cache_dir
from polyjudge.cache.prune import PruneResult, parse_size, prune
from polyjudge.cache.store import APPLICATION_ID, CachedAnswer, CacheStats, CacheUnavailable, ModelCount, ResponseCache

__all__ = ["APPLICATION_ID", "ENV_VAR", "CacheStats", "CacheUnavailable", "CachedAnswer", "ModelCount",
           "PruneResult", "ResponseCache", "cache_dir", "default_cache_dir", "parse_size", "prune"]
