"""Issue 82.1: every command's ``--help`` example (``irglow.cli.EXAMPLES``) is executed as written, in the order a
reader meets them: a model is trained before the searches that load it.  They run in one folder this test makes, with
the substitutions below, each said here and none other:

- the demo collection (``demo``, ``demo:n_topics=120``: ``make run``'s) is a small one (:data:`SMALL_DEMO`), and
  ``beir/scifact`` a small BEIR folder the test writes: the examples' own collections take minutes to train on;
- ``runs/demo/`` (the run folder ``make run`` writes) is one the test makes, of the runs the examples read, on that
  small collection; ``run.gz`` and ``qrels/test.qrels`` (the piped ``eval`` example's files) are its BM25 run and
  judgments;
- the examples that say no collection are given the small one with ``--set`` (``irglow run``: its configuration's
  is ``make run``'s; ``irglow zero-shot``: the TW-BERT paper's, downloaded), and zero-shot's TW-BERT a training of
  one epoch without folds (its configuration's 4 folds of 100 steps are for real collections);
- ``irglow regressions --tags lexical`` is given the shipped matrix kept to its experiments on generated collections
  (``--config``): the others read shared or downloaded collections, which the suite never needs.

An example that fails, or one this test does not know (a new command's), fails the suite."""

from __future__ import annotations

import glob
import gzip
import os
import shlex
import subprocess
import sys
from pathlib import Path

import pytest

from tests.integration.pipelines import SMALL_DEMO

pytestmark = pytest.mark.slow

# what the examples' collections become here (a token of the command line equal to the key)
COLLECTIONS = {"demo": SMALL_DEMO, "demo:n_topics=120": SMALL_DEMO}
# what is added where an example names no collection (its configuration's would be downloaded or take minutes)
ADDED = {
    "run": ["--set", f"collection.name={SMALL_DEMO}"],
    "zero-shot": ["--set", f"zero_shot.train={SMALL_DEMO}", "--set", f'zero_shot.collections=["{SMALL_DEMO}@test"]',
                  "--set", "twbert.folds=0", "--set", "twbert.epochs=1"],
}
# the order a reader runs them in: what a later example reads (a model folder, a run) is made before it
ORDER = ["settings", "cache", "index", "stats", "search", "qrels", "eval", "compare", "report", "fuse",
         "twbert", "twbert train", "twbert search", "twbert explain", "glow", "glow train", "glow search",
         "glow explain", "monobert", "monobert train", "monobert explain", "rerank", "nrmf", "nrmf train",
         "nrmf explain", "regressions", "zero-shot", "run"]


def _small_beir(folder: Path) -> Path:
    """A BEIR folder of a few documents and queries (``beir/scifact``'s two fields, a test split)."""
    import json

    folder.mkdir(parents=True)
    docs = [("d1", "Lung cancer", "smoking causes lung cancer in most patients"),
            ("d2", "Sleep apnea", "sleep apnea treatment with continuous positive airway pressure"),
            ("d3", "Diet", "a diet rich in fibre lowers the risk of heart disease"),
            ("d4", "Exercise", "regular exercise improves sleep and lowers blood pressure")]
    (folder / "corpus.jsonl").write_text("".join(json.dumps({"_id": i, "title": t, "text": x}) + "\n"
                                                 for i, t, x in docs))
    queries = [("q1", "does smoking cause cancer"), ("q2", "treatment of sleep apnea"), ("q3", "fibre and heart")]
    (folder / "queries.jsonl").write_text("".join(json.dumps({"_id": i, "text": t}) + "\n" for i, t in queries))
    (folder / "qrels").mkdir()
    (folder / "qrels" / "test.tsv").write_text("query-id\tcorpus-id\tscore\nq1\td1\t1\nq2\td2\t1\nq3\td3\t1\n")
    return folder


@pytest.fixture(scope="module")
def workspace(module_tmp):
    """The folder the examples run in: ``runs/demo/`` with the runs they read, ``run.gz`` and
    ``qrels/test.qrels``."""
    from irglow import Dense, Experiment, Lexical, TWBert
    from irglow.data.collection import load_collection
    from irglow.data.trec import write_qrels

    here = module_tmp / "here"
    exp = Experiment(SMALL_DEMO, systems=[Lexical("bm25"), TWBert(), Lexical("bm25f") + Dense("glow")],
                     out=here / "runs" / "demo", settings={
                         "data_dir": str(here / "data"), "lexical.depth": 30, "output.clusters": 0,
                         "twbert.epochs": 1, "twbert.candidates": 10, "twbert.batch_queries": 4,
                         "glow.max_steps": 2, "glow.batch_size": 4})
    exp.run()
    (here / "run.gz").write_bytes(gzip.compress((here / "runs" / "demo" / "bm25.run").read_bytes()))
    write_qrels(load_collection(SMALL_DEMO).qrels("test"), here / "qrels" / "test.qrels")
    return here


def _generated_only(path: Path) -> str:
    """The shipped reproduction matrix kept to its experiments on generated (demo) collections."""
    import yaml

    from irglow.config import config_path

    spec = yaml.safe_load(Path(config_path("configs/regressions.yaml")).read_text())
    spec["experiments"] = [e for e in spec["experiments"] if str(e["collection"]).startswith("demo")]
    path.write_text(yaml.safe_dump(spec))
    return str(path)


def _argv(line: str, scifact: Path) -> list[str]:
    """An example's command line as run here: the substitutions above, globs expanded as a shell would."""
    argv = shlex.split(line)
    assert argv[0] == "irglow", line
    argv = [COLLECTIONS.get(a, str(scifact) if a == "beir/scifact" else a) for a in argv[1:]]
    return [x for a in argv for x in (sorted(glob.glob(a)) if "*" in a else [a])]


def test_every_help_example_runs_as_written(workspace, tmp_path, monkeypatch, capsys):
    from irglow.cli import EXAMPLES, main

    assert sorted(ORDER) == sorted(EXAMPLES), "a command's example this test does not run (or runs no more)"
    monkeypatch.chdir(workspace)
    monkeypatch.setenv("IRGLOW_DATA", str(workspace / "data"))
    monkeypatch.setenv("IRGLOW_CACHE", str(tmp_path / "cache"))
    scifact = _small_beir(tmp_path / "scifact")
    added = {**ADDED, "regressions": ["--config", _generated_only(tmp_path / "matrix.yaml")]}
    ran = []
    for name in ORDER:
        for line in (t.strip() for t in EXAMPLES[name].split("\n")):
            if "|" in line:  # `zcat run.gz | irglow eval - …`: a shell pipe, run by a shell
                venv = Path(sys.executable).parent
                done = subprocess.run(line, shell=True, capture_output=True, text=True, cwd=workspace,
                                      env={**os.environ, "PATH": f"{venv}:/usr/bin:/bin"})
                assert done.returncode == 0, f"{line}\n{done.stderr[-3000:]}"
            else:
                code = main(_argv(line, scifact) + added.get(name, []))
                assert code in (0, None), f"{line}: exit {code}\n{capsys.readouterr().err[-3000:]}"
            ran.append(line)
    assert len(ran) == sum(len(t.split("\n")) for t in EXAMPLES.values())
