"""Issue 82 (part): a page's code runs as written.  The Python page's blocks are executed here, their text unchanged
but for the substitutions below, each of which the page names: its collections are smaller ones and its run folder is
one this test makes (``make run``'s takes minutes).  A block that fails, or a substitution that no longer applies
(the page changed), fails the test.  Every command's ``--help`` example runs here too, in that run folder; the pages'
shell commands run in test_page_commands.py."""

from __future__ import annotations

import glob
import gzip
import json
import os
import re
import shlex
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from tests.integration.pipelines import SMALL_DEMO

ROOT = Path(__file__).resolve().parents[2]


def blocks(page: Path, language: str = "python") -> list[str]:
    """The page's fenced blocks of ``language``, in order."""
    return re.findall(rf"^```{language}\n(.*?)^```", page.read_text(encoding="utf-8"), re.S | re.M)


def as_run_here(block: str, substitutions: dict[str, str]) -> str:
    """``block`` with each substitution made; one that does not apply fails (the page moved on without the test)."""
    for old, new in substitutions.items():
        assert old in block, f"the page's block no longer holds {old!r}:\n{block}"
        block = block.replace(old, new)
    return block


@pytest.fixture(scope="module")
def run_folder(module_tmp):
    """A run folder of the rankers the PyTerrier blocks name (``make run``'s ``runs/demo`` holds them too): BM25,
    TW-BERT, BM25F fused with GLOW, and monoBERT over BM25 — on the small demo with a tiny BERT."""
    from irglow import Dense, Experiment, Lexical, MonoBERT, TWBert
    from tests.integration.torchrun import tiny_bert

    bert = tiny_bert(module_tmp / "bert")
    exp = Experiment(SMALL_DEMO, systems=[Lexical("bm25"), TWBert(), Lexical("bm25f") + Dense("glow"),
                              Lexical("bm25") >> MonoBERT()],
                     out=module_tmp / "runs", settings={
                         "data_dir": str(module_tmp / "data"), "lexical.depth": 30, "rerank.depth": 10,
                         "output.clusters": 0, "twbert.epochs": 1, "twbert.candidates": 10, "twbert.batch_queries": 4,
                         "twbert.model.base_model": bert, "glow.max_steps": 2, "glow.batch_size": 4,
                         "glow.model.base_model": bert, "rerank.monobert.max_steps": 2,
                         "rerank.monobert.model.base_model": bert, "rerank.monobert.model.default_field_tokens": 16})
    exp.run()
    return module_tmp / "runs", module_tmp / "data"


def test_the_python_pages_pyterrier_blocks_run_as_written(run_folder, monkeypatch):
    """python.md's two PyTerrier blocks (the second continues the first): ``pt.Experiment`` with measures as
    objects (with strings, PyTerrier reads trec_eval names and ``nDCG@10`` crashed while the old test, which passed
    ``ir_measures`` objects, passed), models taken from the run folder."""
    pt = pytest.importorskip("pyterrier", reason="the PyTerrier extra is not installed")
    out, data = run_folder
    monkeypatch.setenv("IRGLOW_DATA", str(data))  # where the run folder's index is: build_index finds it there
    tables = []
    real = pt.Experiment
    monkeypatch.setattr(pt, "Experiment", lambda *a, **k: tables.append(real(*a, **k)) or tables[-1])
    first, second = blocks(ROOT / "docs" / "python.md")[2:4]
    here = {"demo:n_topics=120": SMALL_DEMO, '"runs/demo"': repr(str(out))}
    namespace: dict = {}
    exec(compile(as_run_here(first, here), "python.md (PyTerrier, from a run folder)", "exec"), namespace)
    exec(compile(as_run_here(second, {'"runs/demo"': repr(str(out))}), "python.md (PyTerrier, by hand)", "exec"),
         namespace)
    assert [list(t["name"]) for t in tables] == [["bm25", "twbert", "bm25f+glow", "monobert"],
                                                  ["bm25", "twbert", "monobert", "rrf"]]
    from irglow.runs.trec import Run

    # the transformers rank as the run files: BM25's nDCG@10 through PyTerrier is the table's
    from irglow.eval.measures import aggregate, parse_measures
    from irglow.data.collection import load_collection

    bm25 = aggregate(parse_measures("nDCG@10"), load_collection(SMALL_DEMO).qrels("test"), Run.read(out / "bm25.run"))
    assert tables[0].set_index("name").loc["bm25", "nDCG@10"] == pytest.approx(bm25["nDCG@10"], abs=1e-9)


