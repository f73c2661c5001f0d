"""Which files of an output folder are polyjudge's, so nothing else is ever replaced or deleted.

An output folder (a judge run directory, a ``human-mqm`` table folder, a study's
folder) may sit beside the user's own files or be pointed, by mistake, at a
folder full of them. polyjudge therefore keeps a small record in the folder,
``.polyjudge-owned.json``: the folder's kind and every file polyjudge created
there. A name is recorded *before* its file is first written, so a run killed
between the two never leaves a file of its own that a later run would take for
the user's. Only recorded files are ever replaced or deleted (``--restart``
included).

A folder is taken (:func:`claim`) only when it is new, empty, already recorded
as the same kind, or (folders written before the record existed) recognised
as a polyjudge folder of that kind by its contents; anything else is refused
with exit 2 naming one file that is not polyjudge's. Symlinks are never
written through: a symlinked file or sub-folder where polyjudge would write is
refused.
"""

from __future__ import annotations

import json
import os
import re
import sqlite3
import tempfile
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from pathlib import Path

from polyjudge.data.errors import InputError

OWNED_RECORD = ".polyjudge-owned.json"
# Files polyjudge keeps in any folder it owns, never counted as the user's.
_BOOKKEEPING = (OWNED_RECORD, ".polyjudge.lock")
# Temporary files of polyjudge's atomic writes: ".NAME-RANDOM.tmp" (this version), "NAME.tmp"
# (earlier versions, recognised only for names polyjudge writes) and the judgment spool.
_TEMP = re.compile(r"^\.(?P<name>.+)-[A-Za-z0-9_]{6,}\.tmp$")
_SPOOL = re.compile(r"^\.judgments-[A-Za-z0-9_]+\.tmp$")

Adopter = Callable[[Path], "set[str] | None"]


def check_out_path(path: str | Path, flag: str = "-o/--out") -> Path:
    """An output path that can be written: not empty, not a dangling symlink, not
    through a file, not an existing non-folder (InputError, exit 2, otherwise)."""
    text = os.fspath(path)
    if text == "":
        raise InputError("is empty (an unset shell variable?); give a path", field=flag)
    p = Path(text)
    if p.is_symlink() and not p.exists():
        raise InputError("is a dangling symlink; give a folder that exists or a new path", path=text, field=flag)
    for parent in reversed(p.absolute().parents):
        if parent.is_symlink() and not parent.exists():
            raise InputError(f"goes through {parent}, a dangling symlink", path=text, field=flag)
        if parent.exists() and not parent.is_dir():
            raise InputError(f"goes through {parent}, which is a file, not a folder", path=text, field=flag)
    if p.exists() and not p.is_dir():
        raise InputError("is not a directory; a folder is needed here", path=text, field=flag)
    return p


@dataclass
class OwnedDir:
    """A folder polyjudge owns, and the files in it that are polyjudge's."""

    path: Path
    kind: str
    files: set[str] = field(default_factory=set)

    def owns(self, name: str) -> bool:
        return name in self.files

    def record(self, names: Iterable[str]) -> None:
        """Record ``names`` as polyjudge's before they are written (write-ahead)."""
        new = set(names) - self.files
        if new:
            self.files |= new
            self._save()

    def forget(self, names: Iterable[str]) -> None:
        gone = self.files & set(names)
        if gone:
            self.files -= gone
            self._save()

    def check_writable(self, name: str) -> Path:
        """The path of ``name`` once it is safe to write: a file that is not polyjudge's, or any
        symlink, is refused (InputError naming it); nothing is written through a symlink."""
        target = self.path / name
        for part in [*reversed(Path(name).parents)][1:]:
            if (self.path / part).is_symlink():
                raise InputError("is a symlink; polyjudge does not write through symlinks (remove it or use "
                                 "another folder)", path=str(self.path / part))
        if target.is_symlink():
            raise InputError("is a symlink; polyjudge does not write through symlinks (remove it or use "
                             "another folder)", path=str(target))
        if target.exists() and name not in self.files:
            raise InputError(f"is not polyjudge's file and would be overwritten; move it out of the {self.kind} "
                             "folder or use another folder", path=str(target))
        return target

    def remove(self, name: str) -> bool:
        """Delete ``name`` if it is polyjudge's (never a symlink); True when removed."""
        target = self.path / name
        if name not in self.files or target.is_symlink() or not target.is_file():
            return False
        target.unlink()
        return True

    def write_text(self, name: str, text: str) -> Path:
        """Write one owned file atomically (recorded first; a foreign file of that name is refused)."""
        target = self.check_writable(name)
        self.record([name])
        atomic_write(target, [text])
        return target

    def _save(self) -> None:
        body = json.dumps({"kind": self.kind, "files": sorted(self.files)}, indent=1) + "\n"
        atomic_write(self.path / OWNED_RECORD, [body])


