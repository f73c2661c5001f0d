"""Parquet files and Hugging Face datasets written to disk by the test, read offline."""

from __future__ import annotations

import os
import sys

import pytest

from polyjudge.data.columns import parse_columns
from polyjudge.data.errors import InputError
from polyjudge.data.readers import ItemDefaults, read_items
from tests.helpers.extras import needs_extra, skip_reason

pytestmark = needs_extra("datasets")
datasets = pytest.importorskip("datasets", reason=skip_reason("datasets"))

COLUMNS = {"lp": ["en-de", "en-de", "en-de"], "src": ["Hello.", "Thanks.", "Bye."],
           "mt": ["Hallo.", "Danke.", "Tschüss."], "ref": ["Hallo!", "Danke!", "Tschüs!"],
           "system": ["A", "A", "B"]}
MAPPED = ItemDefaults(columns=parse_columns("tgt=mt"))


def expected():
    return [(s, t, r, y, "en", "de") for s, t, r, y in zip(COLUMNS["src"], COLUMNS["mt"], COLUMNS["ref"],
                                                          COLUMNS["system"])]


def fields(items):
    return [(it.src, it.tgt, it.ref, it.system, it.src_lang, it.tgt_lang) for it in items]


@pytest.fixture(autouse=True)
def _keep_environment(monkeypatch, tmp_path):
    """The reader forces HF offline in os.environ and datasets.config; keep that (and any cache
    datasets writes) from leaking out of the test."""
    for name in ("HF_HUB_OFFLINE", "HF_DATASETS_OFFLINE"):
        monkeypatch.setenv(name, os.environ.get(name, "0"))
        if hasattr(datasets.config, name):
            monkeypatch.setattr(datasets.config, name, getattr(datasets.config, name))
    monkeypatch.setattr(datasets.config, "HF_DATASETS_CACHE", tmp_path / "hf-cache")


def test_dataset_saved_to_disk(tmp_path):
    datasets.Dataset.from_dict(COLUMNS).save_to_disk(str(tmp_path / "ds"))
    assert fields(read_items(f"hf:{tmp_path / 'ds'}", how=MAPPED)) == expected()
    assert os.environ["HF_HUB_OFFLINE"] == "1" and os.environ["HF_DATASETS_OFFLINE"] == "1"


def test_dataset_dict_needs_a_split_unless_it_has_one(tmp_path):
    ds = datasets.Dataset.from_dict(COLUMNS)
    datasets.DatasetDict({"test": ds, "dev": ds.select([0])}).save_to_disk(str(tmp_path / "dd"))
    assert len(read_items(f"hf:{tmp_path / 'dd'}:dev", how=MAPPED)) == 1
    assert fields(read_items(f"hf:{tmp_path / 'dd'}:test", how=MAPPED)) == expected()
    with pytest.raises(InputError, match="name a split") as exc:
        read_items(f"hf:{tmp_path / 'dd'}", how=MAPPED)
    assert exc.value.field == "split"


def test_parquet_file_and_folder(tmp_path):
    ds = datasets.Dataset.from_dict(COLUMNS)
    ds.to_parquet(str(tmp_path / "one.parquet"))
    assert fields(read_items(tmp_path / "one.parquet", how=MAPPED)) == expected()
    folder = tmp_path / "shards"
    folder.mkdir()
    ds.select([0, 1]).to_parquet(str(folder / "part-0.parquet"))
    ds.select([2]).to_parquet(str(folder / "part-1.parquet"))
    assert fields(read_items(folder, how=MAPPED)) == expected()  # a folder of parquet files is detected
    with pytest.raises(InputError, match="maps ref to column 'reference'") as exc:
        read_items(folder, how=ItemDefaults(columns=parse_columns("tgt=mt,ref=reference")))
    assert (exc.value.field, exc.value.line) == ("columns", 1)
    (tmp_path / "bad.parquet").write_text("not parquet")
    with pytest.raises(InputError, match="not a readable parquet file"):
        read_items(tmp_path / "bad.parquet")


def test_a_dataset_not_in_the_cache_is_never_downloaded(tmp_path):
    with pytest.raises(InputError, match="not in the local Hugging Face cache") as exc:
        read_items("hf:polyjudge-test/no-such-dataset:default:test")
    assert exc.value.path == "hf:polyjudge-test/no-such-dataset:default:test"


def test_missing_extra_is_a_clear_input_error(tmp_path, monkeypatch):
    monkeypatch.setitem(sys.modules, "datasets", None)  # import datasets now fails as if not installed
    with pytest.raises(InputError, match=r"polyjudge\[datasets\]"):
        read_items(f"hf:{tmp_path}")


def test_hf_name_is_never_taken_for_a_file_by_its_suffix(tmp_path):
    saved = tmp_path / "set.parquet"  # a saved dataset whose folder name ends like a parquet file
    datasets.Dataset.from_dict(COLUMNS).save_to_disk(str(saved))
    assert fields(read_items(f"hf:{saved}", how=MAPPED)) == expected()


def test_local_copy_of_a_dataset_repository(tmp_path):
    repo = tmp_path / "wmt-mqm-human-evaluation"
    (repo / "data").mkdir(parents=True)
    datasets.Dataset.from_dict(COLUMNS).to_parquet(str(repo / "data" / "test-00000-of-00001.parquet"))
    assert fields(read_items(f"hf:{repo}", how=MAPPED)) == expected()
    assert fields(read_items(f"hf:{repo}:test", how=MAPPED)) == expected()
    (repo / "data" / "test-00000-of-00001.parquet").write_text("not parquet")
    with pytest.raises(InputError, match="not a dataset folder"):
        read_items(f"hf:{repo}", how=MAPPED)