def test_the_python_pages_lexical_block_runs_as_written(tmp_path, monkeypatch):
    """python.md's lower-level block (index, statistics, three Lucene runs, a comparison) on a small BEIR folder in
    place of ``beir/scifact``."""
    from tests.integration.pipelines import beir_from_demo

    beir_from_demo(tmp_path / "c")
    monkeypatch.setenv("IRGLOW_DATA", str(tmp_path / "data"))
    block = as_run_here(blocks(ROOT / "docs" / "python.md")[1], {'"beir/scifact"': repr(str(tmp_path / "c"))})
    namespace: dict = {}
    exec(compile(block, "python.md (lexical)", "exec"), namespace)
    assert set(namespace["runs"]) == {"bm25", "bm25f", "tfidf"} and namespace["stats"].N > 0


# --help examples (issue 82.1), run with these substitutions, each said here and none other:
# - the demo collection (``demo``, ``demo:n_topics=120``: ``make run``'s) is a small one (SMALL_DEMO), and
#   ``beir/scifact`` a small BEIR folder the test writes: the examples' own collections take minutes to train on;
# - ``runs/demo/`` (the run folder ``make run`` writes) is this module's run folder, on that small collection;
#   ``run.gz`` and ``qrels/test.qrels`` (the piped ``eval`` example's files) are its BM25 run and judgments;
# - the examples that say no collection are given the small one with ``--set`` (``irglow run``: its configuration's
#   is ``make run``'s; ``irglow zero-shot``: the TW-BERT paper's, downloaded), and zero-shot's TW-BERT a training of
#   one epoch without folds (its configuration's 4 folds of 100 steps are for real collections);
# - ``irglow regressions --tags lexical`` is given the shipped matrix kept to its experiments on generated collections
#   (``--config``): the others read shared or downloaded collections, which the suite never needs.
# what the examples' collections become here (a token of the command line equal to the key)
HELP_COLLECTIONS = {"demo": SMALL_DEMO, "demo:n_topics=120": SMALL_DEMO}
# zero-shot on the small collection: trained on it, evaluated on its test split
ZERO_SHOT_SMALL = ["--set", f"zero_shot.train={SMALL_DEMO}", "--set", f'zero_shot.collections=["{SMALL_DEMO}@test"]']
# what is added where an example names no collection (its configuration's would be downloaded or take minutes)
HELP_ADDED = {
    "run": ["--set", f"collection.name={SMALL_DEMO}"],
    "zero-shot": [*ZERO_SHOT_SMALL, "--set", "twbert.folds=0", "--set", "twbert.epochs=1"],
}
# the order a reader runs them in: what a later example reads (a model folder, a run) is made before it
HELP_ORDER = ["settings", "cache", "index", "stats", "search", "qrels", "eval", "compare", "report", "fuse",
              "twbert", "twbert train", "twbert search", "twbert explain", "glow", "glow train", "glow search",
              "glow explain", "monobert", "monobert train", "monobert explain", "rerank", "nrmf", "nrmf train",
              "nrmf explain", "regressions", "zero-shot", "run"]


