"""The sensitivity probe's perturbation on scripts written without spaces
(Hada et al. shuffle 10% of the words; Japanese, Chinese and Thai text has
no spaces to split on, so grapheme clusters are shuffled instead)."""

from __future__ import annotations

import json
import unicodedata
from collections import Counter
from pathlib import Path

import numpy as np
import pytest

from polyjudge.data.graphemes import graphemes
from polyjudge.data.records import Item
from polyjudge.studies.perturb import perturb_items, perturb_text, shuffle_graphemes

DATA = Path(__file__).resolve().parents[2].parent / "shared" / "data"
needs_data = pytest.mark.skipif(not DATA.is_dir(), reason="../shared/data is not present")


def mgsm(lang, n=250):
    lines = (DATA / "mgsm" / f"mgsm_{lang}.tsv").read_text(encoding="utf-8").splitlines()[:n]
    return [line.split("\t")[0] for line in lines]


def xquad_contexts(lang, n=60):
    doc = json.loads((DATA / "xquad" / f"xquad.{lang}.json").read_text(encoding="utf-8"))
    return [p["context"] for a in doc["data"] for p in a["paragraphs"]][:n]


@needs_data
@pytest.mark.parametrize("lang,source", [("ja", "mgsm"), ("zh", "mgsm"), ("th", "mgsm"), ("th", "xquad"),
                                         ("zh", "xquad")])
def test_every_real_item_differs_and_keeps_its_clusters(lang, source):
    texts = mgsm(lang) if source == "mgsm" else xquad_contexts(lang)
    items = [Item(src="q", tgt=t, tgt_lang=lang) for t in texts]
    out = perturb_items(items, 0.1, seed=3)
    for before, after in zip(items, out):
        assert after.extra["perturb_unit"] == "grapheme"
        assert after.extra["perturb_changed"] is True
        assert after.tgt != before.tgt  # a perturbed item actually differs
        # the same clusters, rearranged: no tone mark or voicing mark cut off its base
        assert Counter(graphemes(after.tgt)) == Counter(graphemes(before.tgt))
        a, b = graphemes(before.tgt), graphemes(after.tgt)
        # spaces and punctuation stay in their places (counted in clusters)
        fixed = [i for i, c in enumerate(a) if unicodedata.category(c[0])[0] not in "LNM"]
        assert [b[i] for i in fixed] == [a[i] for i in fixed]
        # about 10% of the movable clusters moved (at least 2)
        movable = len(a) - len(fixed)
        moved = sum(x != y for x, y in zip(a, b))
        assert 2 <= moved <= max(2, round(0.1 * movable))


@needs_data
def test_spaced_languages_still_shuffle_words():
    for lang in ("en", "de", "ru", "bn"):
        items = [Item(src="q", tgt=t) for t in mgsm(lang, 40)]
        out = perturb_items(items, 0.1, seed=0)
        assert {o.extra["perturb_unit"] for o in out} == {"word"}
        assert all(o.tgt != i.tgt and sorted(o.tgt.split()) == sorted(i.tgt.split()) for i, o in zip(items, out))


def test_by_hand():
    rng = np.random.default_rng(0)
    # the two Thai syllables change places as wholes
    assert shuffle_graphemes("กี่คำ", 1.0, rng) == "คำกี่"
    # punctuation and spaces stay; only the letters move
    out = shuffle_graphemes("猫が、 好き。", 1.0, rng)
    assert out != "猫が、 好き。" and out[2:4] == "、 " and out[-1] == "。"
    assert sorted(out.replace("、", "").replace(" ", "").replace("。", "")) == sorted("猫が好き")
    # nothing to move: returned as is and flagged as not perturbed
    assert perturb_text("猫", 0.1, rng) == ("猫", "grapheme")
    assert perturb_text("ああああ", 0.5, rng) == ("ああああ", "grapheme")  # identical clusters only
    (item,) = perturb_items([Item(src="s", tgt="猫")], 0.1)
    assert item.extra["perturb_changed"] is False
    # nearly identical clusters: still a change, by swapping a different one in
    assert shuffle_graphemes("ああああああああああい", 0.1, np.random.default_rng(1)) != "ああああああああああい"
