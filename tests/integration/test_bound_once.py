"""Issue 54: the configuration is read once, by binding.  ``configs/demo.toml`` — every stage, the model stages
included — runs from its plan with the dictionary sealed (any read after binding is an error,
:class:`irglow.config.SealedConfig`); ``irglow run`` seals it the same way, so the miniature MS MARCO job
(test_msmarco_pipeline, configs/msmarco.toml through the command) checks that configuration too."""

from __future__ import annotations

import pytest

from irglow.config import SealedConfig, load_config
from irglow.pipeline import run_pipeline
from irglow.plan import bind_plan
from tests.integration.pipelines import SMALL_DEMO
from tests.integration.torchrun import tiny_bert

TINY = ["index.threads=1", "lexical.threads=1", "lexical.depth=30", "output.clusters=0",
        "twbert.epochs=1", "twbert.candidates=10", "twbert.batch_queries=4", "twbert.model.max_query_tokens=16",
        "glow.max_steps=2", "glow.batch_size=4", "glow.model.field_max_tokens={'body': 16}",
        "rerank.depth=5", "rerank.monobert.max_steps=2", "rerank.monobert.val_depth=5",
        "rerank.monobert.model.default_field_tokens=16", "rerank.nrmf.epochs=1", "rerank.nrmf.val_depth=5"]


@pytest.mark.slow
def test_demo_runs_every_stage_from_its_plan_with_the_configuration_sealed(tmp_path):
    bert = tiny_bert(tmp_path / "bert")
    config = SealedConfig(load_config("configs/demo.toml", [
        *TINY, f"collection.name={SMALL_DEMO}", f"data_dir={tmp_path / 'data'}", f"output.dir={tmp_path / 'out'}",
        f"twbert.model.base_model={bert}", f"glow.model.base_model={bert}",
        f"rerank.monobert.model.base_model={bert}"]))
    plan = bind_plan(config)
    config.seal()
    assert [s.name for s, _ in plan.stages] == ["lexical", "twbert", "glow", "rerank", "fusion"]
    run_pipeline(plan)
    assert {p.stem for p in (tmp_path / "out").glob("*.run")} == set(plan.tags)
