"""``make run-msmarco``'s data path, offline: a miniature collection written in the exact file layout
ir_datasets expects for ``msmarco-document`` (TREC-format documents with url / title / body lines,
gzipped query TSVs and qrels, plain DL qrels), then the whole configs/msmarco.toml pipeline on it
— every stage, every test split — with tiny budgets."""

from __future__ import annotations

import gzip
import json
import os
import subprocess
import sys
from pathlib import Path

import pytest


ROOT = Path(__file__).parents[2]
TINY = ["index.threads=1", "lexical.threads=1", "lexical.depth=30",
        "twbert.epochs=1", "twbert.candidates=10", "twbert.eval_every=0", "twbert.batch_queries=4",
        "twbert.val_fraction=0.2", "twbert.model.max_query_tokens=16",
        "glow.max_steps=2", "glow.batch_size=4", "glow.val_fraction=0.2", "glow.val_pool_depth=5",
        "glow.model.num_layers=1", "glow.model.field_max_tokens={'body': 16}",
        "rerank.depth=5", "rerank.monobert.max_steps=2", "rerank.monobert.val_fraction=0.2",
        "rerank.monobert.val_depth=5", "rerank.monobert.model.default_field_tokens=16",
        "rerank.nrmf.epochs=1", "rerank.nrmf.val_fraction=0.2", "rerank.nrmf.val_depth=5"]


def write_msmarco_document(home: Path) -> dict[str, int]:
    """The demo collection in msmarco-document's download layout under ``home``; returns query counts."""
    from irglow.data.demo import DemoCollection, DemoConfig

    demo = DemoCollection(DemoConfig(n_topics=16, docs_per_topic=4, n_roundups=10, n_background=10))
    base = home / "msmarco-document"
    for sub in ("train", "dev", "trec-dl-2019", "trec-dl-2020"):
        (base / sub).mkdir(parents=True, exist_ok=True)
    with gzip.open(base / "collection.tsv.gz", "wt", encoding="utf-8") as f:  # ir_datasets' name for the .trec.gz
        for d in demo.docs_iter():
            body = " ".join(d.fields.get("body", ())) or ""
            title = " ".join(d.fields.get("title", ())) or ""
            url = " ".join(d.fields.get("url", ())) or ""
            f.write(f"<DOC>\n<DOCNO>D{d.doc_id}</DOCNO>\n<TEXT>\n{url}\n{title}\n{body}\n</TEXT>\n</DOC>\n")
    test = demo.queries("test")
    splits = {"train": demo.queries("train"), "dev": test[: len(test) // 2],
              "trec-dl-2019": test[len(test) // 2:], "trec-dl-2020": test[len(test) // 2:]}
    qrels = demo.qrels("train") + demo.qrels("test")
    for split, queries in splits.items():
        ids = {q.query_id for q in queries}
        with gzip.open(base / split / "queries.tsv.gz", "wt", encoding="utf-8") as f:
            f.writelines(f"{q.query_id}\t{q.text}\n" for q in queries)
        lines = [f"{r.query_id} 0 D{r.doc_id} {r.relevance}\n" for r in qrels if r.query_id in ids]
        if split.startswith("trec-dl"):  # plain text, graded
            (base / split / "qrels").write_text("".join(lines))
        else:
            with gzip.open(base / split / "qrels.gz", "wt") as f:
                f.writelines(lines)
    return {s: len(q) for s, q in splits.items()}


@pytest.mark.slow
def test_run_msmarco_pipeline_on_a_miniature_msmarco_document(tmp_path):
    counts = write_msmarco_document(tmp_path / "irds")
    out = tmp_path / "runs"
    sets = [*TINY, f"output.dir={out}", f"data_dir={tmp_path / 'data'}"]
    cmd = [sys.executable, "-m", "irglow", "run", "--config", "configs/msmarco.toml"]
    for s in sets:
        cmd += ["--set", s]
    env = {**os.environ, "IR_DATASETS_HOME": str(tmp_path / "irds"), "OMP_NUM_THREADS": "1"}
    proc = subprocess.run(cmd, cwd=ROOT, env=env, capture_output=True, text=True, timeout=900)
    assert proc.returncode == 0, proc.stdout[-3000:] + proc.stderr[-6000:]
    expected = {"bm25", "bm25-rm3", "bm25-mf", "bm25f", "tfidf", "bm25-ngram", "twbert", "twbert-rm3",
                "bert", "glow", "bm25f+bert", "bm25f+glow", "monobert", "nrmf", "bm25f+glow+monobert",
                "bm25f+glow+nrmf"}
    for split in ("dev", "trec-dl-2019", "trec-dl-2020"):
        folder = out / split
        assert {p.stem for p in folder.glob("*.run")} == expected, split
        table = (folder / "results.csv").read_text()
        assert all(m in table.splitlines()[0] for m in ("RR@10", "RR@100", "nDCG@10", "R@100", "R@1000", "AP"))
        bm25 = [line.split() for line in (folder / "bm25.run").read_text().splitlines()]
        assert {row[0] for row in bm25} <= {line.split("\t")[0] for line in gzip.open(
            tmp_path / "irds" / "msmarco-document" / split / "queries.tsv.gz", "rt")}
        assert len({row[0] for row in bm25}) == counts[split]
        assert all(row[2].startswith("D") for row in bm25)  # ids from the msmarco files, not the demo's
        manifest = json.loads((folder / "manifest.json").read_text())
        assert manifest["config"]["collection"]["test_split"] == split
    # trained once, shared by the three splits
    assert sorted(p.name for p in out.glob("*-train")) == ["bert-train", "glow-train", "monobert-train",
                                                            "nrmf-train", "twbert-train"]
