"""The pipeline's own fusion ([fusion], irglow.hybrid): settings checked before work, tuning only on
queries every fused model held out, RRF where nothing was held out."""

from __future__ import annotations

import logging

import pytest

from irglow.cli import main
from irglow.data.records import Qrel, Query
from irglow import stages
from irglow.hybrid import FusionSettings, fuse_entry
from irglow.plan import bind_plan
from irglow.runs.keys import Runs, held_out
from irglow.rankers import configured_fusions as hybrids
from irglow.runs.trec import Run
from irglow.stage import Stage
from tests.files import write_trec


def _config(runs, **more) -> dict:
    return {"lexical": {"systems": ["bm25"], "depth": 10}, "fusion": {"enabled": True, "runs": runs, **more}}


class _Made(Stage):
    """A stage writing the runs a test names (besides [lexical]'s bm25): what the fusion's parts may be."""

    name, always_enabled = "made", True

    class settings_class:  # noqa: N801 - a stage's settings class, of no setting
        @classmethod
        def from_config(cls, config):
            return cls()

    def __init__(self, runs):
        self.runs = [r for r in runs if r != "bm25"]

    def tags(self, settings):
        return self.runs


def _check(config, produced) -> None:
    """The configuration bound, with a stage writing ``produced``: the plan's graph checks each hybrid's parts."""
    with pytest.MonkeyPatch.context() as mp:
        mp.setattr(stages, "STAGES", [stages.stage("lexical"), _Made(produced), stages.stage("fusion")])
        bind_plan(config)


def test_hybrids_read_lists_and_plus_joined_strings():
    def parts(config):
        return [list(h.part_tags) for h in hybrids(config)]

    config = _config([["twbert", "glow"], "bm25+glow+monobert"])
    assert parts(config) == [["twbert", "glow"], ["bm25", "glow", "monobert"]]
    assert [h.tag for h in hybrids(config)] == ["twbert+glow", "bm25+glow+monobert"]
    assert parts({"fusion": {"enabled": False, "runs": [["a", "b"]]}}) == []
    # make bench-… FUSE=twbert+glow,twbert+glow+monobert passes one string
    assert parts(_config("twbert+glow, twbert+glow+monobert")) == [["twbert", "glow"], ["twbert", "glow", "monobert"]]
    _check(_config("twbert+glow"), ["twbert", "glow"])


@pytest.mark.parametrize("runs, more, message", [
    ([["twbert", "glow"]], {}, r"needs runs this configuration does not produce: \['glow'\]"),
    ([["twbert"]], {}, "fuses nothing"),
    ([["bm25", "twbert"]], {"method": "max"}, "fusion.method = .max. must be one of"),
    ([["bm25", "twbert"]], {"step": 0}, r"fusion.step = 0 must be a number > 0 and <= 0.5"),
    ([], {}, "must be a non-empty list"),
])
def test_bad_fusion_settings_stop_before_work(runs, more, message):
    with pytest.raises(ValueError, match=message):
        _check(_config(runs, **more), ["bm25", "twbert", "bm25+twbert2"])


def test_a_hybrid_may_fuse_another_hybrid_of_the_section_but_not_one_it_does_not_define():
    """Issue 61: a fusion is a part like any run: ``(bm25+twbert)+glow`` fuses the hybrid ``bm25+twbert``."""
    _check(_config(["bm25+twbert", "(bm25+twbert)+glow"]), ["bm25", "twbert", "glow"])
    with pytest.raises(ValueError, match=r"\(bm25\+twbert\)\+glow needs runs .* \['bm25\+twbert'\]"):
        _check(_config(["(bm25+twbert)+glow"]), ["bm25", "twbert", "glow"])


