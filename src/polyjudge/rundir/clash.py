"""No command writes onto its own input: the one check every command makes before writing.

Every output of a command (a file such as ``report -o``, or a folder and the
file names written in it, such as ``judge -o``) is compared with every input
(files, and run directories through their own files) and with the other
outputs: the same resolved path or the same file (device and inode, so hard
links and symlinks are seen through) is a clash, refused with exit 2 naming
both, before anything is computed or written.
"""

from __future__ import annotations

import os
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from pathlib import Path

from polyjudge.data.errors import InputError
from polyjudge.rundir.lock import LOCK_FILE
from polyjudge.rundir.names import MTME_DIR, RUN_OUTPUTS, STORE_FILES
from polyjudge.rundir.ownership import OWNED_RECORD, read_record

# Files a run directory is made of, for outputs and for run directories given as input.
RUN_DIR_NAMES = (*RUN_OUTPUTS, *STORE_FILES, OWNED_RECORD, LOCK_FILE)


@dataclass(frozen=True)
class Target:
    """One path a command reads or writes: a file, or a folder and the files that matter in it."""

    flag: str
    path: str
    names: tuple[str, ...] | None = None  # a folder: the names written (output) or read (input) there

    def files(self) -> list[Path]:
        root = Path(self.path)
        if self.names is None:
            return [root]
        return [root / n for n in self.names]


def file_target(flag: str, path: str | os.PathLike[str] | None) -> list[Target]:
    """A file the command reads or writes (none when the option was not given)."""
    return [] if path is None else [Target(flag, os.fspath(path))]


def run_dir_target(flag: str, path: str | os.PathLike[str] | None) -> list[Target]:
    """A run directory: its fixed files, every file polyjudge recorded there and its ``mtme/`` scores."""
    if path is None:
        return []
    root = Path(path)
    names = set(RUN_DIR_NAMES)
    if root.is_dir():
        try:
            owned = read_record(root)
        except InputError:
            owned = None
        if owned is not None:
            names |= owned.files
        mtme = root / MTME_DIR
        if mtme.is_dir():
            names |= {f"{MTME_DIR}/{p.name}" for p in mtme.glob("*.score")}
    return [Target(flag, os.fspath(path), tuple(sorted(names)))]


def input_target(flag: str, path: str | os.PathLike[str] | None) -> list[Target]:
    """An input given on the command line: a run directory when it is a folder, else a file."""
    if path is None:
        return []
    return run_dir_target(flag, path) if Path(path).is_dir() else file_target(flag, path)


def same_file(a: Path, b: Path) -> bool:
    """The same file: one inode (hard links, symlinks), or one resolved path (not yet existing)."""
    try:
        if os.path.samefile(a, b):
            return True
    except OSError:
        pass
    return os.path.realpath(a) == os.path.realpath(b)


def refuse_clashes(outputs: Sequence[Target], inputs: Iterable[Target]) -> None:
    """InputError (exit 2) naming both paths when an output is an input, a run directory's own
    file, or another output of the same command; an output file that is a symlink is refused too."""
    ins = list(inputs)
    for out in outputs:
        if out.path == "":
            raise InputError("is empty (an unset shell variable?); give a path", field=out.flag)
        if out.names is None and Path(out.path).is_symlink():
            raise InputError("is a symlink; polyjudge does not write through symlinks (give the file itself)",
                             path=out.path, field=out.flag)
    for i, out in enumerate(outputs):
        for other in [*ins, *outputs[i + 1:]]:
            for written in out.files():
                for read in other.files():
                    if same_file(written, read):
                        role = "an input" if other in ins else "another output"
                        raise InputError(f"would overwrite {read} ({other.flag}, {role}); give another path",
                                         path=os.fspath(written), field=out.flag)


__all__ = ["RUN_DIR_NAMES", "Target", "file_target", "input_target", "refuse_clashes", "run_dir_target",
           "same_file"]
