"""Where the shared response cache lives: ``--cache``, else ``POLYJUDGE_CACHE``, else the user cache folder.

The platform's user cache folder is found here in a few lines rather than
through a dependency: XDG_CACHE_HOME (or ~/.cache) on Linux and the BSDs,
~/Library/Caches on macOS, %LOCALAPPDATA% on Windows.
"""

from __future__ import annotations

import os
import sys
from pathlib import Path

ENV_VAR = "POLYJUDGE_CACHE"
CACHE_FILE = "responses.sqlite"  # the one database file inside the cache folder


def user_cache_root() -> Path:
    """The folder the platform keeps per-user caches in."""
    home = Path.home()
    if sys.platform == "darwin":
        return home / "Library" / "Caches"
    if os.name == "nt":
        local = os.environ.get("LOCALAPPDATA")
        return Path(local) if local else home / "AppData" / "Local"
    xdg = os.environ.get("XDG_CACHE_HOME")
    # The XDG spec ignores a relative value: it would depend on the directory polyjudge runs in.
    return Path(xdg) if xdg and os.path.isabs(xdg) else home / ".cache"


def default_cache_dir() -> Path:
    """``POLYJUDGE_CACHE`` when set (and not empty), else ``polyjudge`` in the user cache folder."""
    given = os.environ.get(ENV_VAR)
    if given:
        return Path(given).expanduser()
    return user_cache_root() / "polyjudge"


def cache_dir(path: str | Path | None) -> Path:
    """The cache folder a command uses: ``path`` (``--cache``) when given, else :func:`default_cache_dir`."""
    return Path(path).expanduser() if path else default_cache_dir()


def inside(folder: Path, run_dir: Path) -> bool:
    """Whether ``folder`` is ``run_dir`` or lies inside it (links resolved): a run directory is the run's
    alone, so a cache there would make every resume refuse the directory as not polyjudge's."""
    cache, run = folder.expanduser().resolve(), run_dir.expanduser().resolve()
    return cache == run or run in cache.parents


def cache_file(folder: Path) -> Path:
    return folder / CACHE_FILE


__all__ = ["CACHE_FILE", "ENV_VAR", "cache_dir", "cache_file", "default_cache_dir", "inside", "user_cache_root"]