def test_an_optional_hybrid_of_runs_the_plan_does_not_make_is_left_out_of_it(caplog):
    """``fusion.optional``: the graph leaves out a hybrid whose parts are not made (its run, its node, its stage's
    runs), saying so; without it, binding stops naming every missing part."""
    with pytest.MonkeyPatch.context() as mp:
        mp.setattr(stages, "STAGES", [stages.stage("lexical"), _Made(["twbert"]), stages.stage("fusion")])
        with caplog.at_level(logging.WARNING, logger="irglow.hybrid"):
            plan = bind_plan(_config(["bm25+twbert", "bm25+glow+dense"], optional=True))
        with pytest.raises(ValueError, match=r"bm25\+glow\+dense needs runs this configuration does not produce: "
                                             r"\['glow', 'dense'\]; its runs: bm25, twbert, bm25\+twbert$"):
            bind_plan(_config(["bm25+twbert", "bm25+glow+dense"]))
    assert plan.tags == ("bm25", "twbert", "bm25+twbert") and list(plan.graph) == list(plan.tags)
    assert plan.written["fusion"] == ("bm25+twbert",)
    assert "fusion: bm25+glow+dense left out: this configuration does not produce ['glow', 'dense']" in caplog.text


def test_a_hybrid_may_not_shadow_another_stage_run():
    with pytest.raises(ValueError, match=r"run 'bm25f\+glow' is made by \[made\] and by \[fusion\]"):
        _check(_config([["bm25f", "glow"]]), ["bm25f", "glow", "bm25f+glow"])


class _Source:
    split = "train"

    def __init__(self, queries, qrels):
        self._q, self._r = queries, qrels
        self.collection = type("Named", (), {"name": "training-collection"})()

    def queries(self):
        return self._q

    def qrels(self):
        return self._r


def test_weights_are_tuned_on_the_queries_every_model_held_out(tmp_path):
    """a held out q1, q2; b held out q2, q3: only q2 tunes.  On q2 run a ranks the relevant d1 first and b
    ranks it last; equal weights tie d1 and d2, and trec_eval's order (docid descending) puts d2 first, so
    only weights favouring a rank d1 first.  Zero-shot the same weights are carried over from the training
    collection's held-out queries (the evaluated collection has no judgments here to read); with
    ``fusion.zero_shot = "rrf"`` reciprocal-rank fusion takes both equally."""
    test = {"a": Run({"t": [("d1", 3.0), ("d2", 2.0)]}, "a"), "b": Run({"t": [("d2", 3.0), ("d1", 1.0)]}, "b")}
    tuning = {
        held_out("a"): Run({"q1": [("d2", 2.0), ("d1", 1.0)], "q2": [("d1", 2.0), ("d2", 1.0)]}, "a"),
        held_out("b"): Run({"q2": [("d2", 2.0), ("d1", 1.0)], "q3": [("d2", 2.0), ("d1", 1.0)]}, "b")}
    source = _Source([Query(q, q) for q in ("q1", "q2", "q3")], [Qrel(q, "d1", 1) for q in ("q1", "q2", "q3")])
    config = _config([["a", "b"]])

    def ctx(runs, zero_shot=False, scheme="carried"):
        from types import SimpleNamespace

        from irglow.lexical.stage import LexicalSettings

        bound = FusionSettings.from_config({**config, "fusion": {**config["fusion"], "zero_shot": scheme}})
        return SimpleNamespace(settings=bound, runs=Runs(runs), collection=None, test_split=None,
                               lexical=LexicalSettings(systems=["bm25"], depth=10),
                               zero_shot=zero_shot, source=source, lexical_config=None)

    fused, info, _ = fuse_entry(ctx({**test, **tuning}), ["a", "b"], {})
    weights = info["weights"]
    assert weights[0] > weights[1] and info["tuning_queries"] == 1 and info["tuning_nDCG@10"] == 1.0
    assert [d for d, _ in fused.ranking["t"]] == ["d1", "d2"]
    fused, info, _ = fuse_entry(ctx({**test, **tuning}, zero_shot=True), ["a", "b"], {})
    assert info["weights"] == weights and info["method"] == "wsum" and info["tuning_queries"] == 1
    assert info["carried_from"] == "training-collection / train"
    assert [d for d, _ in fused.ranking["t"]] == ["d1", "d2"]
    fused, info, _ = fuse_entry(ctx({**test, **tuning}, zero_shot=True, scheme="rrf"), ["a", "b"], {})
    assert info["method"] == "rrf" and info["why"] == "zero-shot (fusion.zero_shot = rrf)"
    assert [d for d, _ in fused.ranking["t"]] == ["d2", "d1"]  # equal weights: the tie goes to docid order
    fused, info, _ = fuse_entry(ctx({**test, held_out("a"): tuning[held_out("a")]}), ["a", "b"], {})
    assert info["method"] == "rrf" and info["why"] == "no held-out runs of b"
    fused, info, _ = fuse_entry(ctx({**test, held_out("a"): tuning[held_out("a")]}, zero_shot=True), ["a", "b"], {})
    assert info["method"] == "rrf" and info["why"] == "zero-shot, no held-out runs of b"


