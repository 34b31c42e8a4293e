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
    # issue 80 (a sibling of the damaged tables): a shard whose vectors changed at their own size is encoded again
    import numpy as np

    path = shard_dir(tmp_path / "emb", 0, 2) / "embeddings.npy"
    damaged = np.load(path)
    damaged[:] = damaged[::-1]
    np.save(path, damaged)
    encode_corpus(docs, encoder(-1.0), tmp_path / "emb", batch_size=8, rank=0, world=2, key="model-b")
    assert calls == [3, 3, 3]
    assert np.isclose(load_embeddings(shard_dir(tmp_path / "emb", 0, 2))[0][0, 0], -2 ** -0.5)  # d0 [-1, 1], normalised


def _unit(n: int, d: int, seed: int = 1):
    import numpy as np

    rng = np.random.default_rng(seed)
    v = rng.standard_normal((n, d)).astype(np.float32)
    return v / np.linalg.norm(v, axis=1, keepdims=True)


def test_sharded_search_ranks_as_one_flat_index():
    """Issue 51: shard by shard (each index built, searched, freed), the tops merged: the flat index's ranking."""
    from irglow.data.records import Query
    from irglow.dense.encode import dense_search, faiss_index, sharded_search

    v = _unit(3000, 32)
    q = v[:15] + 0.05 * _unit(15, 32, 2)
    ids, queries = [f"d{i}" for i in range(3000)], [Query(f"q{i}", "x") for i in range(15)]
    whole = dense_search(faiss_index(v), ids, queries, q, 100)
    for rows in (700, 1000, 5000):
        sharded = sharded_search(v, ids, queries, q, 100, shard_rows=rows)
        assert {k: [d for d, _ in r] for k, r in sharded.ranking.items()} == \
            {k: [d for d, _ in r] for k, r in whole.ranking.items()}


def test_ivf_kinds_search_and_ivfpq_refuses_a_small_corpus():
    import pytest

    from irglow.dense.encode import faiss_index

    v = _unit(4000, 32)
    index = faiss_index(v, "ivf", nprobe=1000)  # every list probed: exact
    _, rows = index.search(v[:5], 1)
    assert rows[:, 0].tolist() == [0, 1, 2, 3, 4]
    with pytest.raises(ValueError, match="ivfpq trains 256 codes per sub-vector on at least 9,984 vectors"):
        faiss_index(v, "ivfpq")
    with pytest.raises(ValueError, match="faiss index kind must be one of flat, hnsw, ivf, ivfpq"):
        faiss_index(v, "lsh")


def test_an_encoding_killed_halfway_resumes_with_the_batches_it_had_not_finished(tmp_path, monkeypatch):
    """Issue 51 item 4: batches are marked done after their vectors are flushed; the re-launched encoding (same key,
    same documents) encodes only the others and ends with the uninterrupted run's vectors and ids."""
    import numpy as np
    import pytest
    import torch

    import irglow.dense.encode as encode_module
    from irglow.data.records import make_document
    from irglow.dense.encode import encode_corpus, load_embeddings

    monkeypatch.setattr(encode_module, "MARK_SECONDS", 0.0)  # mark after every batch
    docs = [make_document(f"d{i}", body="word " * (i % 7 + 1)) for i in range(40)]

    def vectors_of(batch):
        return torch.tensor([[float(len(d.text("body"))), float(int(d.doc_id[1:])), 1.0] for d in batch])

    encode_corpus(docs, vectors_of, tmp_path / "whole", 4, key="k")
    seen = []

    def dies_after_three(batch):
        if len(seen) == 3:
            raise RuntimeError("killed")
        seen.append(len(batch))
        return vectors_of(batch)

    with pytest.raises(RuntimeError, match="killed"):
        encode_corpus(docs, dies_after_three, tmp_path / "emb", 4, key="k")
    assert not (tmp_path / "emb").exists() and (tmp_path / "emb.partial").is_dir()
    counted = []
    encode_corpus(docs, lambda b: counted.append(len(b)) or vectors_of(b), tmp_path / "emb", 4, key="k")
    assert sum(counted) == 40 - 12  # three batches of four were on disk already
    got, ids = load_embeddings(tmp_path / "emb")
    want, want_ids = load_embeddings(tmp_path / "whole")
    assert np.array_equal(got, want) and ids == want_ids == [d.doc_id for d in docs]
    assert not (tmp_path / "emb.partial").exists()
    # another key (another model): nothing reused
    counted.clear()
    with pytest.raises(RuntimeError):
        seen.clear()
        encode_corpus(docs, dies_after_three, tmp_path / "other", 4, key="k")
    encode_corpus(docs, lambda b: counted.append(len(b)) or vectors_of(b), tmp_path / "other", 4, key="another")
    assert sum(counted) == 40


def test_a_two_step_encoder_is_prepared_ahead_on_a_thread_and_gives_what_one_step_gives(tmp_path):
    """Issue 69 item 3: ``TwoStep``'s ``prepare`` runs on a thread ahead of ``forward`` (the model waits on no
    features where a core is free); the vectors are the one-step encoder's, a ``prepare`` error surfaces in the
    caller, and a consumer that stops early leaves no thread behind."""
    import threading

    import numpy as np
    import pytest
    import torch

    from irglow.data.records import make_document
    from irglow.dense.encode import TwoStep, encode, prefetched

    docs = [make_document(f"d{i}", body="word " * (i % 5 + 1)) for i in range(30)]
    threads = set()

    def prepare(batch):
        threads.add(threading.current_thread().name)
        return torch.tensor([[float(len(d.text("body"))), float(int(d.doc_id[1:])) + 1.0] for d in batch])

    two = encode(docs, TwoStep(prepare, lambda x: x * 2), 4)
    one = encode(docs, lambda b: prepare(b) * 2, 4)
    assert np.array_equal(two, one) and "irglow-prefetch" in threads

    def fails(batch):
        if int(batch[0].doc_id[1:]) > 10:
            raise ValueError("bad document")
        return prepare(batch)

    with pytest.raises(ValueError, match="bad document"):
        encode(docs, TwoStep(fails, lambda x: x), 4)
    steps = prefetched(lambda j: j * j, range(1000), depth=2)
    assert [next(steps) for _ in range(3)] == [(0, 0), (1, 1), (2, 4)]
    steps.close()  # the consumer stops: the producer, blocked on a full queue, is released and ends
    assert not [t for t in threading.enumerate() if t.name == "irglow-prefetch"]
