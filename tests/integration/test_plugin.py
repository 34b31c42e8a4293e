"""Issue 54: a new ranker is one file and no edit to irglow.  ``examples/linear_rerank.py`` — a learned re-ranker
(a linear model over four features, trained on the training judgments) — is registered the way a package
registers it, by an entry point, and the pipeline binds, checks, trains, caches and fuses it like its own."""

from __future__ import annotations

import importlib
import json
import sys
from pathlib import Path

import pytest

from irglow.runs.trec import Run
from tests.integration.pipelines import SMALL_DEMO

EXAMPLES = Path(__file__).parents[2] / "examples"


@pytest.fixture
def registered(tmp_path, monkeypatch):
    """examples/linear_rerank.py installed as a package installs it: an entry point in group irglow.rerankers."""
    dist = tmp_path / "site" / "irglow_linear-0.1.dist-info"
    dist.mkdir(parents=True)
    (dist / "METADATA").write_text("Metadata-Version: 2.1\nName: irglow-linear\nVersion: 0.1\n")
    (dist / "entry_points.txt").write_text("[irglow.rerankers]\nlinear = linear_rerank:LinearReranker\n")
    monkeypatch.syspath_prepend(str(tmp_path / "site"))
    monkeypatch.syspath_prepend(str(EXAMPLES))
    yield importlib.import_module("linear_rerank")


@pytest.mark.slow
def test_a_learned_reranker_in_one_file_composes_like_irglows_own(registered, tmp_path):
    """Issue 61: the plugin re-ranker after ``>>`` — over BM25, under another re-ranking, inside a fusion tuned on the
    queries its training held out — and each run equal to the PyTerrier pipeline built from the same object."""
    from irglow import NRMF, Experiment, Lexical, TWBert
    from irglow.models.rerank.kinds import kind_of
    from irglow.outputs import read_results
    from irglow.plan import check_config

    linear = Lexical("bm25") >> registered.LinearReranker()
    nested = linear >> NRMF(epochs=1, val_depth=10, negatives=2, batch_queries=4)
    fused = Lexical("bm25f") + linear
    with_twbert = TWBert() + linear
    settings = {"data_dir": str(tmp_path / "data"), "lexical.depth": 30, "rerank.depth": 10, "output.clusters": 0,
                "twbert.epochs": 1, "twbert.candidates": 10}
    exp = Experiment(SMALL_DEMO, systems=[Lexical("bm25"), linear, nested, fused, with_twbert], out=tmp_path / "out",
                     settings=settings)
    assert exp.systems == ["bm25", "linear", "nrmf(linear)", "bm25f+linear", "twbert+linear"]
    assert exp.config["rerank"]["models"] == ["linear", "nrmf(linear)"]
    with pytest.raises(ValueError, match=r"unknown \[rerank.linear\] setting\(s\) \['stesp'\]"):
        check_config({**exp.config, "rerank": {**exp.config["rerank"], "linear": {"stesp": 5}}})
    cmp = exp.run()
    out = tmp_path / "out"
    assert list(cmp.means.index) == exp.systems
    results = read_results(out)
    model = Path(results["rerank:linear"].model)
    assert kind_of(model) == "linear"  # the kind is written into the folder, not guessed from its files
    weights = json.loads((model / "weights.json").read_text())
    assert weights["pairs"] > 0 and weights["weights"] != [1.0, 0.0, 0.0, 0.0]  # it learned something
    bm25, reranked = Run.read(out / "bm25.run"), Run.read(out / "linear.run")
    for qid, ranked in bm25.ranking.items():  # BM25's top 10 re-ordered, the rest kept below in BM25's order
        ours = [d for d, _ in reranked.ranking[qid]]
        assert set(ours[:10]) == {d for d, _ in ranked[:10]} and ours[10:] == [d for d, _ in ranked[10:]]
    assert any([d for d, _ in reranked.ranking[q]] != [d for d, _ in bm25.ranking[q]] for q in bm25.ranking)
    assert results["rerank:nrmf(linear)"].first_stage == "linear"
    # tuned on the training queries the re-ranking stage held out of the linear model's training
    held = set(json.loads((model.parent / "training.json").read_text())["val_query_ids"])
    assert held and set(Run.read(out / "tuning" / "linear.run").ranking) == held
    assert results["fusion:bm25f+linear"].method == "wsum" and results["fusion:bm25f+linear"].tuning_queries == len(held)
    assert results["fusion:twbert+linear"].method == "wsum"  # tuned on what both held out (one split for every trainer)
    from irglow.cli import main  # cached by content like irglow's own kinds, and `irglow run` makes the same runs

    assert main(["run", "--config", str(exp.save(tmp_path / "plugin.yaml"))]) == 0
    assert set(json.loads((out / "manifest.json").read_text())["stages"].values()) == {"reused"}
    # one re-ranking path: `irglow rerank` re-ranks with the plugin's model folder as the stage did
    assert main(["rerank", str(out / "bm25.run"), "--model", str(model), "--data", SMALL_DEMO, "--depth", "10",
                 "--tag", "linear", "-o", str(tmp_path / "cli" / "linear.run")]) == 0
    assert Run.read(tmp_path / "cli" / "linear.run").ranking == reranked.ranking
    # the share it holds out is its own setting where it declares one (the default: every trainer's)
    other = Experiment(SMALL_DEMO, systems=[Lexical("bm25") >> registered.LinearReranker(val_fraction=0.5)],
                       out=tmp_path / "half", settings=settings)
    other.run()
    model = Path(read_results(tmp_path / "half")["rerank:linear(bm25)"].model)
    assert len(json.loads((model.parent / "training.json").read_text())["val_query_ids"]) > 2 * len(held)
    from irglow.commands.reference import settings_reference

    assert "gradient steps over every training pair" in settings_reference(["rerank.linear"])  # `irglow settings`

    pytest.importorskip("pyterrier", reason="the PyTerrier extra is not installed")
    import pandas as pd

    from irglow.data.collection import load_collection
    from irglow.pyterrier import frame_to_run, transformer

    queries = load_collection(SMALL_DEMO).queries("test")
    topics = pd.DataFrame({"qid": [q.query_id for q in queries], "query": [q.text for q in queries]})
    for ranker in (linear, nested, fused, with_twbert):
        made = frame_to_run(transformer(ranker, out).transform(topics)).ranking
        wrote = Run.read(out / f"{ranker.tag}.run").ranking
        depth = 10 if ranker in (linear, nested) else 30
        assert {q: [d for d, _ in r[:depth]] for q, r in made.items()} == \
            {q: [d for d, _ in r[:depth]] for q, r in wrote.items() if q in made}, ranker.tag


