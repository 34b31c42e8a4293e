"""Issue 82.1: every ``irglow`` command of the pages' shell blocks (README.md, docs/) is executed as written, page
by page in one folder, with these substitutions, each said here and none other:

- ``beir/scifact`` is a small BEIR folder this test writes (its two fields, train and test splits, document 4983), and
  ``demo`` a small demo collection, which also stands for ``beir/nfcorpus`` (the collection models trained on
  SciFact are run zero-shot on): the pages' own collections take minutes to hours to train on;
- an optional part written in brackets (``[--rm3]``) is given;
- a file a page reads that no command of the pages writes is made here first, by ``irglow`` commands on that
  collection (:func:`workspace`): ``runs/`` (BM25, BM25F, TW-BERT, BERT and GLOW runs), the training queries' runs and
  judgments a fusion tunes on, a BERT model, and the placeholder files ``a.run``, ``b.run.gz``, ``q.qrels``,
  ``qrels/x.qrels``;
- a training command is given a budget of a few steps (its configuration's are for real collections), a command
  that names no collection (``irglow run``, ``irglow zero-shot``) the small one with ``--set``, and ``irglow
  regressions`` the shipped matrix kept to its experiments on generated collections (as its ``--help`` example is).

The other lines (``make``, ``pip``, ``python bench/…``, ``torchrun`` across machines) are not ``irglow`` commands:
:data:`NOT_RUN` lists each with the reason, and a line that is neither fails the suite, as does a command that fails.
A worked example's Python block is run too where its run folder is one its page's command writes."""

from __future__ import annotations

import gzip
import re
import shlex
import shutil
from pathlib import Path

import pytest

from tests.docs.test_blocks import ZERO_SHOT_SMALL, _generated_only, blocks, command_argv, run_irglow, small_scifact
from tests.integration.pipelines import SMALL_DEMO

pytestmark = pytest.mark.slow

ROOT = Path(__file__).resolve().parents[2]
# the pages in the order a reader meets their commands (each page's in its own order)
PAGES = ["docs/install.md", "docs/experiments.md", "docs/models.md", "docs/evaluation.md", "docs/getting-started.md",
         "docs/examples/twbert.md", "docs/examples/monobert.md", "docs/examples/nrmf.md", "docs/examples/index.md",
         "docs/examples/glow.md", "docs/examples/fusion.md", "docs/examples/zero-shot.md", "docs/development.md",
         "docs/scale.md", "docs/index.md", "README.md"]
# the lines that are not irglow commands, by their first word: why the suite does not run them
NOT_RUN = {
    "make": "a clone's target (the irglow command beside it is run, where the page gives one); `make run` and "
            "`make test` are what CI runs",
    "pip": "an install (docs/install.md; the closing note measures it in a fresh venv)",
    "python": "a benchmark script (bench/), measured by `make bench-*`, never in the suite",
    "torchrun": "several machines (tests/integration/test_torchrun.py runs irglow under torchrun on one)",
    "IR_DATASETS_HOME=/data/irds": "a make target with a download folder",
    "[FUSE=twbert+glow,twbert+bert|none]": "a make target's options, continued",
}
# a few steps for each trainer (the pages' budgets are for real collections); the first word after `irglow`
BUDGET = {"twbert": ["--set", "folds=0", "--set", "epochs=1"], "glow": ["--set", "epochs=1"],
          "monobert": ["--set", "max_steps=2"], "nrmf": ["--set", "epochs=1"]}
RUN_BUDGET = ["--set", "twbert.folds=0", "--set", "twbert.epochs=1", "--set", "glow.epochs=1",
              "--set", "rerank.monobert.max_steps=2", "--set", "rerank.nrmf.epochs=1"]


def _lines(page: str) -> list[str]:
    """The page's shell lines, continuations joined, comments dropped."""
    out = []
    for block in blocks(ROOT / page, "bash"):
        for line in block.replace("\\\n", " ").splitlines():
            if shlex.split(line, comments=True):
                out.append(line)
    return out


