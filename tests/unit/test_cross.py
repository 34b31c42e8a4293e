"""The zero-shot table: values, marks, mean and win counts worked out by hand; collection specs
and labels; what a failed ir_datasets download names."""

from __future__ import annotations

import re

import numpy as np
import pandas as pd
import pytest

from irglow.eval.compare import Comparison
from irglow.eval.cross import CrossCollection
from irglow.runs.trec import Run


def _cmp(means: dict[str, float], pvalues: dict[str, float], n: int) -> Comparison:
    idx = list(means)
    m = pd.DataFrame({"nDCG@10": [means[r] for r in idx]}, index=idx)
    p = pd.DataFrame({"nDCG@10": [pvalues.get(r, np.nan) for r in idx]}, index=idx)
    return Comparison(m, p, m - m.loc["bm25"], "bm25", 0.05, n)


def test_cross_collection_table_by_hand():
    a = _cmp({"bm25": 0.5, "twbert": 0.6, "glow": 0.7}, {"twbert": 0.01, "glow": 0.2}, 10)
    b = _cmp({"bm25": 0.4, "twbert": 0.3}, {"twbert": 0.02}, 20)
    table = CrossCollection.from_comparisons({"a-test": a, "b-test": b}, "nDCG@10", ["c-test not evaluated: offline"])
    marked = table.marked()
    assert marked.loc["twbert", "a-test"] == "0.6000 ▲"
    assert marked.loc["twbert", "b-test"] == "0.3000 ▼"
    assert marked.loc["glow", "a-test"] == "0.7000"  # p 0.2: no mark
    assert marked.loc["glow", "b-test"] == "–"
    assert marked.loc["twbert", "mean"] == "0.4500"  # (0.6 + 0.3) / 2
    assert marked.loc["glow", "mean"] == "0.7000 (1)"  # one collection of two
    assert marked.loc["bm25", "mean"] == "0.4500"
    assert marked.loc["twbert", "> bm25"] == "1/2 (1 ▲)" and marked.loc["glow", "> bm25"] == "1/1 (0 ▲)"
    assert marked.loc["bm25", "> bm25"] == "–"
    # the markdown keeps 4 decimals (no re-parsing of "0.4500" into 0.45)
    assert "| twbert | 0.6000 ▲ | 0.3000 ▼ | 0.4500 | 1/2 (1 ▲) |" in re.sub(" +", " ", table.to_markdown())
    md = table.to_markdown()
    assert "a-test 10, b-test 20" in md and "- c-test not evaluated: offline" in md
    assert table.to_csv().splitlines()[0] == ",a-test,b-test,mean"
    assert r"0.6000$^{\blacktriangle}$" in table.to_latex()


def test_cross_collection_names_a_missing_measure():
    with pytest.raises(KeyError, match="AP is not among the measures of a"):
        CrossCollection.from_comparisons({"a": _cmp({"bm25": 0.5}, {}, 3)}, "AP")


def test_collection_specs_and_labels():
    from irglow.plan import collection_specs
    from irglow.zero_shot import label

    assert collection_specs(["beir/nfcorpus", "data/nf@dev", {"name": "disks45/nocr/trec-robust-2004", "split": ""}]) == [
        ("beir/nfcorpus", "test"), ("data/nf", "dev"), ("disks45/nocr/trec-robust-2004", "")]
    assert label("beir/nfcorpus", "test") == "nfcorpus-test"
    assert label("beir/webis-touche2020/v2", "test") == "webis-touche2020-v2-test"
    assert label("disks45/nocr/trec-robust-2004", "") == "trec-robust-2004"
    assert label("/data/my collection/", "dev") == "my-collection-dev"
    with pytest.raises(ValueError, match=r"zero_shot.collections\[0\] is 3"):
        collection_specs([3])
    with pytest.raises(ValueError, match="spilt"):
        collection_specs([{"name": "x", "spilt": "dev"}])
    with pytest.raises(ValueError, match="empty"):
        collection_specs([])


def test_a_failed_download_names_the_file_and_where_it_goes(tmp_path, monkeypatch):
    import ir_datasets

    from irglow.data.irds import DatasetUnavailableError, explain_unavailable

    monkeypatch.setattr(ir_datasets.util, "home_path", lambda: str(tmp_path))
    with pytest.raises(DatasetUnavailableError) as e:
        with explain_unavailable("beir/fiqa/test"):
            raise ConnectionError("Name or service not known")
    text = str(e.value)
    assert "https://public.ukp.informatik.tu-darmstadt.de/thakur/BEIR/datasets/fiqa.zip" in text
    assert f"{tmp_path}/beir/fiqa/source.zip" in text and "Name or service not known" in text
    with pytest.raises(ZeroDivisionError):  # only download failures are translated
        with explain_unavailable("beir/fiqa/test"):
            raise ZeroDivisionError


