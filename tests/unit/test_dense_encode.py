"""Dense encoding (irglow.dense.encode): shards keyed on the model that wrote them."""

from __future__ import annotations


def test_a_shard_left_by_another_model_is_encoded_again(tmp_path):
    """Issue 21.11: an interrupted sharded encoding is reused only for the same documents and model key."""
    import torch

    from irglow.data.records import make_document
    from irglow.dense.encode import encode_corpus, load_embeddings, shard_dir

    docs = [make_document(f"d{i}", body="x" * (i + 1)) for i in range(6)]
    calls = []

    def encoder(scale):
        def run(batch):
            calls.append(len(batch))
            return torch.tensor([[float(len(d.text("body"))) * scale, 1.0] for d in batch])
        return run

    encode_corpus(docs, encoder(1.0), tmp_path / "emb", batch_size=8, rank=0, world=2, key="model-a")
    assert calls == [3]
    encode_corpus(docs, encoder(1.0), tmp_path / "emb", batch_size=8, rank=0, world=2, key="model-a")
    assert calls == [3]  # same documents, same model: reused
    encode_corpus(docs, encoder(-1.0), tmp_path / "emb", batch_size=8, rank=0, world=2, key="model-b")
    assert calls == [3, 3]  # another model: encoded again
    vectors, ids = load_embeddings(shard_dir(tmp_path / "emb", 0, 2))
    assert ids == ["d0", "d1", "d2"] and vectors[0, 0] < 0
