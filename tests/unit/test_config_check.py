"""A bad pipeline configuration stops before any work, naming the key and what is allowed."""

from __future__ import annotations

import pytest

from irglow.config import load_config
from irglow.pipeline import check_config


@pytest.mark.parametrize("path", ["configs/demo.toml", "configs/msmarco.toml", "configs/msmarco-small.toml",
                                  "configs/zero-shot.toml"])
def test_shipped_configs_pass(path):
    check_config(load_config(path))


@pytest.mark.parametrize("override, message", [
    ("lexcal.depth=10", r"unknown top-level setting\(s\) \['lexcal'\]; known: \[.*'lexical'"),
    ("lexical.k2=1.2", r"unknown \[lexical\] setting\(s\) \['k2'\]; known: \['b', 'depth', 'field_weights', 'k1'"),
    ("lexical.systems=['bm25', 'bm26']", r"'bm26' is not a lexical system; known: bm25, bm25-mf, bm25f, tfidf"),
    ("lexical.systems=['bm25+rm4']", r"'bm25\+rm4' is not a lexical system"),
    ("collection.test_splt='dev'", r"\['test_splt'\]"),
    ("eval='nDCG@10'", r"\[eval\] must be a table"),
])
def test_bad_config_names_the_key(override, message):
    with pytest.raises(ValueError, match=message):
        check_config(load_config("configs/demo.toml", [override]))