@pytest.mark.parametrize("target, module, message", [
    ("broken_plugin:NotAStage", "class NotAStage:\n    name = 'x'\n",
     r"entry point broken = 'broken_plugin:NotAStage' \(irglow.stages\) is not an irglow Stage with a name"),
    ("broken_plugin:Stage", "import no_such_module_here\n",
     r"entry point broken = 'broken_plugin:Stage' \(irglow.stages, package irglow-broken\) failed to load: "
     r"ModuleNotFoundError: No module named 'no_such_module_here'"),
])
def test_a_bad_plugin_is_one_line_naming_its_entry_point(tmp_path, target, module, message):
    """Issue 59.14: a non-Stage class was a TypeError traceback, a module that fails to import a bare
    ModuleNotFoundError naming no entry point."""
    import os
    import re
    import subprocess
    import sys

    site = tmp_path / "site"
    dist = site / "irglow_broken-0.1.dist-info"
    dist.mkdir(parents=True)
    (dist / "METADATA").write_text("Metadata-Version: 2.1\nName: irglow-broken\nVersion: 0.1\n")
    (dist / "entry_points.txt").write_text(f"[irglow.stages]\nbroken = {target}\n")
    (site / "broken_plugin.py").write_text(module)
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(site), os.environ.get("PYTHONPATH", "")])}
    proc = subprocess.run([sys.executable, "-m", "irglow", "settings", "lexical"], env=env, capture_output=True,
                          text=True, timeout=300)
    assert proc.returncode == 2 and "Traceback" not in proc.stderr, proc.stderr
    assert re.search(message, proc.stderr), proc.stderr


