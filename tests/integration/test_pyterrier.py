"""Issue 39 item 6: irglow's rankers inside PyTerrier.  ``pt.Experiment`` over irglow's transformers gives the
per-query values ``irglow compare`` gives on the same runs, and each transformer computes what irglow's own
command computes (nothing downloads, no Terrier jar, no Java start beyond irglow's own Lucene)."""

from __future__ import annotations

import pytest

pt = pytest.importorskip("pyterrier", reason="the PyTerrier extra is not installed (pip install -e '.[pyterrier]')")

import pandas as pd  # noqa: E402

from irglow.cli import build_parser  # noqa: E402
from irglow.commands.evaluate import _comparison  # noqa: E402
from irglow.data.trec import read_qrels  # noqa: E402
from irglow.runs.trec import Run  # noqa: E402

MEASURES = ["nDCG@10", "RR@10", "R@100"]


@pytest.fixture(scope="module")
def setting(module_tmp):
    from irglow.data.collection import load_collection
    from irglow.index.lucene_index import IndexConfig, build_index
    from irglow.models.glow.model import GlowConfig, GlowEncoder
    from irglow.models.rerank.monobert import MonoBERT, MonoBERTConfig
    from irglow.models.twbert.model import TWBert, TWBertConfig
    from tests.integration.pipelines import SMALL_DEMO

    tmp = module_tmp
    coll = load_collection(SMALL_DEMO)
    index = build_index(coll, IndexConfig(threads=1), root=tmp / "data")
    TWBert.from_pretrained_bert(TWBertConfig(max_query_tokens=32)).save(tmp / "twbert")
    MonoBERT.from_pretrained_bert(MonoBERTConfig(default_field_tokens=48)).save(tmp / "monobert")
    glow = GlowEncoder.from_pretrained_bert(GlowConfig(variant="glow", num_layers=1, fields=list(index.fields)))
    topics = pd.DataFrame([(q.query_id, q.text) for q in coll.queries("test")], columns=["qid", "query"])
    qrels = coll.qrels("test")
    frame = pd.DataFrame([(q.query_id, q.doc_id, int(q.relevance)) for q in qrels], columns=["qid", "docno", "label"])
    path = tmp / "test.qrels"
    path.write_text("".join(f"{q.query_id} 0 {q.doc_id} {int(q.relevance)}\n" for q in qrels))
    return tmp, coll, index, glow, topics, frame, str(path)


def test_pt_experiment_over_irglows_transformers_equals_irglow_compare(setting):
    from irglow.pyterrier import CrossEncoder, Fusion, Glow, Lexical, TWBert, frame_to_run

    tmp, coll, index, glow, topics, qrels, qrels_path = setting
    bm25 = Lexical(index, "bm25", depth=100)
    systems = {"bm25": bm25, "twbert": bm25 >> TWBert(tmp / "twbert", index),
               "monobert": (bm25 % 10) >> CrossEncoder(tmp / "monobert", coll),
               "glow": (bm25 % 20) >> Glow(glow, index, coll),
               "fusion": Fusion(bm25, Lexical(index, "tfidf", depth=100), method="rrf")}
    import ir_measures

    table = pt.Experiment(list(systems.values()), topics, qrels, [ir_measures.parse_measure(m) for m in MEASURES],
                          names=list(systems), perquery=True)
    paths = []
    for name, system in systems.items():
        frame = system.transform(topics)
        assert list(frame.columns) == ["qid", "query", "docno", "score", "rank"]
        paths.append(str(frame_to_run(frame, name).write(tmp / f"{name}.run")))
    args = build_parser().parse_args(["compare", *paths, "--qrels", qrels_path, "-m", " ".join(MEASURES),
                                      "--baseline", "bm25", "--permutations", "10"])
    cmp = _comparison(args, read_qrels(qrels_path))
    checked = 0
    for name, measure, qid, value in table[["name", "measure", "qid", "value"]].itertuples(index=False):
        assert cmp.values_per_query[name][measure][str(qid)] == pytest.approx(value, abs=1e-9), (name, measure, qid)
        checked += 1
    assert checked == len(systems) * len(MEASURES) * len({q.query_id for q in read_qrels(qrels_path)})
    assert len({round(cmp.means.loc[n, "nDCG@10"], 6) for n in systems}) > 2  # the systems do differ


def test_each_transformer_computes_what_irglows_own_command_does(setting):
    from irglow.cli import main
    from irglow.data.records import Query
    from irglow.models.twbert.model import TWBert as Model
    from irglow.models.twbert.search import twbert_search
    from irglow.pyterrier import Lexical, TWBert, frame_to_run

    tmp, coll, index, _, topics, _, _ = setting
    # bm25: the run `irglow search` writes
    assert main(["search", "demo:n_topics=12,docs_per_topic=4,n_roundups=10,n_background=10", "--split", "test",
                 "--system", "bm25", "--depth", "100", "-o", str(tmp / "search.run"), "--data-dir", str(tmp / "data")]) == 0
    ours = frame_to_run(Lexical(index, "bm25", depth=100).transform(topics))
    written = Run.read(tmp / "search.run")
    for qid, ranking in written.ranking.items():
        assert [d for d, _ in ours.ranking[qid]] == [d for d, _ in ranking]
        assert [s for _, s in ours.ranking[qid]] == pytest.approx([s for _, s in ranking], abs=1e-4)
    # TW-BERT re-scoring bm25's documents gives each the score it has in TW-BERT's own run
    model = Model.load(tmp / "twbert")
    full = twbert_search(model, index, [Query(q, t) for q, t in zip(topics.qid, topics["query"])], depth=1000)
    rescored = frame_to_run((Lexical(index, "bm25", depth=20) >> TWBert(model, index)).transform(topics))
    compared = 0
    for qid, ranking in rescored.ranking.items():
        own = dict(full.ranking[qid])
        for doc, score in ranking:
            # TW-BERT's run has Anserini's scores (4 decimals; tied ones lowered by i·1e-6), re-scoring Lucene's own
            assert score == pytest.approx(own.get(doc, 0.0), abs=1e-4), (qid, doc)
            compared += 1
    assert compared == 20 * len(topics)


def test_a_qid_with_two_query_texts_is_refused():
    """Issue 50: a repeated qid with another text was scored as its first text, silently."""
    from irglow.runs.frames import queries_of as _queries

    frame = pd.DataFrame({"qid": ["1", "1", "2"], "query": ["apple pie", "apple pie", "fig"], "docno": ["a", "b", "c"]})
    assert [(q.query_id, q.text) for q in _queries(frame)] == [("1", "apple pie"), ("2", "fig")]
    with pytest.raises(ValueError, match="qid 1 has 2 different query texts"):
        _queries(pd.DataFrame({"qid": ["1", "1"], "query": ["apple pie", "cherry"]}))