def small_scifact(folder: Path) -> Path:
    """A BEIR folder shaped like SciFact: titles and abstracts, train and test judgments, document 4983."""
    folder.mkdir(parents=True)
    topics = ["smoking and lung cancer", "sleep apnea treatment", "fibre and heart disease", "exercise and blood "
              "pressure", "lyme disease treatment", "vitamin d and bone density", "statins and cholesterol",
              "coffee and liver health"]
    docs, queries, train, test = [], [], [], []
    for t, topic in enumerate(topics):
        for k in range(3):
            doc = "4983" if (t, k) == (4, 0) else f"{1000 + 10 * t + k}"
            docs.append({"_id": doc, "title": f"{topic.title()} study {k}",
                         "text": f"a study of {topic}: finding {k} on {topic.split()[0]} in {20 + k} patients"})
            (train if t % 2 == 0 else test).append((f"q{t}", doc, 1)) if k == 0 else None
        queries.append({"_id": f"q{t}", "text": f"does {topic} matter"})
        queries.append({"_id": f"q{t}b", "text": f"{topic} evidence"})
        (train if t % 2 == 0 else test).append((f"q{t}b", f"{1000 + 10 * t + 1}", 1))
    (folder / "corpus.jsonl").write_text("".join(json.dumps(d) + "\n" for d in docs))
    (folder / "queries.jsonl").write_text("".join(json.dumps(q) + "\n" for q in queries))
    (folder / "qrels").mkdir()
    for split, rows in (("train", train), ("test", test)):
        (folder / "qrels" / f"{split}.tsv").write_text(
            "query-id\tcorpus-id\tscore\n" + "".join(f"{q}\t{d}\t{r}\n" for q, d, r in rows))
    return folder


def _generated_only(path: Path) -> str:
    """The shipped reproduction matrix kept to its experiments on generated (demo) collections."""
    import yaml

    from irglow.config import config_path

    spec = yaml.safe_load(Path(config_path("configs/regressions.yaml")).read_text())
    spec["experiments"] = [e for e in spec["experiments"] if str(e["collection"]).startswith("demo")]
    path.write_text(yaml.safe_dump(spec))
    return str(path)


def command_argv(line: str, named: dict[str, str]) -> list[str]:
    """An ``irglow`` command line of a page as run here, its ``irglow`` left out: an optional part in brackets given,
    each collection ``named`` substituted (an argument, or a setting's value: ``collection.name=beir/scifact``), globs
    expanded as a shell would."""
    argv = shlex.split(re.sub(r"\[([^\]|]*)\]", r"\1", line), comments=True)
    assert argv[0] == "irglow", line
    argv = [named.get(a, re.sub(r"=([^=]+)$", lambda m: "=" + named.get(m.group(1), m.group(1)), a)) for a in argv[1:]]
    return [x for a in argv for x in (sorted(glob.glob(a)) or [a] if "*" in a else [a])]


def run_irglow(argv: list[str]) -> int | str | None:
    """``irglow`` with ``argv`` in this process: its exit code (argparse's own exit too: ``--version``)."""
    from irglow.cli import main

    try:
        return main(argv)
    except SystemExit as e:
        return e.code


@pytest.mark.slow
def test_every_help_example_runs_as_written(run_folder, tmp_path, monkeypatch, capsys):
    """Issue 82.1: every command's ``--help`` example (``irglow.cli.EXAMPLES``), executed as written in the order
    a reader meets them (a model is trained before the searches that load it), in a folder whose ``runs/demo/`` is
    this module's run folder, with the substitutions said above ``HELP_COLLECTIONS``.  An example that fails, or
    one this test does not know (a new command's), fails the suite."""
    from irglow.cli import EXAMPLES
    from irglow.data.collection import load_collection
    from irglow.data.trec import write_qrels

    out, data = run_folder
    workspace = tmp_path / "here"
    shutil.copytree(out, workspace / "runs" / "demo")
    (workspace / "run.gz").write_bytes(gzip.compress((out / "bm25.run").read_bytes()))
    write_qrels(load_collection(SMALL_DEMO).qrels("test"), workspace / "qrels" / "test.qrels")

    assert sorted(HELP_ORDER) == sorted(EXAMPLES), "a command's example this test does not run (or runs no more)"
    monkeypatch.chdir(workspace)
    monkeypatch.setenv("IRGLOW_DATA", str(data))
    monkeypatch.setenv("IRGLOW_CACHE", str(tmp_path / "cache"))
    scifact = small_scifact(tmp_path / "scifact")
    added = {**HELP_ADDED, "regressions": ["--config", _generated_only(tmp_path / "matrix.yaml")]}
    ran = []
    for name in HELP_ORDER:
        for line in (t.strip() for t in EXAMPLES[name].split("\n")):
            if "|" in line:  # `zcat run.gz | irglow eval - …`: a shell pipe, run by a shell
                venv = Path(sys.executable).parent
                done = subprocess.run(line, shell=True, capture_output=True, text=True, cwd=workspace,
                                      env={**os.environ, "PATH": f"{venv}:/usr/bin:/bin"})
                assert done.returncode == 0, f"{line}\n{done.stderr[-3000:]}"
            else:
                code = run_irglow(command_argv(line, {**HELP_COLLECTIONS, "beir/scifact": str(scifact)})
                                  + added.get(name, []))
                assert code in (0, None), f"{line}: exit {code}\n{capsys.readouterr().err[-3000:]}"
            ran.append(line)
    assert len(ran) == sum(len(t.split("\n")) for t in EXAMPLES.values())


