"""The pipeline's own fusion ([fusion], irglow.hybrid): settings checked before work, tuning only on
queries every fused model held out, RRF where nothing was held out."""

from __future__ import annotations

import pytest

from irglow.data.records import Qrel, Query
from irglow.hybrid import TUNING, check, components, fuse_entry, fused_tags, wants_tuning
from irglow.runs.trec import Run


def _config(runs, **more) -> dict:
    return {"lexical": {"systems": ["bm25"], "depth": 10}, "fusion": {"enabled": True, "runs": runs, **more}}


def test_components_read_lists_and_plus_joined_strings():
    config = _config([["twbert", "glow"], "bm25+glow+monobert"])
    assert components(config) == [["twbert", "glow"], ["bm25", "glow", "monobert"]]
    assert fused_tags(config) == ["twbert+glow", "bm25+glow+monobert"]
    assert wants_tuning(config, "glow") and not wants_tuning(config, "bert")
    assert components({"fusion": {"enabled": False, "runs": [["a", "b"]]}}) == []
    # make bench-… FUSE=twbert+glow,twbert+glow+monobert passes one string
    assert components(_config("twbert+glow, twbert+glow+monobert")) == [["twbert", "glow"],
                                                                       ["twbert", "glow", "monobert"]]
    check(_config("twbert+glow"), ["twbert", "glow"])


@pytest.mark.parametrize("runs, more, message", [
    ([["twbert", "glow"]], {}, r"needs runs this configuration does not produce: \['glow'\]"),
    ([["twbert"]], {}, "fuses nothing"),
    ([["bm25", "twbert"]], {"method": "max"}, "fusion.method = .max. must be one of"),
    ([["bm25", "twbert"]], {"step": 0}, r"fusion.step = 0 must be a number > 0 and <= 0.5"),
    ([], {}, "must be a non-empty list"),
])
def test_bad_fusion_settings_stop_before_work(runs, more, message):
    with pytest.raises(ValueError, match=message):
        check(_config(runs, **more), ["bm25", "twbert", "bm25+twbert2"])


def test_a_hybrid_may_not_shadow_another_stage_run():
    with pytest.raises(ValueError, match="bm25f\\+glow is already a run of another stage"):
        check(_config([["bm25f", "glow"]]), ["bm25f", "glow", "bm25f+glow"])


class _Source:
    def __init__(self, queries, qrels):
        self._q, self._r = queries, qrels

    def queries(self):
        return self._q

    def qrels(self):
        return self._r


def test_weights_are_tuned_on_the_queries_every_model_held_out(tmp_path):
    """a held out q1, q2; b held out q2, q3: only q2 tunes.  On q2 run a ranks the relevant d1 first and b
    ranks it last; equal weights tie d1 and d2, and trec_eval's order (docid descending) puts d2 first, so
    only weights favouring a rank d1 first.  RRF (zero-shot) takes both equally."""
    test = {"a": Run({"t": [("d1", 3.0), ("d2", 2.0)]}, "a"), "b": Run({"t": [("d2", 3.0), ("d1", 1.0)]}, "b")}
    tuning = {
        TUNING + "a": Run({"q1": [("d2", 2.0), ("d1", 1.0)], "q2": [("d1", 2.0), ("d2", 1.0)]}, "a"),
        TUNING + "b": Run({"q2": [("d2", 2.0), ("d1", 1.0)], "q3": [("d2", 2.0), ("d1", 1.0)]}, "b")}
    source = _Source([Query(q, q) for q in ("q1", "q2", "q3")], [Qrel(q, "d1", 1) for q in ("q1", "q2", "q3")])
    config = _config([["a", "b"]])

    def ctx(runs, zero_shot=False):
        from types import SimpleNamespace

        from irglow.lexical.stage import LexicalSettings

        return SimpleNamespace(config=config, runs=runs, lexical=LexicalSettings(systems=["bm25"], depth=10),
                               zero_shot=zero_shot, source=source, lexical_config=None)

    fused, info = fuse_entry(ctx({**test, **tuning}), ["a", "b"], {})
    weights = info["weights"]
    assert weights[0] > weights[1] and info["tuning_queries"] == 1 and info["tuning_nDCG@10"] == 1.0
    assert [d for d, _ in fused.ranking["t"]] == ["d1", "d2"]
    fused, info = fuse_entry(ctx({**test, **tuning}, zero_shot=True), ["a", "b"], {})
    assert info["method"] == "rrf" and info["why"] == "zero-shot"
    fused, info = fuse_entry(ctx({**test, TUNING + "a": tuning[TUNING + "a"]}), ["a", "b"], {})
    assert info["method"] == "rrf" and info["why"] == "no held-out runs of b"