def test_pooled_effect_and_significant_wins_across_collections():
    """Two collections, per-query RR differences 0.5 where the new run puts the relevant document first."""
    from irglow.data.records import Qrel
    from irglow.eval import significance as sig
    from irglow.eval.compare import compare
    from irglow.eval.cross import CrossCollection
    from irglow.runs.trec import Run

    comparisons = {}
    for name, hits in (("c1", [1, 1, 0, 0]), ("c2", [1, 1, 1, 0])):
        qrels = [Qrel(f"q{i}", "good", 1) for i in range(4)]
        base = Run({f"q{i}": [("bad", 2.0), ("good", 1.0)] for i in range(4)}, "bm25")
        new = Run({f"q{i}": [("good", 2.0), ("bad", 1.0)] if h else [("bad", 2.0), ("good", 1.0)]
                   for i, h in enumerate(hits)}, "new")
        comparisons[name] = compare({"bm25": base, "new": new}, qrels, ["RR@10"], baseline="bm25", permutations=100)
    table = CrossCollection.from_comparisons(comparisons, "RR@10")
    # per query RR goes 0.5 → 1 where hit: d = 0.5·hits; c1: mean 0.25, var(d)=1/12, /4; c2: 0.375, var 1/16·... by numpy
    d1, d2 = np.array([0.5, 0.5, 0, 0]), np.array([0.5, 0.5, 0.5, 0])
    assert table.effects["new"]["c1"] == pytest.approx((0.25, d1.var(ddof=1) / 4))
    assert table.effects["new"]["c2"] == pytest.approx((0.375, d2.var(ddof=1) / 4))
    expected = sig.dersimonian_laird([0.25, 0.375], [d1.var(ddof=1) / 4, d2.var(ddof=1) / 4])
    assert table.pooled()["new"] == expected
    assert "Pooled effect against `bm25`" in table.to_markdown()
    assert table.summary().loc["new", "> bm25"].startswith("2/2 (")


def test_pooling_leaves_out_the_training_collection_and_identical_collections():
    """Issue 30.8: the training collection's own test split was pooled with the unseen ones, and a system equal to
    the baseline on a collection got a variance floor of 1e-12 and a CI of ±2e-6."""
    from irglow.data.records import Qrel
    from irglow.eval.compare import compare
    from irglow.eval.cross import CrossCollection
    from irglow.runs.trec import Run

    comparisons = {}
    for name, hits in (("train-test", [1, 1, 1, 1, 1, 1]), ("c1", [1, 1, 0, 0, 0, 0]), ("c2", [1, 1, 1, 0, 0, 0]),
                       ("c3", [0] * 6)):
        qrels = [Qrel(f"q{i}", "good", 1) for i in range(6)]
        base = Run({f"q{i}": [("bad", 2.0), ("good", 1.0)] for i in range(6)}, "bm25")
        new = Run({f"q{i}": [("good", 2.0), ("bad", 1.0)] if h else [("bad", 2.0), ("good", 1.0)]
                   for i, h in enumerate(hits)}, "new")
        comparisons[name] = compare({"bm25": base, "new": new}, qrels, ["RR@10"], baseline="bm25", permutations=100)
    table = CrossCollection.from_comparisons(comparisons, "RR@10", in_domain=["train-test"])
    pooled = table.pooled()["new"]
    assert pooled.k == 2 and pooled.excluded == 1  # c1 and c2; c3 identical to bm25; train-test in-domain
    assert set(table.unseen("new")) == {"c1", "c2", "c3"}
    md = table.to_markdown()
    assert "Not pooled, as in-domain: train-test." in md and "`new` on c3" in md and "2 (+1 identical)" in md
    tex = table.to_latex()
    assert tex.count("\\begin{table}") == 2 and "Pooled effect against \\texttt{bm25}" in tex


def test_every_mirror_failing_is_one_line_naming_the_file_and_where_it_goes(tmp_path, monkeypatch):
    """Issue 30: the zero-shot table's note was a raw RuntimeError(...) listing every URL tried."""
    import ir_datasets

    from irglow.data.irds import DatasetUnavailableError, explain_unavailable

    monkeypatch.setattr(ir_datasets.util, "home_path", lambda: str(tmp_path))
    with pytest.raises(DatasetUnavailableError) as e:
        with explain_unavailable("beir/fiqa/test"):
            raise RuntimeError("All download sources failed", [ConnectionError("https://a"), ConnectionError("b")])
    text = str(e.value)
    assert "\n" not in text and "every download source failed" in text and "https://a" not in text
    assert f"fiqa.zip → {tmp_path}/beir/fiqa/source.zip — put the file there, or set IR_DATASETS_HOME" in text
    with pytest.raises(RuntimeError, match="something else"):  # other RuntimeErrors are not downloads
        with explain_unavailable("beir/fiqa/test"):
            raise RuntimeError("something else")