@pytest.mark.slow
def test_the_readme_snippet_and_the_python_pages_experiment_run_as_written(tmp_path, monkeypatch, capsys):
    """The README's Python snippet and python.md's first block (an ``Experiment`` of nested rankers, saved): their
    collections are small ones here (``demo:n_topics=120`` the small demo, ``beir/scifact`` a small BEIR folder of
    its shape), their folders this test's; each prints or returns its table of every system."""
    monkeypatch.chdir(tmp_path)
    monkeypatch.setenv("IRGLOW_DATA", str(tmp_path / "data"))
    readme = as_run_here(blocks(ROOT / "README.md")[0], {'"demo:n_topics=120"': repr(SMALL_DEMO)})
    exec(compile(readme, "README.md (Python)", "exec"), {})
    table = capsys.readouterr().out
    for system in ("bm25", "bm25f", "twbert", "bm25f+glow", "monobert(bm25f+glow)"):
        assert f"| {system} " in table, table
    scifact = small_scifact(tmp_path / "scifact")
    page = as_run_here(blocks(ROOT / "docs" / "python.md")[0], {'"beir/scifact"': repr(str(scifact))})
    namespace: dict = {}
    exec(compile(page, "python.md (Experiment)", "exec"), namespace)
    assert list(namespace["cmp"].means.index) == ["bm25", "ql", "twbert", "bm25f+glow", "monobert(bm25f+glow)",
                                                 "bm25+nrmf(twbert)"]
    from irglow import Experiment

    assert Experiment.load("scifact.yaml").systems == namespace["exp"].systems


def test_the_extending_pages_stage_runs_as_written(tmp_path, monkeypatch):
    """docs/extending.md's query-likelihood stage, its block as written, in place of irglow's own: an experiment
    binds, runs and caches it, and its run is the one irglow's stage writes."""
    import types

    from irglow import Experiment, stages
    from irglow.lexical.ql import QueryLikelihoodStage

    block = next(b for b in blocks(ROOT / "docs" / "extending.md") if "class QueryLikelihoodStage" in b)
    module = types.ModuleType("my_stage")
    monkeypatch.setitem(sys.modules, "my_stage", module)
    exec(compile(block, "docs/extending.md (a stage)", "exec"), module.__dict__)
    settings = {"data_dir": str(tmp_path / "data"), "output.clusters": 0}
    Experiment(SMALL_DEMO, systems=["bm25", "ql"], out=tmp_path / "own", settings=settings).run()
    monkeypatch.setattr(stages, "STAGES", [module.QueryLikelihoodStage() if isinstance(s, QueryLikelihoodStage)
                                           else s for s in stages.STAGES])
    Experiment(SMALL_DEMO, systems=["bm25", "ql"], out=tmp_path / "page", settings=settings).run()
    assert (tmp_path / "page" / "ql.run").read_bytes() == (tmp_path / "own" / "ql.run").read_bytes()
