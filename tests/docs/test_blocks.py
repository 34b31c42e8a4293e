"""Issue 82 (part): a page's code runs as written.  The Python page's blocks are executed here, their text unchanged
but for the substitutions below, each of which the page names: its collections are smaller ones and its run folder is
one this test makes (``make run``'s takes minutes).  A block that fails, or a substitution that no longer applies
(the page changed), fails the test."""

from __future__ import annotations

import re
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