def test_a_registered_lexical_system_has_every_right_of_irglows_own(tmp_path, monkeypatch):
    """Issue 61: a Lucene similarity another package registers (entry-point group irglow.lexical) is a [lexical]
    system: searched, fused with its weight tuned on the training queries, and a PyTerrier pipeline equal to its run."""
    from irglow import Experiment, Lexical
    from irglow.outputs import read_results

    site = tmp_path / "site"
    dist = site / "irglow_jm-0.1.dist-info"
    dist.mkdir(parents=True)
    (dist / "METADATA").write_text("Metadata-Version: 2.1\nName: irglow-jm\nVersion: 0.1\n")
    (dist / "entry_points.txt").write_text("[irglow.lexical]\njm = jm_system:JELINEK_MERCER\n")
    (site / "jm_system.py").write_text(
        "from irglow.lexical.systems import LexicalSystem\n\n\n"
        "def _jm(config):\n"
        "    from irglow.lexical import queries as lq\n\n"
        "    return lq.J('org.apache.lucene.search.similarities.LMJelinekMercerSimilarity')(0.7)\n\n\n"
        "JELINEK_MERCER = LexicalSystem('jm', 'query likelihood, Jelinek-Mercer smoothing (0.7)', _jm)\n")
    monkeypatch.syspath_prepend(str(site))
    fused = Lexical("bm25") + Lexical("jm")
    exp = Experiment(SMALL_DEMO, systems=["bm25", "jm", fused], out=tmp_path / "out",
                     settings={"data_dir": str(tmp_path / "data"), "lexical.depth": 30, "output.clusters": 0})
    assert exp.config["lexical"]["systems"] == ["bm25", "jm"]
    exp.run()
    out = tmp_path / "out"
    bm25, jm = Run.read(out / "bm25.run"), Run.read(out / "jm.run")
    assert any([d for d, _ in jm.ranking[q]] != [d for d, _ in bm25.ranking[q]] for q in bm25.ranking)
    tuned = read_results(out)["fusion:bm25+jm"]
    assert tuned.method == "wsum" and tuned.tuning_set == "training" and tuned.tuning_queries > 0

    # issue 67.6: its code edited (the version unchanged), its run is made again, not reused
    (site / "jm_system.py").write_text((site / "jm_system.py").read_text().replace("(0.7)", "(0.05)"))
    importlib.reload(sys.modules["jm_system"])  # what the next process would load
    exp.run()
    stages = json.loads((out / "manifest.json").read_text())["stages"]
    assert stages["lexical:jm"] == "ran" and stages["lexical:bm25"] == "reused"
    assert Run.read(out / "jm.run").ranking != jm.ranking
    (site / "jm_system.py").write_text((site / "jm_system.py").read_text().replace("(0.05)", "(0.7)"))
    importlib.reload(sys.modules["jm_system"])
    exp.run()  # back to the first code: its run again, equal to the first one
    assert Run.read(out / "jm.run").ranking == jm.ranking

    pytest.importorskip("pyterrier", reason="the PyTerrier extra is not installed")
    import pandas as pd

    from irglow.data.collection import load_collection
    from irglow.pyterrier import frame_to_run, transformer

    queries = load_collection(SMALL_DEMO).queries("test")
    topics = pd.DataFrame({"qid": [q.query_id for q in queries], "query": [q.text for q in queries]})
    for ranker in (Lexical("jm"), fused):
        made = frame_to_run(transformer(ranker, out).transform(topics)).ranking
        assert {q: [d for d, _ in r] for q, r in made.items()} == \
            {q: [d for d, _ in r] for q, r in Run.read(out / f"{ranker.tag}.run").ranking.items()}, ranker.tag


def _cell_from_the_page() -> str:
    """docs/extending.md's re-ranker cell, as the page prints it."""
    import re

    page = (Path(__file__).parents[2] / "docs" / "extending.md").read_text()
    block = next(b for b in re.findall(r"```python\n(.*?)```", page, re.S) if "class Overlap(RerankerKind)" in b)
    return block


CELL = _cell_from_the_page()
EDITED = "/ (1 + len(text))"  # the cell's helper, edited before the cell is run again


def cell(source: str, monkeypatch):
    """A notebook cell's code: run in a module with no file (as IPython's __main__ is)."""
    import types

    module = types.ModuleType("notebook_cell")
    monkeypatch.setitem(sys.modules, "notebook_cell", module)
    exec(compile(source, "<cell>", "exec"), module.__dict__)
    return module


def test_a_reranker_defined_in_a_cell_is_an_object_that_runs_caches_nests_and_fuses(tmp_path, monkeypatch):
    """Issue 81.5: a re-ranker kind defined where there is no file and no entry point, used as an object: it runs in
    an Experiment, nests and fuses, its runs are cached on its code (an edited helper trains and runs again), and
    its run folder's rankers become PyTerrier transformers."""
    from irglow import Experiment, Lexical

    nb = cell(CELL, monkeypatch)
    over = Lexical("bm25") >> nb.Overlap()
    systems = [Lexical("bm25"), over, Lexical("bm25f") + over, over >> nb.Overlap()]
    settings = {"lexical.depth": 30, "rerank.depth": 10, "output.clusters": 0, "output.page": False}
    exp = Experiment(SMALL_DEMO, systems=systems, out=tmp_path / "out", settings=settings)
    assert exp.systems == ["bm25", "overlap", "bm25f+overlap", "overlap(overlap)"]
    cmp = exp.run()
    assert list(cmp.means.index) == exp.systems
    out = tmp_path / "out"
    bm25, reranked = Run.read(out / "bm25.run"), Run.read(out / "overlap.run")
    assert any([d for d, _ in reranked.ranking[q]] != [d for d, _ in bm25.ranking[q]] for q in bm25.ranking)
    stages = json.loads((out / "manifest.json").read_text())["stages"]
    Experiment(SMALL_DEMO, systems=systems, out=tmp_path / "out", settings=settings).run()
    assert set(json.loads((out / "manifest.json").read_text())["stages"].values()) == {"reused"}
    before = nb.Overlap().code()
    assert EDITED in CELL
    nb = cell(CELL.replace(EDITED, "/ (2 + len(text))"), monkeypatch)  # the cell edited and run again: a helper
    assert nb.Overlap().code() != before
    Experiment(SMALL_DEMO, systems=[Lexical("bm25"), Lexical("bm25") >> nb.Overlap()], out=tmp_path / "out",
               settings=settings).run()
    again = json.loads((out / "manifest.json").read_text())["stages"]
    assert stages["rerank:overlap"] == again["rerank:overlap"] == "ran"

    pytest.importorskip("pyterrier", reason="the PyTerrier extra is not installed")
    import pandas as pd

    from irglow.data.collection import load_collection
    from irglow.pyterrier import frame_to_run, transformer

    queries = load_collection(SMALL_DEMO).queries("test")
    topics = pd.DataFrame({"qid": [q.query_id for q in queries], "query": [q.text for q in queries]})
    ranker = Lexical("bm25") >> nb.Overlap()
    made, wrote = frame_to_run(transformer(ranker, out).transform(topics)).ranking, Run.read(out / "overlap.run").ranking
    assert made and {q: r[:10] for q, r in made.items()} == {q: r[:10] for q, r in wrote.items()}  # the re-ranked block