def _argv(line: str, scifact: Path) -> list[str]:
    """An ``irglow`` line as run here: the substitutions above (:func:`command_argv`), and the budgets."""
    argv = command_argv(line, {"beir/scifact": str(scifact), "beir/nfcorpus": SMALL_DEMO, "demo": SMALL_DEMO})
    if argv and argv[0] in BUDGET and argv[1:2] == ["train"]:
        argv += BUDGET[argv[0]]
    if argv and argv[0] == "regressions":
        argv += ["--config", _generated_only(Path("matrix.yaml"))]
    if argv and argv[0] in ("run", "zero-shot"):
        named_collection = any(a.startswith("collection.name=") for a in argv)
        argv += ([] if named_collection else ["--set", f"collection.name={SMALL_DEMO}"]) + RUN_BUDGET
        if argv[0] == "zero-shot":
            argv += ZERO_SHOT_SMALL
    return argv


def _irglow(*argv: str) -> None:
    code = run_irglow(list(argv))
    assert code in (0, None), f"irglow {' '.join(argv)}: exit {code}"


@pytest.fixture(scope="module")
def workspace(module_tmp, monkeypatch_module):
    """The folder the pages' commands run in, with the files they read that none of them writes."""
    here = module_tmp / "here"
    here.mkdir()
    monkeypatch_module.chdir(here)
    monkeypatch_module.setenv("IRGLOW_DATA", str(here / "data"))
    monkeypatch_module.setenv("IRGLOW_CACHE", str(module_tmp / "cache"))
    scifact = small_scifact(module_tmp / "scifact")
    for system in ("bm25", "bm25f"):
        _irglow("search", str(scifact), "--split", "test", "--system", system, "-o", f"runs/{system}.run")
        _irglow("search", str(scifact), "--split", "train", "--system", system, "-o", f"train/{system}.run")
    _irglow("twbert", "train", str(scifact), "--split", "train", "--out", "seed/twbert", *BUDGET["twbert"])
    _irglow("twbert", "search", str(scifact), "--split", "test", "--model", "seed/twbert/best", "-o", "runs/twbert.run")
    for variant in ("bert", "glow"):
        _irglow("glow", "train", str(scifact), "--split", "train", "--out", f"out/{variant}", "--set",
                f"model.variant={variant}", *BUDGET["glow"])
        _irglow("glow", "search", str(scifact), "--split", "test", "--model", f"out/{variant}/best", "-o",
                f"runs/{variant}.run")
    _irglow("glow", "search", str(scifact), "--split", "train", "--model", "out/glow/best", "-o", "train/glow.run")
    _irglow("qrels", str(scifact), "--split", "train", "-o", "qrels/train.qrels")
    _irglow("qrels", str(scifact), "--split", "test", "-o", "q.qrels")
    shutil.copy("q.qrels", "qrels/x.qrels")
    shutil.copy("runs/bm25.run", "a.run")
    Path("b.run.gz").write_bytes(gzip.compress(Path("runs/bm25f.run").read_bytes()))
    Path("out/twbert/test").mkdir(parents=True)
    for run in ("bm25", "twbert"):
        shutil.copy(f"runs/{run}.run", f"out/twbert/test/{run}.run")
    return here, scifact


@pytest.fixture(scope="module")
def monkeypatch_module():
    with pytest.MonkeyPatch.context() as patch:
        yield patch


@pytest.mark.parametrize("page", PAGES)
def test_every_irglow_command_of_the_pages_runs_as_written(page, workspace, monkeypatch):
    here, scifact = workspace
    monkeypatch.setenv("IRGLOW_MODELS", str(here / "models"))  # one models folder, as a reader's: pages share it
    for line in _lines(page):
        first = shlex.split(line, comments=True)[0]
        if first == "irglow":
            _irglow(*_argv(line, scifact))
        else:
            assert first in NOT_RUN, f"{page}: {line!r} is neither an irglow command nor a line NOT_RUN explains"
    written = set(re.findall(r"output\.dir=(\S+)", "\n".join(_lines(page))))
    for block in blocks(ROOT / page):  # a block reading a run folder this page's command wrote
        folders = set(re.findall(r'"(runs/[^"]+)"', block))
        if folders and folders <= written:
            pytest.importorskip("pyterrier", reason="the PyTerrier extra is not installed")
            exec(compile(block, f"{page} (Python)", "exec"), {})


def test_every_page_with_a_shell_block_is_run():
    pages = {str(p.relative_to(ROOT)) for p in [ROOT / "README.md", *(ROOT / "docs").rglob("*.md")]
             if blocks(p, "bash")}
    assert pages == set(PAGES)
