"""irglow's BM25 run equals Pyserini's own: the same top 1000 in the same order for every query, on a collection
with many tied scores, indexed and searched by Pyserini's command-line tools beside irglow's.

A researcher reproducing a Pyserini (2CR) figure must get it to the last digit, and where scores tie the figure
depends on the order: Anserini breaks ties by document id ascending and lowers the i-th tied score by i·1e-6
(its ScoreTiesAdjusterReranker) so that trec_eval keeps that order.
"""

from __future__ import annotations

import json
import os
import random
import subprocess
import sys

import numpy as np
import pytest

from irglow.data.beir import BeirCollection
from irglow.index.jvm import find_java
from irglow.index.lucene_index import IndexConfig, build_index
from irglow.lexical.searchers import LexicalConfig, LexicalSearcher, anserini_scores
from irglow.runs.trec import Run

WORDS = ["apple", "banana", "cherry", "date", "fig", "grape", "kiwi", "lemon"]


@pytest.fixture(scope="module")
def tied_beir(tmp_path_factory):
    """600 documents of 1–4 words from 8 (a few hundred distinct texts, so most scores tie), two fields, ids in
    an order unlike Lucene's (shuffled, zero-padded and not), 40 queries."""
    rng = random.Random(7)
    root = tmp_path_factory.mktemp("tied-beir")
    ids = [f"d{i}" if i % 3 else f"doc-{i:04d}" for i in range(600)]
    rng.shuffle(ids)
    with open(root / "corpus.jsonl", "w") as out:
        for i in ids:
            out.write(json.dumps({"_id": i, "title": rng.choice(["", "fruit", "fresh fruit"]),
                                  "text": " ".join(rng.choices(WORDS, k=rng.randint(1, 4)))}) + "\n")
    queries = {f"q{j}": " ".join(rng.sample(WORDS, rng.randint(1, 3))) for j in range(40)}
    with open(root / "queries.jsonl", "w") as out:
        for q, text in queries.items():
            out.write(json.dumps({"_id": q, "text": text}) + "\n")
    (root / "qrels").mkdir()
    (root / "qrels" / "test.tsv").write_text("query-id\tcorpus-id\tscore\n" + "".join(
        f"{q}\t{ids[j]}\t1\n" for j, q in enumerate(queries)))
    return root, queries


def _pyserini(*args: str, cwd) -> None:
    env = {**os.environ, "JAVA_HOME": str(find_java().home), "OPENAI_API_KEY": "unused"}
    done = subprocess.run([sys.executable, "-m", *args], cwd=cwd, env=env, capture_output=True, text=True)
    assert done.returncode == 0, done.stderr[-3000:]


@pytest.mark.slow
def test_bm25_run_equals_pyserinis_search_command(tied_beir, tmp_path):
    root, queries = tied_beir
    _pyserini("pyserini.index.lucene", "--collection", "BeirFlatCollection", "--input", str(root), "--index",
              str(tmp_path / "pyserini-index"), "--generator", "DefaultLuceneDocumentGenerator", "--threads", "1",
              "--storeRaw", cwd=tmp_path)
    (tmp_path / "topics.tsv").write_text("".join(f"{q}\t{t}\n" for q, t in queries.items()))
    _pyserini("pyserini.search.lucene", "--index", str(tmp_path / "pyserini-index"), "--topics",
              str(tmp_path / "topics.tsv"), "--output", str(tmp_path / "pyserini.run"), "--bm25", "--hits", "1000",
              "--threads", "1", "--batch-size", "8", cwd=tmp_path)
    theirs = Run.read(tmp_path / "pyserini.run")

    index = build_index(BeirCollection(root), IndexConfig(threads=1), root=tmp_path / "data")
    ours = LexicalSearcher(index, LexicalConfig("bm25", depth=1000)).search(
        [q for q in BeirCollection(root).queries("test")])
    ours = Run.read(ours.write(tmp_path / "irglow.run"))  # as a file is read back: trec_eval's order

    assert set(ours.ranking) == set(theirs.ranking) == set(queries)
    tied = 0
    for q in queries:
        a, b = ours.ranking[q], theirs.ranking[q]
        assert [d for d, _ in a] == [d for d, _ in b], f"query {q}: another order than Pyserini's"
        assert [f"{s:.6f}" for _, s in a] == [f"{s:.6f}" for _, s in b], f"query {q}: other scores"
        tied += sum(round(x, 4) == round(y, 4) for (_, x), (_, y) in zip(a[:10], a[1:10]))
    assert tied >= 40  # the collection is full of ties inside the top 10


def test_anserini_scores_by_hand():
    """Each score rounded to 4 decimals (2.00004 and 1.99996 → 2.0); the 2nd and 3rd of a run of equal scores
    lowered by 1e-6 and 2e-6; 1.9999 lies 0.98e-4 below the lowered 1.999998, within Anserini's 1e-4, so it
    continues the run (−3e-6); 1.5 starts a new one.  As Pyserini writes them (6 decimals)."""
    got = anserini_scores(np.array([2.00004, 2.0, 1.99996, 1.9999, 1.5], np.float32))
    assert [f"{s:.6f}" for s in got.tolist()] == ["2.000000", "1.999999", "1.999998", "1.999897", "1.500000"]
