"""Settings checked before any work (irglow.config, through the CLI)."""

from __future__ import annotations

import copy

import pytest


def _config(tmp_path) -> dict:
    return {"seed": 13, "data_dir": str(tmp_path / "data"),
            "collection": {"name": "demo:n_topics=6,docs_per_topic=3,n_roundups=5,n_background=5"},
            "index": {"threads": 1}, "lexical": {"systems": ["bm25", "bm25f"], "depth": 20},
            "eval": {"measures": ["nDCG@10"], "baseline": "bm25"}, "output": {"dir": str(tmp_path / "out")}}


@pytest.mark.parametrize("section,key,value,message", [
    ("index", "stemmer", "porterx", "index.stemmer = 'porterx'; allowed: porter, krovetz, none"),
    ("lexical", "k1", "0.9", "lexical.k1 = '0.9' must be a number"),
    ("lexical", "k1", -1, "lexical.k1 = -1 must be a number >= 0"),
    ("lexical", "b", 2, "lexical.b = 2 must be a number >= 0 and <= 1"),
    ("lexical", "depth", 0, "lexical.depth = 0 must be an integer >= 1"),
    ("lexical", "field_weights", {"title": float("nan")}, "field weight title = nan"),
    ("lexical", "field_weights", {"title": -1}, "field weight title = -1"),
    ("lexical", "field_weights", {"title": 0.5}, "CombinedFieldQuery"),
    ("eval", "baseline", "bm26", "eval.baseline = 'bm26' is not a run this configuration produces"),
    ("rerank", "nrmf", {"epochs": 1.5}, "rerank.epochs = 1.5 must be an integer"),
])
def test_settings_are_checked_before_any_work(tmp_path, monkeypatch, section, key, value, message):
    import irglow.pipeline as pipeline
    import irglow.preparation as preparation

    monkeypatch.chdir(tmp_path)
    config = copy.deepcopy(_config(tmp_path))
    if section == "rerank":
        config["rerank"] = {"enabled": True, "models": ["nrmf"], key: value}
    else:
        config.setdefault(section, {})[key] = value

    def no_work(*args, **kwargs):
        raise AssertionError("work started before the settings were checked")

    monkeypatch.setattr(preparation, "load_collection", no_work)
    with pytest.raises(ValueError) as e:
        pipeline.run_pipeline(config)
    assert message in str(e.value)


@pytest.mark.parametrize("section,table,message", [
    ("twbert", {"epoch": 3}, r"\[twbert\] \(disabled\): unknown \[twbert\] setting\(s\) \['epoch'\]"),
    ("glow", {"epoch": 2}, r"\[glow\] \(disabled\): unknown \[glow\] setting\(s\) \['epoch'\]"),
    ("rerank", {"monobert": {"model": {"foo": 3}}}, r"\[rerank\] \(disabled\): .*unknown \[rerank.monobert.model\]"),
    ("twbert", {"epoch": 3, "enabled": False}, r"\[twbert\] \(disabled\): unknown \[twbert\] setting\(s\) \['epoch'\]"),
])
def test_a_disabled_section_is_checked_whatever_its_size(tmp_path, section, table, message):
    """Issue 59.4: one misspelt key alone in a disabled section was never checked (two were)."""
    from irglow.plan import check_config

    with pytest.raises(ValueError, match=message):
        check_config({**_config(tmp_path), section: table})
    assert check_config({**_config(tmp_path), section: {"enabled": False}}) == ["bm25", "bm25f"]


def test_repeated_or_equivalent_measures_are_one_column_and_runs_may_be_a_comma_string(tmp_path):
    """Issue 59.15/16: `run` computed every stage, then failed on "nDCG@10 NDCG@10"; eval.runs = "a,b" was refused
    though the settings reference allows it."""
    from irglow.plan import bind_plan

    config = {**_config(tmp_path), "eval": {"measures": ["nDCG@10", "NDCG@10", "RR@10", "MRR@10", "R@5", "Recall@5"],
                                            "baseline": "bm25", "runs": "bm25f"}}
    plan = bind_plan(config)
    assert plan.eval.measures == ("nDCG@10", "RR@10", "R@5") and plan.eval.runs == ("bm25f",)
