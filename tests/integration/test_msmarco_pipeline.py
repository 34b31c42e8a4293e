"""``make run-msmarco``'s data path, offline: a miniature collection written in the exact file layout
ir_datasets expects for ``msmarco-document`` (TREC-format documents with url / title / body lines,
gzipped query TSVs and qrels, plain DL qrels), then the whole configs/msmarco.toml pipeline on it
— every stage, every test split — with tiny budgets; then the same job under ``torchrun`` with two processes
(``make run-msmarco GPUS=2``), a rank killed mid-job, and the job resumed."""

from __future__ import annotations

import gzip
import json
import os
import signal
import subprocess
import sys
import time
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


def miniature(root: Path) -> dict[str, str]:
    """The environment the miniature runs in: its ir_datasets home, and no disk check — ir_datasets checks that
    the disk holds the real collection's document store (14.4 GB) before it builds the miniature's (kilobytes;
    CI's /tmp has 5 GB free), and its own models folder."""
    return {"IR_DATASETS_HOME": str(root / "irds"), "IR_DATASETS_SKIP_DISK_FREE": "true",
            "IRGLOW_MODELS": str(root / "models")}


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


@pytest.fixture(scope="module")
def one_process(module_tmp):
    """The whole configs/msmarco.toml on the miniature collection, in one process, with the tiny dropout-free BERT
    and two batches per optimizer step (ACCUM: one on each rank under two processes, the same steps)."""
    from tests.integration.torchrun import tiny_bert

    root = module_tmp
    counts = write_msmarco_document(root / "irds")
    bert = tiny_bert(root / "tiny-bert")
    cmd = [sys.executable, "-m", "irglow", "run", "--config", "configs/msmarco.toml"]
    for s in tiny_settings(bert, root / "runs", root / "data"):
        cmd += ["--set", s]
    env = {**os.environ, **miniature(root), "OMP_NUM_THREADS": "1"}
    proc = subprocess.run(cmd, cwd=ROOT, env=env, capture_output=True, text=True, timeout=900)
    assert proc.returncode == 0, proc.stdout[-3000:] + proc.stderr[-6000:]
    return root, counts


SPLITS = ("dev", "trec-dl-2019")  # the torchrun job's test splits
ACCUM = [f"{t}.grad_accum=2" for t in ("twbert", "glow", "rerank.monobert", "rerank.nrmf")]


def tiny_settings(bert: str, out: Path, data: Path) -> list[str]:
    """TINY budgets, two batches per optimizer step, the output and data folders, and every BERT the tiny one
    without dropout."""
    return [*TINY, *ACCUM, f"output.dir={out}", f"data_dir={data}", f"twbert.model.base_model={bert}",
            f"glow.model.base_model={bert}", f"rerank.monobert.model.base_model={bert}",
            "rerank.monobert.model.dropout=0.0", "rerank.nrmf.model.dropout=0.0"]


@pytest.mark.slow
def test_run_msmarco_pipeline_on_a_miniature_msmarco_document(one_process):
    tmp_path, counts = one_process
    out = tmp_path / "runs"
    expected = {"bm25", "bm25-rm3", "bm25-mf", "bm25f", "tfidf", "bm25-ngram", "twbert", "twbert-rm3",
                "bert", "glow", "bm25f+bert", "bm25f+glow", "monobert", "nrmf", "monobert(bm25f+glow)",
                "nrmf(bm25f+glow)"}
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
    assert sorted(p.name for p in (out.parent / "models").glob("*-train")) == ["bert-train", "glow-train", "monobert-train",
                                                            "nrmf-train", "twbert-train"]


def _children(pid: int) -> dict[int, int]:
    """{rank: pid} of the workers a torchrun process started (read from /proc)."""
    ranks = {}
    for proc in Path("/proc").iterdir():
        if not proc.name.isdigit():
            continue
        try:
            ppid = int((proc / "stat").read_text().rsplit(")", 1)[1].split()[1])
            env = dict(e.split("=", 1) for e in (proc / "environ").read_text().split("\0") if "=" in e)
        except (OSError, IndexError, ValueError):
            continue
        if ppid == pid and "RANK" in env:
            ranks[int(env["RANK"])] = int(proc.name)
    return ranks


