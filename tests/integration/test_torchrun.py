"""The whole pipeline under ``torchrun`` on CPUs (gloo): two processes give what one process gives, a rank killed
mid-job stops the job at once with torchrun naming it, and the job launched again continues from what was
finished.

The miniature MS MARCO collection runs through every stage of configs/msmarco.toml: lexical runs (queries split
over the ranks), TW-BERT, GLOW/BERT, monoBERT and NRM-F trained data-parallel through the one training loop,
corpus encoding in shards, re-ranking split by queries.  Two processes with ``grad_accum`` 1 train what one
process trains with ``grad_accum`` 2 (the same batches, the same draws; the tiny BERT has no dropout, whose
masks are each process's own).  Lexical, TW-BERT and dense runs are byte-identical; re-ranked runs score
batches of other compositions, so their scores agree to float precision (1e-5) and their rankings exactly;
the tables are identical."""

from __future__ import annotations

import json
import signal
import subprocess
import time
from pathlib import Path

import pytest

from tests.integration.test_msmarco_pipeline import TINY, write_msmarco_document
from tests.integration.torchrun import ROOT, environment, irglow, launcher, run_files, tiny_bert

TRAINERS = ("twbert", "glow", "rerank.monobert", "rerank.nrmf")


def _sets(bert: str, out: Path, data: Path) -> list[str]:
    sets = [*TINY, f"output.dir={out}", f"data_dir={data}", f"twbert.model.base_model={bert}",
            f"glow.model.base_model={bert}", f"rerank.monobert.model.base_model={bert}",
            "rerank.monobert.model.dropout=0.0", "rerank.nrmf.model.dropout=0.0"]
    return [a for s in sets for a in ("--set", s)]


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
def test_pipeline_under_torchrun_equals_one_process_and_resumes_after_a_killed_rank(tmp_path):
    bert = tiny_bert(tmp_path / "tiny-bert")
    write_msmarco_document(tmp_path / "irds")
    env = {"IR_DATASETS_HOME": str(tmp_path / "irds")}
    config = ["run", "--config", "configs/msmarco.toml"]
    # one process, two batches per optimizer step
    accum = [a for t in TRAINERS for a in ("--set", f"{t}.grad_accum=2")]
    irglow(config + _sets(bert, tmp_path / "one", tmp_path / "data1") + accum, 1, ROOT, **env)

    # two processes: rank 1 is killed once TW-BERT's runs are recorded (GLOW trains and encodes next)
    two = config + _sets(bert, tmp_path / "two", tmp_path / "data2")
    job = subprocess.Popen(launcher(2) + two, cwd=ROOT, env=environment(**env), stdout=subprocess.PIPE,
                           stderr=subprocess.PIPE, text=True)
    record = tmp_path / "two" / "dev" / ".stages" / "twbert.json"
    deadline = time.time() + 600
    while not record.is_file() and job.poll() is None and time.time() < deadline:
        time.sleep(0.2)
    ranks = _children(job.pid)
    assert record.is_file() and set(ranks) == {0, 1}, job.stderr.read()[-3000:] if job.poll() is not None else ""
    import os

    os.kill(ranks[1], signal.SIGKILL)
    killed = time.time()
    _, err = job.communicate(timeout=300)
    assert job.returncode != 0 and time.time() - killed < 120  # the job stops; nobody waits for rank 1
    assert "rank      : 1" in err and "Signal 9 (SIGKILL)" in err, err[-3000:]

    # launched again: what was finished is reused, the rest is done, and it all equals one process's
    irglow(two, 2, ROOT, **env)
    stages = json.loads((tmp_path / "two" / "dev" / "manifest.json").read_text())["stages"]
    assert stages["lexical:bm25"] == stages["twbert"] == "reused" and stages["rerank:monobert"] == "ran"
    _same_runs(run_files(tmp_path / "one"), run_files(tmp_path / "two"))
    for split in ("dev", "trec-dl-2019", "trec-dl-2020"):
        assert (tmp_path / "one" / split / "results.csv").read_text() == \
            (tmp_path / "two" / split / "results.csv").read_text()
    manifest = json.loads((tmp_path / "two" / "dev" / "manifest.json").read_text())
    assert manifest["world_size"] == 2
    # rank 0 alone wrote: no half-written file, no rank's scratch left behind
    assert not [p for p in (tmp_path / "two").rglob("*") if ".tmp" in p.name or ".rank" in p.name]
    for trainer in ("twbert", "bert", "glow", "monobert", "nrmf"):
        trained = list((tmp_path / "two" / f"{trainer}-train").glob("*/training.json"))
        assert len(trained) == 1 and json.loads(trained[0].read_text())["state"]["step"] >= 1, trainer


ZERO_SHOT = """seed = 13
data_dir = "{data}"
[zero_shot]
train = "demo:n_topics=12,docs_per_topic=4,n_roundups=10,n_background=10"
train_split = "train"
collections = ["demo:seed=7,n_topics=10,docs_per_topic=4,n_roundups=10,n_background=10"]
[index]
threads = 1
[lexical]
systems = ["bm25", "bm25f"]
depth = 50
tune_bm25f = true
threads = 1
[eval]
measures = ["nDCG@10", "AP"]
baseline = "bm25"
[output]
dir = "{out}"
[twbert]
enabled = true
rm3 = false
epochs = 1
candidates = 10
eval_every = 0
batch_queries = 4
val_fraction = 0.2
grad_accum = {accum}
model = {{ max_query_tokens = 16, base_model = "{bert}" }}
[fusion]
enabled = true
runs = ["bm25f+twbert"]
"""


@pytest.mark.slow
def test_zero_shot_under_torchrun_equals_one_process(tmp_path):
    bert = tiny_bert(tmp_path / "tiny-bert")
    for name, nproc in (("one", 1), ("two", 2)):
        config = tmp_path / f"{name}.toml"
        config.write_text(ZERO_SHOT.format(data=tmp_path / f"data-{name}", out=tmp_path / name, bert=bert,
                                           accum=3 - nproc))
        irglow(["zero-shot", "--config", str(config)], nproc, tmp_path)
    assert run_files(tmp_path / "one") == run_files(tmp_path / "two")
    assert (tmp_path / "one" / "zero-shot.csv").read_text() == (tmp_path / "two" / "zero-shot.csv").read_text()
    assert json.loads((tmp_path / "two" / "manifest.json").read_text())["world_size"] == 2
