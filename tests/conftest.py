"""Shared fixtures: a tiny in-memory collection with hand-checkable statistics, and its index."""

from __future__ import annotations

import os
import shutil

import pytest

os.environ.setdefault("HF_HUB_OFFLINE", "1")
os.environ.setdefault("TOKENIZERS_PARALLELISM", "false")
if os.environ.get("PYTEST_XDIST_WORKER"):
    # one thread of torch/BLAS per worker: the workers share the cores, and more threads than cores only
    # wait on each other (make test: 3 min 20 s this way, 4 min 45 s with torch's default on 2 cores)
    for var in ("OMP_NUM_THREADS", "MKL_NUM_THREADS"):
        os.environ.setdefault(var, "1")

# trained models and corpus encodings are kept in one folder every output folder shares ($IRGLOW_MODELS): a test
# session's own, so no test finds a model an earlier session (or the user's runs) trained; each test has its own
# (the fixture below), so none finds another's
import tempfile  # noqa: E402

os.environ["IRGLOW_MODELS"] = tempfile.mkdtemp(prefix="irglow-test-models-")

from hypothesis import settings as hypothesis_settings  # noqa: E402

# property tests draw the same examples on every run (`make test`, CI): a suite's colour says what changed in the
# code, not which examples a run happened to draw.  HYPOTHESIS_PROFILE=explore draws new ones (what found the BEIR
# qrels case pinned in test_reader_differential.py); a failure it finds is then pinned with @example
hypothesis_settings.register_profile("ci", derandomize=True, print_blob=True)
hypothesis_settings.register_profile("explore", derandomize=False, print_blob=True)
hypothesis_settings.load_profile(os.environ.get("HYPOTHESIS_PROFILE", "ci"))

from irglow.data.records import Qrel, Query, make_document  # noqa: E402


class TinyCollection:
    """Three documents; body lengths 3, 2, 4 after analysis (avgdl 3), one without a title."""

    name = "tiny-v1"
    fields = ("title", "body")

    def __init__(self):
        self.docs = [
            make_document("d1", title="fruit", body="apple banana apple"),
            make_document("d2", body="banana cherry"),  # no title: indexed without it
            make_document("d3", title="stone fruit", body="cherry cherry cherry date"),
        ]

    def docs_iter(self):
        yield from self.docs

    def docs_count(self):
        return len(self.docs)

    def queries(self, split="test"):
        return [Query("q1", "apple"), Query("q2", "cherry fruit"), Query("q3", "the of and")]

    def qrels(self, split="test"):
        return [Qrel("q1", "d1", 1), Qrel("q2", "d3", 2), Qrel("q2", "d2", 1)]


@pytest.fixture(autouse=True)
def own_models_folder(tmp_path, monkeypatch):
    """Each test trains into its own models folder (as each made its own output folder before models were shared);
    a test of sharing sets ``IRGLOW_MODELS`` itself."""
    monkeypatch.setenv("IRGLOW_MODELS", str(tmp_path / "models"))


@pytest.fixture(autouse=True)
def own_defined_kinds(monkeypatch):
    """The re-ranker kinds a test uses as objects are known to that test alone (irglow.utils.plugins.define: per
    process, and a worker runs many tests)."""
    from irglow.utils import plugins

    monkeypatch.setattr(plugins, "_DEFINED", {})


@pytest.fixture(scope="session")
def tiny_collection():
    return TinyCollection()


@pytest.fixture(scope="session")
def tiny_index(tmp_path_factory, tiny_collection):
    from irglow.index.lucene_index import IndexConfig, build_index

    return build_index(tiny_collection, IndexConfig(threads=1), root=tmp_path_factory.mktemp("data"))


@pytest.fixture(scope="session")
def demo_index(tmp_path_factory):
    from irglow.data.demo import DemoCollection
    from irglow.index.lucene_index import IndexConfig, build_index

    return build_index(DemoCollection(), IndexConfig(threads=2), root=tmp_path_factory.mktemp("demo"))


@pytest.fixture(scope="module")
def module_tmp(tmp_path_factory, request):
    """A folder for one module's shared fixtures, removed when the module's last test is done.

    The suite's disk use stays bounded: model fixtures write hundreds of MB each (CI's /tmp holds about 5 GB), and
    pytest keeps ``tmp_path_factory`` folders to the end of the session (``tmp_path`` folders of passing tests go at
    once: ``tmp_path_retention_policy = "failed"``)."""
    path = tmp_path_factory.mktemp(request.module.__name__.rsplit(".", 1)[-1])
    yield path
    shutil.rmtree(path, ignore_errors=True)


def pytest_collection_modifyitems(config, items):
    """The modules holding slow tests first, in the order collected (the Makefile passes
    ``--no-loadscope-reorder``): pytest-xdist hands whole modules to its workers, by default the modules with the
    most tests first, which left the few long end-to-end modules (torchrun, the miniature MS MARCO) to start last,
    on one worker, while the other had nothing left — a long job started first ends with the short ones."""
    slow = {item.nodeid.split("::")[0] for item in items if item.get_closest_marker("slow")}
    items.sort(key=lambda item: item.nodeid.split("::")[0] not in slow)


def pytest_configure(config):
    config.addinivalue_line("markers", "pretrained: uses the packaged MiniLM's own weights (a test of what it has "
                            "learned, or of its size); every other test's 'default' checkpoint is a tiny BERT of the "
                            "same architecture and vocabulary")



@pytest.fixture(scope="session")
def tiny_bert_dir(tmp_path_factory) -> str:
    """A 2-layer, 32-wide BertModel with MiniLM's tokenizer and no dropout (``tests.integration.torchrun``)."""
    from tests.integration.torchrun import tiny_bert

    return tiny_bert(tmp_path_factory.mktemp("tiny-bert"))


@pytest.fixture(scope="session", autouse=True)
def _tiny_default_checkpoint(request):
    """'default' (and 'minilm') resolve to the tiny BERT in this process, except in tests marked ``pretrained``:
    plumbing (resumption, caching, folds, runs) is the same code at any width, and MiniLM's training steps and
    checkpoints (88 MB, 260 MB with the optimizer) were most of the suite's time and disk.  Made on first use, so
    a machine without the packaged MiniLM (``tests/gpu`` on a bare GPU host) never needs it."""
    from irglow.models import checkpoints

    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(checkpoints, "default_checkpoint", lambda: request.getfixturevalue("tiny_bert_dir"))
        yield


@pytest.fixture(autouse=True)
def _pretrained_default_checkpoint(request):
    if request.node.get_closest_marker("pretrained") is None:
        yield
        return
    from irglow.models import checkpoints
    from tests.integration.torchrun import packaged_minilm

    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(checkpoints, "default_checkpoint", packaged_minilm)
        yield