def test_a_reranker_module_on_the_path_with_no_entry_point_has_its_row(tmp_path, monkeypatch):
    """examples/linear_rerank.py on sys.path, not installed: ``Lexical("bm25") >> LinearReranker()`` runs."""
    from irglow import Experiment, Lexical

    monkeypatch.syspath_prepend(str(EXAMPLES))
    monkeypatch.delitem(sys.modules, "linear_rerank", raising=False)  # imported from the path, gone afterwards
    linear_rerank = importlib.import_module("linear_rerank")
    exp = Experiment(SMALL_DEMO, systems=[Lexical("bm25"), Lexical("bm25") >> linear_rerank.LinearReranker(steps=50)],
                     out=tmp_path / "out", settings={"lexical.depth": 30, "rerank.depth": 10, "output.page": False})
    assert list(exp.run().means.index) == ["bm25", "linear(bm25)"]
    from irglow.outputs import read_results

    model = Path(read_results(tmp_path / "out")["rerank:linear(bm25)"].model)
    assert json.loads((model / "weights.json").read_text())["pairs"] > 0


def test_a_reranking_has_its_own_depth(tmp_path, monkeypatch):
    """Issue 81.5: a per-re-ranking setting is one field on its node: Rerank(…, depth=3) re-ranks 3 documents a
    query beside a re-ranking at [rerank] depth, and a fusion of it fuses its block of 3."""
    from irglow import Experiment, Lexical, Rerank
    from irglow.outputs import read_results

    nb = cell(CELL, monkeypatch)
    shallow, deep = Rerank(Lexical("bm25"), nb.Overlap(), depth=3), Lexical("bm25f") >> nb.Overlap()
    exp = Experiment(SMALL_DEMO, systems=[Lexical("bm25"), shallow, deep, Lexical("bm25f") + shallow],
                     out=tmp_path / "out", settings={"lexical.depth": 30, "rerank.depth": 10, "output.page": False})
    assert [r.depth for r in exp.rankers[1:3]] == [3, 10] and exp.rankers[1] == shallow
    exp.run()
    results = read_results(tmp_path / "out")
    assert (results["rerank:overlap"].depth, results["rerank:overlap(bm25f)"].depth) == (3, 10)
    bm25, reranked = Run.read(tmp_path / "out" / "bm25.run"), Run.read(tmp_path / "out" / "overlap.run")
    for qid, ranked in bm25.ranking.items():  # BM25's top 3 re-ordered, the rest kept below in BM25's order
        ours = [d for d, _ in reranked.ranking[qid]]
        assert set(ours[:3]) == {d for d, _ in ranked[:3]} and ours[3:] == [d for d, _ in ranked[3:]]
    fused = Run.read(tmp_path / "out" / "bm25f+overlap.run")
    assert fused.ranking
    again = Experiment.load(exp.save(tmp_path / "exp.yaml"))
    assert [r.depth for r in again.rankers[1:3]] == [3, 10]
    with pytest.raises(ValueError, match="one run name names one re-ranking"):
        Experiment(SMALL_DEMO, systems=[shallow, Lexical("bm25") >> nb.Overlap()])
    with pytest.raises(ValueError, match="one run name names one re-ranking"):  # in either order
        Experiment(SMALL_DEMO, systems=[Lexical("bm25") >> nb.Overlap(), shallow])
