"""The small pipeline the integration tests start from: a 12-topic demo collection, one index thread,
nDCG@10 against BM25; each test adds the stages it is about, so a change to the common part is made once."""

from __future__ import annotations

from typing import Any

SMALL_DEMO = "demo:n_topics=12,docs_per_topic=4,n_roundups=10,n_background=10"


def small_pipeline(out, data, systems=("bm25", "bm25f"), depth: int = 50, **stages: Any) -> dict:
    return {"seed": 13, "data_dir": str(data),
            "collection": {"name": SMALL_DEMO, "train_split": "train", "test_split": "test"},
            "index": {"threads": 1},
            "lexical": {"systems": list(systems), "depth": depth},
            "eval": {"measures": ["nDCG@10"], "baseline": "bm25"},
            "output": {"dir": str(out)}, **stages}
