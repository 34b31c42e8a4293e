"""Issue 54: a new ranker is one file and no edit to irglow.  ``examples/linear_rerank.py`` — a learned re-ranker
(a linear model over four features, trained on the training judgments) — is registered the way a package
registers it, by an entry point, and the pipeline binds, checks, trains, caches and fuses it like its own."""

from __future__ import annotations

import importlib
import json
from pathlib import Path

import pytest

from irglow.runs.trec import Run
from tests.integration.pipelines import SMALL_DEMO

EXAMPLES = Path(__file__).parents[2] / "examples"


@pytest.fixture
def registered(tmp_path, monkeypatch):
    """examples/linear_rerank.py installed as a package installs it: an entry point in group irglow.stages."""
    import irglow.stages

    dist = tmp_path / "site" / "irglow_linear-0.1.dist-info"
    dist.mkdir(parents=True)
    (dist / "METADATA").write_text("Metadata-Version: 2.1\nName: irglow-linear\nVersion: 0.1\n")
    (dist / "entry_points.txt").write_text("[irglow.stages]\nlinear = linear_rerank:LinearRerankStage\n")
    monkeypatch.syspath_prepend(str(tmp_path / "site"))
    monkeypatch.syspath_prepend(str(EXAMPLES))
    importlib.reload(irglow.stages)
    yield irglow.stages
    monkeypatch.undo()
    importlib.reload(irglow.stages)


def test_a_learned_reranker_in_one_file_runs_as_a_stage(registered, tmp_path):
    from irglow import Experiment
    from irglow.plan import check_config

    assert [s.name for s in registered.STAGES] == ["lexical", "ql", "twbert", "glow", "linear", "rerank", "fusion"]
    settings = {"data_dir": str(tmp_path / "data"), "lexical.depth": 30, "output.clusters": 0}
    exp = Experiment(SMALL_DEMO, systems=["bm25", "linear", "bm25+linear"], out=tmp_path / "out", settings=settings)
    assert exp.config["linear"] == {"enabled": True}
    with pytest.raises(ValueError, match=r"unknown \[linear\] setting\(s\) \['dpeth'\]"):
        check_config({**exp.config, "linear": {"enabled": True, "dpeth": 5}})
    with pytest.raises(ValueError, match=r"\[linear\] \(disabled\): unknown \[linear\] setting\(s\) \['dept'\]"):
        check_config({**exp.config, "linear": {"dept": 5}})  # a disabled plugin section of one key, checked too
    cmp = exp.run()
    out = tmp_path / "out"
    assert list(cmp.means.index) == ["bm25", "linear", "bm25+linear"]
    bm25, linear = Run.read(out / "bm25.run"), Run.read(out / "linear.run")
    weights = json.loads(next((out / "linear-train").glob("*/weights.json")).read_text())
    assert weights["pairs"] > 0 and weights["weights"] != [1.0, 0.0, 0.0, 0.0]  # it learned something
    for qid, ranked in bm25.ranking.items():  # BM25's top 20 re-ordered, the rest kept below in BM25's order
        ours = [d for d, _ in linear.ranking[qid]]
        assert set(ours[:20]) == {d for d, _ in ranked[:20]} and ours[20:] == [d for d, _ in ranked[20:]]
    assert any([d for d, _ in linear.ranking[q]] != [d for d, _ in bm25.ranking[q]] for q in bm25.ranking)
    manifest = json.loads((out / "manifest.json").read_text())
    assert manifest["settings"]["linear"] == {"enabled": True, "depth": 20, "steps": 200, "lr": 0.5}
    exp.run()  # cached by content like irglow's own stages
    assert json.loads((out / "manifest.json").read_text())["stages"]["linear"] == "reused"
    from irglow.commands.reference import settings_reference

    assert "BM25's top documents re-ranked per query" in settings_reference(["linear"])  # `irglow settings linear`


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