def test_a_fine_tuned_model_below_its_checkpoint_out_of_domain_is_named():
    """Issue 33.1: the zero-shot table says where a fine-tuned model lost to the checkpoint it started from, on the
    unseen collections only (in-domain it is expected to gain), and says so when it never did."""
    train = _cmp({"bm25": 0.5, "glow": 0.7, "bert": 0.65, "minilm": 0.6}, {}, 10)
    a = _cmp({"bm25": 0.3, "glow": 0.28, "bert": 0.32, "minilm": 0.3}, {}, 10)
    b = _cmp({"bm25": 0.4, "glow": 0.41, "bert": 0.45, "minilm": 0.42}, {}, 10)
    table = CrossCollection.from_comparisons({"train-test": train, "a": a, "b": b}, "nDCG@10",
                                             in_domain=["train-test"])
    assert table.against_checkpoints({"glow": "minilm", "bert": "minilm", "absent": "minilm"}) == [
        "glow (fine-tuned) is below its starting checkpoint minilm on a (0.2800 vs 0.3000), b (0.4100 vs 0.4200) "
        "— fine-tuning lost what the checkpoint knew there (nDCG@10)",
        "bert (fine-tuned) is at or above its starting checkpoint minilm on every unseen collection (a, b; nDCG@10)"]


def test_a_fusion_below_one_of_its_parts_is_named_with_the_gap(tmp_path):
    """Issue 41 item 3: where `all` fuses a strong run with weaker ones and loses to it, the table says so."""
    import json

    import pandas as pd

    from irglow.eval.cross import CrossCollection
    from irglow.zero_shot import fused_parts

    values = pd.DataFrame({"nfcorpus-dev": [0.30, 0.52, 0.465, 0.31], "scifact-test": [0.66, 0.64, 0.70, 0.67]},
                          index=["bm25", "bert", "all", "bm25+bert"])
    table = CrossCollection(values, values.map(lambda _: ""), "nDCG@10", "bm25", {"nfcorpus-dev": 3,
                                                                                  "scifact-test": 3})
    from irglow.hybrid import FusionResult

    folder = tmp_path / "nfcorpus-dev"
    folder.mkdir(parents=True)
    (folder / "manifest.json").write_text(json.dumps({"results": {
        f"fusion:{tag}": FusionResult(tag, ["bm25", "bert"], "rrf", [1.0, 1.0]).to_json()
        for tag in ("all", "bm25+bert")}}))
    parts = {"nfcorpus-dev": fused_parts(folder), "scifact-test": {"all": ["bm25", "bert"]}}
    assert parts["nfcorpus-dev"] == {"all": ["bm25", "bert"], "bm25+bert": ["bm25", "bert"]}
    notes = table.against_parts(parts)
    # nfcorpus: all 0.465 < bert 0.52 (gap 0.055), bm25+bert 0.31 < 0.52 (0.21); scifact: all 0.70 above both parts
    assert notes == ["On nfcorpus-dev, all (0.4650) is below its own part bert (0.5200) by 0.0550 nDCG@10: the "
                     "fusion diluted its strongest run there",
                     "On nfcorpus-dev, bm25+bert (0.3100) is below its own part bert (0.5200) by 0.2100 nDCG@10: "
                     "the fusion diluted its strongest run there"]


def test_a_system_left_out_of_the_pooled_effect_is_told_why():
    """Issue 50: a system with one unseen collection (or no variance on all but one) vanished from the pooled
    table without a word."""
    from irglow.data.records import Qrel
    from irglow.eval.compare import compare

    qrels = [Qrel(f"q{i}", "good", 1) for i in range(6)]
    base = Run({f"q{i}": [("bad", 2.0), ("good", 1.0)] for i in range(6)}, "bm25")
    new = Run({f"q{i}": [("good", 2.0), ("bad", 1.0)] if i < 3 else [("bad", 2.0), ("good", 1.0)] for i in range(6)},
              "new")
    one = {"c1": compare({"bm25": base, "new": new}, qrels, ["RR@10"], baseline="bm25", permutations=100)}
    table = CrossCollection.from_comparisons(one, "RR@10")
    assert table.not_pooled() == {"new": "it ran on 1 unseen collection"}
    assert "No pooled effect (two unseen collections with variance are needed) for `new`: it ran on 1 unseen " \
        "collection." in table.to_markdown()
