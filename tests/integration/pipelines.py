"""The small pipeline the integration tests start from: a 12-topic demo collection, one index thread,
nDCG@10 against BM25; each test adds the stages it is about, so a change to the common part is made once.  And
a small demo collection written as a BEIR folder, for tests that edit a collection's files between runs."""

from __future__ import annotations

import json
from typing import Any

from irglow.data.demo import DemoCollection, DemoConfig

SMALL_DEMO = "demo:n_topics=12,docs_per_topic=4,n_roundups=10,n_background=10"


def small_pipeline(out, data, systems=("bm25", "bm25f"), depth: int = 50, **stages: Any) -> dict:
    return {"seed": 13, "data_dir": str(data),
            "collection": {"name": SMALL_DEMO, "train_split": "train", "test_split": "test"},
            "index": {"threads": 1},
            "lexical": {"systems": list(systems), "depth": depth},
            "eval": {"measures": ["nDCG@10"], "baseline": "bm25"},
            # the results page's topic clusters load MiniLM: tested on their own (test_clusters.py), not per pipeline
            "output": {"dir": str(out), "clusters": 0}, **stages}


def beir_from_demo(folder) -> None:
    demo = DemoCollection(DemoConfig(n_topics=8, docs_per_topic=3, n_roundups=6, n_background=6,
                                     test_fraction=0.5))
    folder.mkdir()
    with open(folder / "corpus.jsonl", "w") as f:
        for d in demo.docs_iter():
            f.write(json.dumps({"_id": d.doc_id, "title": d.text("title"), "text": d.text("body")}) + "\n")
    queries = {q.query_id: q.text for split in ("train", "test") for q in demo.queries(split)}
    (folder / "queries.jsonl").write_text("".join(json.dumps({"_id": k, "text": v}) + "\n" for k, v in queries.items()))
    (folder / "qrels").mkdir()
    for split in ("train", "test"):
        (folder / "qrels" / f"{split}.tsv").write_text(
            "query-id\tcorpus-id\tscore\n" + "".join(f"{r.query_id}\t{r.doc_id}\t{r.relevance}\n"
                                                     for r in demo.qrels(split)))


# a tiny NRM-F (seconds to train) for pipelines that need a trained model
NRMF = {"epochs": 1, "val_depth": 10, "negatives": 2, "batch_queries": 4,
        "model": {"embedding_dim": 8, "filters": 8, "dim": 8, "hidden": 8, "hash_buckets": 1000}}


def nrmf_pipeline(folder, out, data, **rerank) -> dict:
    """BM25 re-ranked by the tiny NRM-F on ``folder``'s test split (``rerank``: more ``[rerank]`` settings)."""
    return {"seed": 13, "data_dir": str(data),
            "collection": {"name": str(folder), "train_split": "train", "test_split": "test"},
            "index": {"threads": 1}, "lexical": {"systems": ["bm25"], "depth": 30},
            "eval": {"measures": ["nDCG@10", "AP"], "baseline": "bm25"}, "output": {"dir": str(out), "clusters": 0},
            "rerank": {"enabled": True, "models": ["nrmf"], "depth": 10, "nrmf": dict(NRMF), **rerank}}


def model_folder(out, name: str):
    """The training folder of the model ``name`` that the run folder ``out`` used (its manifest names it; models
    are kept in the shared models folder, not in ``out``)."""
    import json
    from pathlib import Path

    from irglow.models.source import used_models

    return used_models(json.loads((Path(out) / "manifest.json").read_text())["results"])[name]
