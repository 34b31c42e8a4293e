"""Issue 21, "stale inputs": between two pipeline runs into one folder, edit a query's text, a training
judgment, the corpus (keeping its size and mtime) and a setting; exactly the stages that read what
changed run again, and every table equals a run into an empty folder."""

from __future__ import annotations

import json
import os

from irglow.data.demo import DemoCollection, DemoConfig
from irglow.models.source import current_train_dir


def _beir_from_demo(folder) -> None:
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


def _config(folder, out, data, b=0.4) -> dict:
    return {"seed": 13, "data_dir": str(data),
            "collection": {"name": str(folder), "train_split": "train", "test_split": "test"},
            "index": {"threads": 1}, "lexical": {"systems": ["bm25", "bm25f"], "depth": 30, "b": b},
            "eval": {"measures": ["nDCG@10", "AP"], "baseline": "bm25"}, "output": {"dir": str(out)},
            "rerank": {"enabled": True, "models": ["nrmf"], "depth": 10,
                       "nrmf": {"epochs": 1, "val_depth": 10, "negatives": 2, "batch_queries": 4,
                                "model": {"embedding_dim": 8, "filters": 8, "dim": 8, "hidden": 8,
                                          "hash_buckets": 1000}}}}


def _stages(out) -> dict:
    return json.loads((out / "manifest.json").read_text())["stages"]


def _outputs(out) -> dict[str, bytes]:
    return {p.name: p.read_bytes() for p in sorted(out.glob("*.run")) + [out / "results.csv"]}


def _same_as_fresh(tmp_path, folder, config_b, out, n) -> None:
    from irglow.pipeline import run_pipeline

    fresh = tmp_path / f"fresh{n}"
    run_pipeline(_config(folder, fresh, tmp_path / f"data{n}", b=config_b))
    assert _outputs(out) == _outputs(fresh)


def test_exactly_the_dependent_stages_rerun(tmp_path, monkeypatch):
    from irglow.pipeline import run_pipeline

    monkeypatch.chdir(tmp_path)
    folder, out, data = tmp_path / "c", tmp_path / "out", tmp_path / "data"
    _beir_from_demo(folder)
    run_pipeline(_config(folder, out, data))
    assert set(_stages(out).values()) == {"ran"}
    run_pipeline(_config(folder, out, data))
    assert set(_stages(out).values()) == {"reused"}

    # a test query's text: every stage searches the test queries
    test_qid = (folder / "qrels" / "test.tsv").read_text().splitlines()[1].split("\t")[0]
    lines = [json.loads(x) for x in (folder / "queries.jsonl").read_text().splitlines()]
    for q in lines:
        if q["_id"] == test_qid:
            q["text"] = q["text"].split()[0]
    (folder / "queries.jsonl").write_text("".join(json.dumps(q) + "\n" for q in lines))
    run_pipeline(_config(folder, out, data))
    assert _stages(out) == {"lexical:bm25": "ran", "lexical:bm25f": "ran", "rerank:nrmf": "ran"}
    _same_as_fresh(tmp_path, folder, 0.4, out, 1)

    # a training judgment: only the stage that trains on it
    train = (folder / "qrels" / "train.tsv").read_text().splitlines()
    (folder / "qrels" / "train.tsv").write_text("\n".join(train[:-1]) + "\n")
    run_pipeline(_config(folder, out, data))
    assert _stages(out) == {"lexical:bm25": "reused", "lexical:bm25f": "reused", "rerank:nrmf": "ran"}
    inputs = json.loads((current_train_dir(out / "nrmf-train") / "inputs.json").read_text())["inputs"]["source"]
    from irglow.data.beir import BeirCollection
    from irglow.utils.digest import qrels_digest

    assert inputs["qrels"] == qrels_digest(BeirCollection(folder).qrels("train"))  # retrained on the new qrels
    _same_as_fresh(tmp_path, folder, 0.4, out, 2)

    # the corpus, same size and mtime (cp -p, rsync -a, tar)
    corpus = folder / "corpus.jsonl"
    stat = corpus.stat()
    text = corpus.read_text()
    word = json.loads(text.splitlines()[0])["title"].split()[0]
    corpus.write_text(text.replace(word, word[::-1]))
    os.utime(corpus, ns=(stat.st_atime_ns, stat.st_mtime_ns))
    assert corpus.stat().st_size == stat.st_size
    run_pipeline(_config(folder, out, data))
    assert set(_stages(out).values()) == {"ran"}
    _same_as_fresh(tmp_path, folder, 0.4, out, 3)

    # a setting: the lexical stages and the re-ranker fed by bm25
    run_pipeline(_config(folder, out, data, b=0.75))
    assert set(_stages(out).values()) == {"ran"}
    _same_as_fresh(tmp_path, folder, 0.75, out, 4)
