"""Rows of parquet files and Hugging Face datasets (the optional ``datasets`` extra).

``hf:NAME[:CONFIG][:SPLIT]`` reads a dataset from the local Hugging Face cache,
``hf:PATH[:SPLIT]`` one written by ``save_to_disk`` or a local copy of a
dataset repository (its data files); a ``.parquet`` file or a folder of them
is read directly. Nothing is ever downloaded: the Hub and datasets are
forced offline before ``datasets`` is imported (as ``HF_HUB_OFFLINE=1`` and
``HF_DATASETS_OFFLINE=1`` would), so a dataset missing from the cache is an
InputError, as is a missing extra.
"""

from __future__ import annotations

import os
from collections.abc import Iterator
from pathlib import Path
from typing import Any

from polyjudge.data.errors import InputError

HF_PREFIX = "hf:"
EXTRA_HINT = "pip install 'polyjudge[datasets]'"
Row = tuple[int, dict[str, Any]]


def is_hf_source(path: Path | str) -> bool:
    return str(path).startswith(HF_PREFIX)


def is_parquet_dir(path: Path) -> bool:
    """A folder holding parquet files (as ``Dataset.to_parquet`` shards or a dataset repository's data)."""
    return path.is_dir() and any(path.glob("*.parquet"))


def _offline_datasets(source: str) -> Any:
    """The ``datasets`` module, with every download switched off (never a network request)."""
    os.environ["HF_HUB_OFFLINE"] = "1"
    os.environ["HF_DATASETS_OFFLINE"] = "1"
    try:
        import datasets
    except ImportError:
        raise InputError(f"reading Hugging Face datasets needs the datasets extra ({EXTRA_HINT})",
                         path=source) from None
    config = datasets.config
    for name in ("HF_HUB_OFFLINE", "HF_DATASETS_OFFLINE"):  # already imported: set the flags it read
        if hasattr(config, name):
            setattr(config, name, True)
    return datasets


def _rows(table: Any) -> Iterator[Row]:
    """(row number from 1, row) of a dataset or an Arrow table."""
    for n, row in enumerate(table.to_pylist() if hasattr(table, "to_pylist") else table, start=1):
        yield n, dict(row)


def _only_split(loaded: Any, source: str, split: str | None) -> Any:
    """One split of what was loaded: the named one, or the only one there is."""
    if not hasattr(loaded, "keys"):  # a Dataset already
        return loaded
    names = list(loaded.keys())
    if split is None and len(names) == 1:
        split = names[0]
    if split is None or split not in names:
        raise InputError(f"name a split ({', '.join(names)}): hf:NAME:CONFIG:SPLIT or hf:PATH:SPLIT",
                         path=source, field="split")
    return loaded[split]


def _is_saved(path: Path) -> bool:
    """A folder written by ``save_to_disk`` (a Dataset's state, or a DatasetDict's split list)."""
    return (path / "state.json").is_file() or (path / "dataset_dict.json").is_file()


def _load_local(datasets: Any, path: Path, split: str | None, source: str) -> Any:
    """A folder saved by ``save_to_disk``, else a local copy of a dataset repository (its data files)."""
    try:
        if _is_saved(path):
            return _only_split(datasets.load_from_disk(str(path)), source, split)
        return _only_split(datasets.load_dataset(str(path)), source, split)
    except InputError:
        raise
    except Exception as exc:  # datasets raises many kinds for a folder it cannot read
        raise InputError(f"not a dataset folder (save_to_disk, or a dataset repository's data files): "
                         f"{type(exc).__name__}: {exc}", path=source) from None


def _load_cached(datasets: Any, parts: list[str], source: str) -> Any:
    name, config, split = (parts + [None, None])[:3]
    try:
        loaded = datasets.load_dataset(name, config, split=split)
    except Exception as exc:  # datasets raises many kinds; every one means "not readable offline"
        raise InputError(f"not in the local Hugging Face cache, or not readable offline (polyjudge never "
                         f"downloads; fetch it once with datasets.load_dataset, or save_to_disk): "
                         f"{type(exc).__name__}: {exc}", path=source) from None
    return _only_split(loaded, source, None)


def hf_rows(source: str) -> Iterator[Row]:
    """The rows of ``hf:PATH[:SPLIT]`` (saved to disk) or ``hf:NAME[:CONFIG][:SPLIT]`` (cached)."""
    spec = source[len(HF_PREFIX):]
    if not spec:
        raise InputError("name a dataset: hf:NAME[:CONFIG][:SPLIT] or hf:PATH", path=source)
    datasets = _offline_datasets(source)
    head, _, split = spec.rpartition(":")
    if Path(spec).exists():
        table = _load_local(datasets, Path(spec), None, source)
    elif head and Path(head).exists():
        table = _load_local(datasets, Path(head), split or None, source)
    else:
        table = _load_cached(datasets, spec.split(":"), source)
    return _rows(table)


def parquet_rows(path: Path) -> Iterator[Row]:
    """The rows of a parquet file, or of every parquet file of a folder in name order."""
    try:
        import pyarrow.parquet as pq
    except ImportError:
        raise InputError(f"reading parquet needs pyarrow (the datasets extra: {EXTRA_HINT})", path=str(path)) from None
    files = sorted(path.glob("*.parquet")) if path.is_dir() else [path]
    offset = 0
    for file in files:
        try:
            table = pq.read_table(file)
        except Exception as exc:  # pyarrow's errors for a file that is not parquet
            raise InputError(f"not a readable parquet file: {type(exc).__name__}: {exc}", path=str(file)) from None
        for n, row in _rows(table):
            yield offset + n, row
        offset += table.num_rows


__all__ = ["HF_PREFIX", "hf_rows", "is_hf_source", "is_parquet_dir", "parquet_rows"]
