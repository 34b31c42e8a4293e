"""Issue 68.3: one BM25 per experiment — the pools a trainer searches (GLOW's hard negatives and validation pools, a
re-ranker's negatives and validation candidates) take the experiment's bound ``[lexical]`` k1 and b, and a model
trained on other pools is another model (its training folder's key moves)."""

from __future__ import annotations

import pytest

from irglow.lexical.searchers import pool_config, pool_inputs
from tests.integration.pipelines import SMALL_DEMO


class _Stop(Exception):
    pass


@pytest.mark.parametrize("stage", ["glow", "rerank"])
def test_the_experiments_bm25_reaches_the_trainers_pools(tmp_path, monkeypatch, stage):
    from irglow.models.glow.train import GlowTrainer
    from irglow.models.rerank.train import RerankTrainer
    from irglow.pipeline import run_pipeline

    seen = {}

    def train(self, *args, **kwargs):  # what the stage hands its trainer, then stop: the pools are what is tested
        seen[k1] = (kwargs.get("bm25"), self.out)
        raise _Stop

    monkeypatch.setattr(GlowTrainer if stage == "glow" else RerankTrainer, "train", train)
    k1 = 1.6
    config = {"data_dir": str(tmp_path / "data"), "collection": {"name": SMALL_DEMO},
              "output": {"dir": str(tmp_path / "out")}, "lexical": {"systems": ["bm25"], "k1": k1, "b": 0.5},
              stage: {"enabled": True}}
    with pytest.raises(_Stop):
        run_pipeline(config)
    bm25, folder = seen[k1]
    pool = pool_config(bm25, 30)
    assert (pool.system, pool.k1, pool.b, pool.depth, pool.rm3) == ("bm25", 1.6, 0.5, 30, False)
    # another pool, another model: the training folder's key holds the pool's k1 and b (the defaults add nothing, so
    # the models trained before keep their folders)
    assert pool_inputs(bm25) == {"bm25": {"k1": 1.6, "b": 0.5}}
    assert pool_inputs(pool_config(None, 30)) == {} == pool_inputs(None)
