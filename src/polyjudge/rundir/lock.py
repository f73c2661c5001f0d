"""One judging process per run directory, and starting a run directory over.

Two processes judging into one directory would both send every request (paid
twice) and overwrite each other's files. :class:`RunDirLock` takes an
exclusive ``flock`` on a file inside the directory that holds the owner's pid.
The kernel drops the lock when its process ends, however it ends, so the file
left behind by a killed run never blocks the next one.
"""

from __future__ import annotations

import os
import sys
from pathlib import Path
from types import TracebackType

from polyjudge.data.errors import InputError
from polyjudge.rundir.directory import (
    ITEMS,
    JUDGMENTS,
    MANIFEST,
    MTME_DIR,
    OPTIONAL_OUTPUTS,
    SEGMENTS,
    STORE,
    SYSTEMS,
)

LOCK_FILE = ".polyjudge.lock"
# Every file a judging run writes; --restart removes these and nothing else.
RUN_OUTPUTS = (MANIFEST, JUDGMENTS, ITEMS, SEGMENTS, SYSTEMS, *OPTIONAL_OUTPUTS)
STORE_FILES = (STORE, STORE + "-wal", STORE + "-shm", STORE + "-journal")


class RunDirInUse(InputError):
    """Another process holds the run directory (the CLI exits 2, nothing is sent)."""

    def __init__(self, path: str | Path, pid: int | None) -> None:
        holder = f"process {pid}" if pid is not None else "another process"
        super().__init__(f"{path} is in use by {holder}; wait for it to finish or use another run directory")
        self.path, self.pid = str(path), pid


def _holder_pid(fd: int) -> int | None:
    try:
        text = os.pread(fd, 32, 0).decode("ascii", "replace").strip()
    except OSError:
        return None
    return int(text) if text.isdigit() else None


class RunDirLock:
    """``with RunDirLock(path):`` creates ``path`` if needed and holds it exclusively.

    Raises :class:`RunDirInUse` at once (never waits) when another process holds it.
    The lock file is removed on release.
    """

    def __init__(self, path: str | Path) -> None:
        self.path = Path(path)
        self._fd: int | None = None

    @property
    def lock_path(self) -> Path:
        return self.path / LOCK_FILE

    def acquire(self) -> None:
        if self._fd is not None:
            return
        if self.path.exists() and not self.path.is_dir():
            raise InputError("is not a directory; a run directory is needed here", path=str(self.path))
        self.path.mkdir(parents=True, exist_ok=True)
        if sys.platform == "win32":  # no flock: the directory is used unguarded
            return
        import fcntl

        while True:
            fd = os.open(self.lock_path, os.O_RDWR | os.O_CREAT, 0o644)
            try:
                fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
            except OSError:
                pid = _holder_pid(fd)
                os.close(fd)
                raise RunDirInUse(self.path, pid) from None
            # The previous holder removes the file on release: if it did so between our
            # open and flock, we hold a lock on a file nobody else sees; open it again.
            try:
                same = os.stat(self.lock_path).st_ino == os.fstat(fd).st_ino
            except FileNotFoundError:
                same = False
            if same:
                break
            os.close(fd)
        os.ftruncate(fd, 0)
        os.pwrite(fd, f"{os.getpid()}\n".encode("ascii"), 0)
        self._fd = fd

    def release(self) -> None:
        fd, self._fd = self._fd, None
        if fd is None:
            return
        import fcntl

        try:
            self.lock_path.unlink(missing_ok=True)  # still held: nobody else can be using it
        finally:
            fcntl.flock(fd, fcntl.LOCK_UN)
            os.close(fd)

    def __enter__(self) -> RunDirLock:
        self.acquire()
        return self

    def __exit__(self, exc_type: type[BaseException] | None, exc: BaseException | None,
                 tb: TracebackType | None) -> None:
        self.release()


def clear_run(path: str | Path) -> list[str]:
    """Remove a run's outputs and its store (``--restart``); other files stay.

    Call it only while holding the directory's :class:`RunDirLock`. Returns the
    names removed.
    """
    root = Path(path)
    removed = []
    for name in (*RUN_OUTPUTS, *STORE_FILES):
        for candidate in (root / name, root / (name + ".tmp")):
            if candidate.is_file():
                candidate.unlink()
                removed.append(candidate.name)
    mtme = root / MTME_DIR
    if mtme.is_dir():
        for p in mtme.glob("*.score*"):
            p.unlink()
            removed.append(f"{MTME_DIR}/{p.name}")
        if not any(mtme.iterdir()):
            mtme.rmdir()
    return removed


__all__ = ["LOCK_FILE", "RunDirInUse", "RunDirLock", "clear_run"]