def _same_runs(one: dict[str, str], two: dict[str, str]) -> None:
    assert sorted(one) == sorted(two)
    for name in one:
        if one[name] == two[name]:
            continue
        assert "nrmf" in name or "monobert" in name, f"{name} differs"  # re-ranked: float precision
        a, b = ([line.split() for line in text.splitlines()] for text in (one[name], two[name]))
        assert [r[:4] + r[5:] for r in a] == [r[:4] + r[5:] for r in b], name  # the same ranking
        assert all(abs(float(x[4]) - float(y[4])) < 1e-5 for x, y in zip(a, b)), name


@pytest.mark.slow
def test_pipeline_under_torchrun_equals_one_process_and_resumes_after_a_killed_rank(one_process, tmp_path):
    """Two processes (gloo) give what one process gives with the same settings (issue 59.8); a rank killed
    mid-job stops the job at once with torchrun naming it; launched again, the job continues from what was
    finished.  Lexical, TW-BERT and dense runs are byte-identical; re-ranked runs score batches of other
    compositions, so their scores agree to 1e-5 and their rankings exactly; the tables are identical."""
    from tests.integration.torchrun import environment, irglow, launcher, run_files

    root, _ = one_process
    env = {**miniature(root), "IRGLOW_MODELS": str(tmp_path / "models")}  # trained again, by two processes
    # rank 1 is killed once TW-BERT's runs are recorded (GLOW trains and encodes next)
    # two of the three test splits: a second split under torchrun reuses what the first trained, as the third would
    two = ["run", "--config", "configs/msmarco.toml", "--set", f"collection.test_split={list(SPLITS)}"]
    for s in tiny_settings(str(root / "tiny-bert"), tmp_path / "two", tmp_path / "data2"):
        two += ["--set", s]
    job = subprocess.Popen(launcher(2) + two, cwd=ROOT, env=environment(**env), stdout=subprocess.PIPE,
                           stderr=subprocess.PIPE, text=True)
    record = tmp_path / "two" / "dev" / ".stages" / "twbert.json"
    deadline = time.time() + 600
    while not record.is_file() and job.poll() is None and time.time() < deadline:
        time.sleep(0.2)
    ranks = _children(job.pid)
    assert record.is_file() and set(ranks) == {0, 1}, job.stderr.read()[-3000:] if job.poll() is not None else ""
    os.kill(ranks[1], signal.SIGKILL)
    killed = time.time()
    _, err = job.communicate(timeout=300)
    assert job.returncode != 0 and time.time() - killed < 120  # the job stops; nobody waits for rank 1
    assert "rank      : 1" in err and "Signal 9 (SIGKILL)" in err, err[-3000:]

    # launched again: what was finished is reused, the rest is done, and it all equals one process's
    irglow(two, 2, ROOT, **env)
    stages = json.loads((tmp_path / "two" / "dev" / "manifest.json").read_text())["stages"]
    assert stages["lexical:bm25"] == stages["twbert"] == "reused" and stages["rerank:monobert"] == "ran"
    one = {name: text for name, text in run_files(root / "runs").items() if name.split("/")[0] != "trec-dl-2020"}
    _same_runs(one, run_files(tmp_path / "two"))
    for split in SPLITS:
        assert (root / "runs" / split / "results.csv").read_text() == \
            (tmp_path / "two" / split / "results.csv").read_text()
    manifest = json.loads((tmp_path / "two" / "dev" / "manifest.json").read_text())
    assert manifest["world_size"] == 2
    # rank 0 alone wrote: no half-written file, no rank's scratch left behind
    assert not [p for p in (tmp_path / "two").rglob("*") if ".tmp" in p.name or ".rank" in p.name]
    for trainer in ("twbert", "bert", "glow", "monobert", "nrmf"):
        trained = list((tmp_path / "models" / f"{trainer}-train").glob("*/training.json"))
        assert len(trained) == 1 and json.loads(trained[0].read_text())["state"]["step"] >= 1, trainer