def test_fusion_tuned_on_qrels_of_other_queries_is_refused(tmp_path, capsys, caplog):
    """30.6: tuning qrels sharing no query with the tuning runs: 0.0 at every point, 'tuned' weights, exit 0."""
    a = write_trec(tmp_path / "a.run", [("q1", "d1", 2.0), ("q1", "d2", 1.0)])
    b = write_trec(tmp_path / "b.run", [("q1", "d2", 2.0), ("q1", "d1", 1.0)])
    (tmp_path / "other.qrels").write_text("x9 0 d1 1\nx8 0 d2 1\n")
    args = ["fuse", a, b, "-o", str(tmp_path / "f.run"), "--method", "wsum", "--tune-runs", a, b]
    assert main([*args, "--tune-qrels", str(tmp_path / "other.qrels")]) == 2
    err = capsys.readouterr().err
    assert "share no query with a relevant judgment" in err and "x8, x9" in err and "q1" in err
    assert not (tmp_path / "f.run").exists()
    (tmp_path / "same.qrels").write_text("q1 0 d2 1\n")
    with caplog.at_level(logging.WARNING):
        assert main([*args, "--tune-qrels", str(tmp_path / "same.qrels")]) == 0
    assert "only 1 tuning queries have a relevant judgment" in caplog.text


def test_a_reused_twbert_without_held_out_queries_is_refused_before_work(tmp_path, capsys):
    """Issue 37 item 8: ``twbert.model_dir`` with a fusion that tunes twbert's weight failed only after every stage
    ran (tuning runs sharing no query); the cause is known from the settings and said before any work."""
    reused = tmp_path / "M" / "best"
    reused.mkdir(parents=True)
    (tmp_path / "M" / "training.json").write_text('{"val_query_ids": ["not-a-demo-query"]}')
    out = tmp_path / "out"
    assert main(["run", "--config", "configs/demo.toml", "--set", f'twbert.model_dir="{reused}"',
                 "--set", f"output.dir={out}", "--set", f"data_dir={tmp_path / 'data'}"]) == 2
    err = capsys.readouterr().err
    assert "none of its 1 held-out queries is among demo" in err and "nothing to tune on" in err
    assert not (tmp_path / "data").exists()  # no index was built: nothing ran


def test_two_hybrids_of_the_same_runs_with_other_settings_are_refused():
    """Issue 50: Fusion(["bm25", "glow"], method="rrf") beside Fusion(["bm25", "glow"]) shared one tag and one of them
    was dropped; the same hybrid written twice is kept once."""
    from irglow.rankers import Fusion, Named

    twice = {"fusion": {"enabled": True, "runs": [Fusion(["bm25", "glow"], method="rrf"), "bm25+glow"]}}
    with pytest.raises(ValueError, match=r"two hybrids of bm25\+glow with different settings"):
        hybrids(twice)
    same = {"fusion": {"enabled": True, "runs": ["bm25+glow", ["bm25", "glow"]]}}
    assert hybrids(same) == [Fusion(["bm25", "glow"])] == [Fusion([Named("bm25"), Named("glow")])]


def test_a_step_that_cannot_divide_one_is_named_when_bound():
    with pytest.raises(ValueError, match=r"fusion.step = 0.3: weight grid step must divide 1"):
        FusionSettings.from_config({"fusion": {"enabled": True, "runs": ["bm25+bm25f"], "step": 0.3}})
