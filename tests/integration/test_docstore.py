"""irglow/data/docstore.py: documents by id, never the corpus in memory.

A collection whose documents count themselves (each one increments a counter when made and decrements it when
freed) runs through the pipeline with every stage enabled, and through the re-rank, GLOW and PyTerrier entry
points: at no time are more than a few of its documents alive, so nothing iterated the corpus into a container.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from irglow.data.beir import BeirCollection
from irglow.data.collection import SampledCollection, load_collection
from irglow.data.docstore import MissingDocument, docs_store
from irglow.data.records import Document
from irglow.data.union import UnionCollection
from tests.integration.pipelines import SMALL_DEMO, beir_from_demo, small_pipeline

ALIVE = [0, 0]  # [alive now, the most alive at once]


class Counted(Document):
    """A document that counts itself while it lives."""

    def __del__(self):
        ALIVE[0] -= 1


class CountingCollection:
    """The small demo collection, each document made anew as it is read, counted while it lives."""

    def __init__(self, spec: str = SMALL_DEMO):
        self.base = load_collection(spec)
        self.name, self.fields = f"counted-{self.base.name}", self.base.fields

    def docs_iter(self):
        for d in self.base.docs_iter():
            doc = Counted(d.doc_id, dict(d.fields))
            ALIVE[0] += 1
            ALIVE[1] = max(ALIVE)
            yield doc
            del doc

    def docs_count(self):
        return self.base.docs_count()

    def queries(self, split):
        return self.base.queries(split)

    def qrels(self, split):
        return self.base.qrels(split)


BOUND = 4  # documents of the collection alive at once: one read at a time, nothing kept


@pytest.fixture
def counted(monkeypatch):
    ALIVE[:] = [0, 0]
    collection = CountingCollection()
    assert collection.docs_count() > 10 * BOUND  # holding the corpus would show
    return collection


def test_a_beir_store_reads_what_docs_iter_reads(tmp_path):
    beir_from_demo(tmp_path / "beir")
    with open(tmp_path / "beir" / "corpus.jsonl", "a", encoding="utf-8") as f:
        f.write("\n" + json.dumps({"_id": "ü-1", "title": "Café", "text": ["two", "instances"]}) + "\n")
    collection = BeirCollection(tmp_path / "beir")
    docs = list(collection.docs_iter())
    store = docs_store(collection)
    assert list(store.ids()) == [d.doc_id for d in docs] and len(store) == len(docs)
    assert list(store.sequence()) == docs and store.sequence()[3:5].take([1, 0]) == [docs[4], docs[3]]
    assert store["ü-1"] == make("ü-1", title=("Café",), text=("two", "instances"))
    assert store.get_many([docs[2].doc_id, docs[0].doc_id]) == [docs[2], docs[0]]
    with pytest.raises(MissingDocument, match="document 'nope' is not in beir-beir-"):
        store["nope"]
    assert docs_store(collection) is store  # one per collection object


def make(doc_id, **fields):
    return Document(doc_id, fields)


def test_union_sample_and_exported_stores():
    demo = load_collection(SMALL_DEMO)
    union = UnionCollection([(demo, "train"), (load_collection("demo:n_topics=8"), "train")])
    assert list(docs_store(union).sequence()) == list(union.docs_iter())
    sample = SampledCollection(demo, ["test"], max_docs=5)
    assert list(docs_store(sample).sequence()) == list(sample.docs_iter())
    counted = CountingCollection()
    store = docs_store(counted)
    assert list(store.sequence()) == [Document(d.doc_id, dict(d.fields)) for d in counted.base.docs_iter()]



def test_an_export_that_fails_half_way_leaves_no_copy(tmp_path, monkeypatch):
    import tempfile

    class Broken:
        name = "broken"

        def docs_iter(self):
            yield Document("a", {"body": ("one",)})
            raise OSError(28, "No space left on device")

    monkeypatch.setattr(tempfile, "tempdir", str(tmp_path))
    with pytest.raises(OSError, match="No space"):
        docs_store(Broken())
    assert list((tmp_path / "irglow-docstores").iterdir()) == []


def test_a_killed_processs_exported_copy_is_removed_by_the_next_start(tmp_path, monkeypatch):
    """Issue 59.12: kill -9 runs no finalizer, and each such copy was a whole corpus left in the temp folder."""
    import os
    import signal
    import subprocess
    import sys
    import tempfile

    script = ("import sys, tempfile; tempfile.tempdir = sys.argv[1]\n"
              "from irglow.data.collection import load_collection\nfrom irglow.data.docstore import docs_store\n"
              "store = docs_store(load_collection('demo:n_topics=4,docs_per_topic=2,n_roundups=2,n_background=2'))\n"
              "print(store.path, flush=True)\nsys.stdin.read()\n")
    proc = subprocess.Popen([sys.executable, "-c", script, str(tmp_path)], stdin=subprocess.PIPE,
                            stdout=subprocess.PIPE, text=True)
    left = Path(proc.stdout.readline().strip())  # the store exists once its path is printed
    assert left.is_file() and left.parent == tmp_path / "irglow-docstores"
    monkeypatch.setattr(tempfile, "tempdir", str(tmp_path))
    live = docs_store(CountingCollection())
    assert left.is_file()  # a live process's copy is left alone
    os.kill(proc.pid, signal.SIGKILL)
    proc.wait()
    again = docs_store(CountingCollection())
    assert not left.exists() and live.path.is_file() and again.path.is_file()


@pytest.mark.slow
def test_the_pipeline_never_holds_the_corpus(tmp_path, monkeypatch, counted):
    """Every stage enabled (TW-BERT, GLOW, monoBERT and NRM-F, a fusion): at most BOUND documents alive."""
    import irglow.preparation as preparation

    monkeypatch.setattr(preparation, "load_collection", lambda spec: counted)
    config = small_pipeline(
        tmp_path / "out", tmp_path / "data",
        twbert={"enabled": True, "rm3": False, "epochs": 1, "candidates": 10, "eval_every": 0},
        glow={"enabled": True, "variants": ["glow"], "max_steps": 2, "batch_size": 4, "val_max_docs": 0,
              "val_pool_depth": 5, "model": {"num_layers": 1, "field_max_tokens": {"body": 8}}},
        rerank={"enabled": True, "models": ["monobert", "nrmf"], "depth": 5,
                "monobert": {"max_steps": 2, "val_depth": 5},
                "nrmf": {"epochs": 1, "val_depth": 5, "negatives": 2, "batch_queries": 4}},
        fusion={"enabled": True, "runs": [["twbert", "glow"]]})
    from irglow.pipeline import run_pipeline

    run_pipeline(config)
    assert {p.name for p in (tmp_path / "out").glob("*.run")} >= {"twbert.run", "glow.run", "monobert.run",
                                                                  "nrmf.run", "twbert+glow.run"}
    assert ALIVE[1] <= BOUND, f"{ALIVE[1]} documents of the collection were alive at once"


@pytest.mark.slow
def test_the_rerank_glow_and_pyterrier_entry_points_never_hold_the_corpus(tmp_path, monkeypatch, counted):
    """GLOW's corpus encoding, ``irglow rerank`` and the PyTerrier Glow and re-ranker transformers, each given the
    collection: at most BOUND of its documents alive."""
    pd = pytest.importorskip("pandas")
    pytest.importorskip("pyterrier")
    import irglow.commands.rerank as rerank_cli
    from irglow.cli import main
    from irglow.index.lucene_index import IndexConfig, build_index
    from irglow.index.stats import CollectionStats
    from irglow.lexical.searchers import LexicalConfig, LexicalSearcher
    from irglow.models.glow.model import GlowConfig, GlowEncoder
    from irglow.models.glow.runner import glow_run
    from irglow.models.rerank.monobert import MonoBERT, MonoBERTConfig
    from irglow.pyterrier import CrossEncoder, Glow

    index = build_index(counted, IndexConfig(threads=1), root=tmp_path / "data")
    stats = CollectionStats.load(index)
    queries = counted.queries("test")
    model = GlowEncoder.from_pretrained_bert(GlowConfig(variant="glow", num_layers=1, fields=list(index.fields)))
    run, _ = glow_run(model, index, stats, docs_store(counted).sequence(), queries, tmp_path, "glow", depth=10)
    assert len(run) == len(queries)

    first = LexicalSearcher(index, LexicalConfig("bm25", depth=10)).search(queries)
    first.write(tmp_path / "bm25.run")
    MonoBERT.from_pretrained_bert(MonoBERTConfig(default_field_tokens=32)).save(tmp_path / "monobert")
    monkeypatch.setattr(rerank_cli, "load_collection", lambda spec: counted, raising=False)
    import irglow.data.collection as collection_module
    monkeypatch.setattr(collection_module, "load_collection", lambda spec: counted)
    assert main(["rerank", str(tmp_path / "bm25.run"), "--model", str(tmp_path / "monobert"), "--data", "counted",
                 "--split", "test", "--depth", "5", "-o", str(tmp_path / "mono.run")]) == 0

    frame = pd.DataFrame({"qid": [q.query_id for q in queries], "query": [q.text for q in queries]})
    results = first.top(5) if hasattr(first, "top") else first
    rows = [(q, t, d, s, r) for q, t in zip(frame.qid, frame["query"])
            for r, (d, s) in enumerate(results.ranking.get(q, [])[:5])]
    ranked = pd.DataFrame(rows, columns=["qid", "query", "docno", "score", "rank"])
    assert len(Glow(model, index, docs=counted).transform(ranked)) > 0
    assert len(CrossEncoder(str(tmp_path / "monobert"), docs=counted).transform(ranked)) > 0
    assert ALIVE[1] <= BOUND, f"{ALIVE[1]} documents of the collection were alive at once"


def test_a_repeated_id_stops_the_store_naming_both_lines(tmp_path):
    beir_from_demo(tmp_path / "beir")
    corpus = tmp_path / "beir" / "corpus.jsonl"
    first = corpus.read_text(encoding="utf-8").splitlines()[0]
    with open(corpus, "a", encoding="utf-8") as f:
        f.write(first + "\n")
    lines = len(corpus.read_text(encoding="utf-8").splitlines())
    with pytest.raises(Exception, match=rf"corpus.jsonl:{lines}: duplicate document id .* \(first on line 1\)"):
        docs_store(BeirCollection(tmp_path / "beir"))


def test_a_gzipped_corpus_is_read_by_id_as_a_plain_one(tmp_path):
    """Issue 59.16: a gzipped corpus.jsonl indexed and searched, then every look-up by id read gzip bytes."""
    import gzip

    from tests.files import write_beir

    folder = Path(write_beir(tmp_path / "c"))
    plain = docs_store(BeirCollection(folder)).get_many(["d2", "d1"])
    corpus = folder / "corpus.jsonl"
    corpus.write_bytes(gzip.compress(corpus.read_bytes()))
    assert docs_store(BeirCollection(folder)).get_many(["d2", "d1"]) == plain