# Bytes an output file gathers before each write to the disk (files of hundreds of MB: fewer system calls).
WRITE_BUFFER = 1 << 20


def atomic_write(path: Path, chunks: Iterable[str]) -> None:
    """Write ``path`` through a fresh temporary file beside it (created exclusively, so never a
    symlink followed) and rename it into place; an interrupted write leaves only the temporary
    file, which the next claim of the folder removes. A missing folder (and its missing parents) is
    created, as a run directory's is; an error names ``path``, never the temporary file."""
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        fd, tmp = tempfile.mkstemp(prefix=f".{path.name}-", suffix=".tmp", dir=path.parent)
    except OSError as exc:
        raise type(exc)(exc.errno, exc.strerror, str(path)) from None
    try:
        os.chmod(tmp, 0o666 & ~_umask())
        with os.fdopen(fd, "w", encoding="utf-8", newline="\n", buffering=WRITE_BUFFER) as fh:
            for chunk in chunks:
                fh.write(chunk)
        os.replace(tmp, path)
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise


def _umask() -> int:
    mask = os.umask(0o022)
    os.umask(mask)
    return mask


def read_record(path: Path) -> OwnedDir | None:
    """The folder's ownership record, or None when it has none (InputError when damaged)."""
    rec = path / OWNED_RECORD
    if rec.is_symlink():
        raise InputError("is a symlink, not polyjudge's record", path=str(rec))
    if not rec.is_file():
        return None
    try:
        data = json.loads(rec.read_text(encoding="utf-8"))
        kind, files = data["kind"], data["files"]
        if not isinstance(kind, str) or not all(isinstance(f, str) for f in files):
            raise TypeError
    except (ValueError, KeyError, TypeError):
        raise InputError("damaged polyjudge ownership record; delete the folder's polyjudge files and it, "
                         "or use another folder", path=str(rec)) from None
    return OwnedDir(path, kind, set(files))


def claim(path: str | Path, kind: str, *, names: Iterable[str] = (), adopt: Adopter | None = None,
          flag: str = "-o/--out", tidy: bool = True) -> OwnedDir:
    """Take ``path`` as a ``kind`` folder (created if new) and return what polyjudge owns there.

    ``names`` are the fixed file names the command writes: one that exists but is not
    polyjudge's, or is a symlink, is refused now, before anything is computed. ``adopt``
    recognises a folder written before the record existed and returns the files that are
    polyjudge's (None: not such a folder). With ``tidy``, leftover temporary files of
    polyjudge's own interrupted writes are removed (only a caller that holds the folder alone
    may tidy: another process's temporary files are live).
    """
    root = check_out_path(path, flag)
    root.mkdir(parents=True, exist_ok=True)
    owned = read_record(root)
    if owned is not None and owned.kind != kind:
        raise InputError(f"holds a polyjudge {owned.kind} folder, not a {kind} one; use another folder",
                         path=str(root / OWNED_RECORD))
    if owned is None:
        owned = _first_claim(root, kind, adopt)
    for name in names:
        owned.check_writable(name)
    if tidy:
        remove_leftovers(owned, names)
    return owned


