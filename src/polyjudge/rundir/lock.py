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
from polyjudge.rundir.names import MTME_DIR, RUN_KIND, RUN_OUTPUTS, STORE, STORE_FILES
from polyjudge.rundir.ownership import OwnedDir, check_out_path, claim, read_record

LOCK_FILE = ".polyjudge.lock"


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
        check_out_path(self.path)
        self.path.mkdir(parents=True, exist_ok=True)
        if sys.platform == "win32":  # no flock: the directory is used unguarded
            claim_run_dir(self.path)
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
        try:  # only the holder may look at, and tidy, the directory's files
            claim_run_dir(self.path)
        except BaseException:
            self.release()
            raise

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


def claim_run_dir(path: str | Path) -> OwnedDir:
    """Take ``path`` as a judge run directory (see :func:`ownership.claim`): a folder holding the
    user's files, a store that is not polyjudge's, or a symlinked ``mtme/`` is refused (exit 2)."""
    from polyjudge.rundir.directory import adopt_run_dir  # the reader (and numpy) only when a run is claimed

    owned = claim(path, RUN_KIND, names=(*RUN_OUTPUTS, *STORE_FILES), adopt=adopt_run_dir)
    if (owned.path / MTME_DIR).is_symlink():
        raise InputError("is a symlink; polyjudge does not write through symlinks (remove it or use another "
                         "run directory)", path=str(owned.path / MTME_DIR))
    store = owned.path / STORE
    if not owned.owns(STORE) and not store.exists():
        owned.record(STORE_FILES)  # SQLite creates these itself: recorded before it does
    return owned


def clear_run(path: str | Path) -> list[str]:
    """Remove a run's outputs and its store (``--restart``): only files polyjudge recorded as
    its own; the user's files (also in ``mtme/``) stay.

    Call it only while holding the directory's :class:`RunDirLock`. Returns the
    names removed.
    """
    root = Path(path)
    owned = read_record(root) or claim_run_dir(root)
    removed = []
    for name in sorted(owned.files):
        if owned.remove(name):
            removed.append(name)
    owned.forget([n for n in owned.files if n not in STORE_FILES])
    owned.record(STORE_FILES)  # the store is created again at once
    mtme = root / MTME_DIR
    if mtme.is_dir() and not mtme.is_symlink() and not any(mtme.iterdir()):
        mtme.rmdir()
    return removed


__all__ = ["LOCK_FILE", "RunDirInUse", "RunDirLock", "claim_run_dir", "clear_run"]
