"""``irglow zero-shot`` under ``torchrun`` (gloo on CPUs): two processes give the run files and cross-collection
table one process gives with the same settings (two batches per optimizer step: one on each rank).  The whole MS MARCO pipeline under torchrun, with a killed
rank and the resumed job, is tested in ``test_msmarco_pipeline``."""

from __future__ import annotations

import json

import pytest

from tests.integration.torchrun import irglow, run_files, tiny_bert


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
        # one data folder: the indexes built by the first job serve the second (torchrun's own index builds are
        # test_msmarco_pipeline's)
        config.write_text(ZERO_SHOT.format(data=tmp_path / "data", out=tmp_path / name, bert=bert,
                                           accum=2))
        irglow(["zero-shot", "--config", str(config)], nproc, tmp_path)
    assert run_files(tmp_path / "one") == run_files(tmp_path / "two")
    assert (tmp_path / "one" / "zero-shot.csv").read_text() == (tmp_path / "two" / "zero-shot.csv").read_text()
    assert json.loads((tmp_path / "two" / "manifest.json").read_text())["world_size"] == 2