def claim_study(path: str | Path, kind: str, names: Iterable[str], marker: str, *, create: bool = False) -> OwnedDir:
    """Take a study's output folder (its tables ``names``, its run directories in sub-folders):
    new, empty, recorded as ``kind``, or an earlier version's study folder, recognised by its
    ``marker`` file; a folder of the user's files or of another kind is refused (exit 2)."""
    wanted = tuple(names)
    if not create and not Path(path).exists():
        # A new folder is left for the study to create once its input is known to be good (a refused
        # input leaves nothing behind); its next run adopts it by its marker.
        check_out_path(path)
        return OwnedDir(Path(path), kind, set(wanted))

    def adopt(root: Path) -> set[str] | None:
        if not (root / marker).is_file() or (root / marker).is_symlink():
            return None
        return {n for n in wanted if (root / n).is_file() and not (root / n).is_symlink()}

    owned = claim(path, kind, names=wanted, adopt=adopt)
    owned.record(wanted)  # written by the study after its runs: recorded before, as every owned file
    return owned


def _first_claim(root: Path, kind: str, adopt: Adopter | None) -> OwnedDir:
    """An unrecorded folder: empty (new), or recognised by ``adopt``; anything else is the user's."""
    entries = sorted(p.name for p in root.iterdir() if p.name not in _BOOKKEEPING and not _is_leftover(p.name))
    files: set[str] = set()
    if entries:
        found = adopt(root) if adopt is not None else None
        if found is None:
            raise InputError(f"is not empty and not a polyjudge {kind} folder (it holds {entries[0]!r}); "
                             "polyjudge writes only into a new or empty folder or one of its own",
                             path=str(root))
        files = found
    owned = OwnedDir(root, kind, files)
    owned._save()
    return owned


def _is_leftover(name: str) -> bool:
    return bool(_SPOOL.match(name) or _TEMP.match(name))


def remove_leftovers(owned: OwnedDir, names: Iterable[str] = ()) -> list[str]:
    """Delete temporary files an interrupted write of polyjudge left (its own patterns only:
    ``.NAME-RANDOM.tmp`` and ``NAME.tmp`` of a file polyjudge writes, and the judgment spool)."""
    known = owned.files | set(names)
    removed = []
    for sub in {"", *(str(Path(n).parent) for n in known if Path(n).parent != Path("."))}:
        folder = owned.path / sub if sub else owned.path
        if folder.is_symlink() or not folder.is_dir():
            continue
        for p in folder.iterdir():
            rel = f"{sub}/{p.name}" if sub else p.name
            m = _TEMP.match(p.name)
            ours = (_SPOOL.match(p.name) and not sub) or (m and (f"{sub}/{m['name']}" if sub else m["name"]) in known)
            ours = ours or (rel.endswith(".tmp") and rel[:-4] in known)
            if ours and not p.is_symlink() and p.is_file():
                p.unlink()
                removed.append(rel)
    return removed


def is_polyjudge_store(path: Path) -> bool:
    """True when ``path`` is a SQLite file with polyjudge's resume tables (opened read-only)."""
    if path.is_symlink() or not path.is_file():
        return False
    try:
        con = sqlite3.connect(f"{path.absolute().as_uri()}?mode=ro", uri=True)
        try:
            tables = {r[0] for r in con.execute("SELECT name FROM sqlite_master WHERE type='table'")}
        finally:
            con.close()
    except sqlite3.Error:
        return False
    return {"responses", "prompts", "meta"} <= tables


__all__ = ["OWNED_RECORD", "WRITE_BUFFER", "OwnedDir", "atomic_write", "check_out_path", "claim", "claim_study",
           "is_polyjudge_store", "read_record", "remove_leftovers"]
