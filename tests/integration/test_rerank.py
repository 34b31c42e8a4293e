"""Re-rankers: NRM-F's hashing, masking and field dropout, the two losses, model round trips, and
re-ranking that leaves what lies below the depth alone."""

from __future__ import annotations

import math

import pytest
import torch

from irglow.data.records import Query, make_document
from irglow.models.rerank.nrmf import NRMF, NRMFConfig, masked_mean, trigram_ids, trigrams
from irglow.models.rerank.rerank import rerank, rerank_ranking
from irglow.models.rerank.train import RerankTrainConfig, RerankTrainer, pairwise_loss, softmax_loss
from irglow.runs.trec import Run

SMALL = dict(fields=["title", "anchor"], hash_buckets=1000, embedding_dim=8, filters=8, dim=8, hidden=8,
             dropout=0.0, default_field_dropout=0.0)


def test_trigram_hashing_of_a_fixed_word():
    assert trigrams("Good") == ["#go", "goo", "ood", "od#"]
    # 1 + CRC-32 mod 999: CRC-32 of "#go" 855351298, "goo" 2377191190, "ood" 342918950, "od#" 524061406
    assert trigram_ids("good", 1000, 16) == [506, 761, 213, 992]
    assert trigram_ids("good", 1000, 2) == [506, 761]
    assert trigrams("a") == ["#a#"]


def test_masked_mean_averages_present_instances_only():
    v = torch.tensor([[[1.0, 2.0], [3.0, 4.0], [100.0, 100.0]], [[5.0, 5.0], [7.0, 7.0], [9.0, 9.0]]])
    m = torch.tensor([[1.0, 1.0, 0.0], [0.0, 0.0, 0.0]])
    assert masked_mean(v, m).tolist() == [[2.0, 3.0], [0.0, 0.0]]  # (1+3)/2, (2+4)/2; all masked → 0


def test_a_missing_instance_changes_nothing_with_masking_and_something_without():
    torch.manual_seed(0)
    model = NRMF(NRMFConfig(**SMALL)).eval()
    two = make_document("d", title="fruit", anchor=["apple pie", "cherry"])
    # the same two instances, then a third that is present in the data but empty: it is dropped on load
    # (make_document), so compare against the model's own padding: a batch whose other document has 3
    three = make_document("e", title="x", anchor=["a b", "c", "d e f"])
    alone = model.score(["apple"], [two])
    padded = model.score(["apple", "apple"], [two, three])[0]
    assert torch.allclose(alone, padded.unsqueeze(0), atol=1e-6)
    unmasked = NRMF(NRMFConfig(**{**SMALL, "mask_instances": False}))
    unmasked.load_state_dict(model.state_dict())
    unmasked.eval()
    a = unmasked.score(["apple"], [two])
    b = unmasked.score(["apple", "apple"], [two, three])[0]
    assert not torch.allclose(a, b.unsqueeze(0), atol=1e-6)  # the padded slot now counts in the average


def test_field_dropout_only_while_training():
    torch.manual_seed(0)
    model = NRMF(NRMFConfig(**{**SMALL, "field_dropout": {"title": 1.0, "anchor": 1.0}}))
    doc, empty = make_document("d", title="fruit", anchor="apple"), make_document("e", title="zz")
    model.eval()
    assert torch.equal(model.score(["apple"], [doc]), model.score(["apple"], [doc]))
    with_fields = model.score(["apple"], [doc])
    model.train()  # every field dropped: the document looks like one with no fields at all
    dropped = model.score(["apple"], [doc])
    no_fields = NRMF(NRMFConfig(**{**SMALL, "fields": ["title", "anchor"]}))
    no_fields.load_state_dict(model.state_dict())
    no_fields.eval()
    nothing = no_fields.score(["apple"], [make_document("n", body="unused field")])
    assert torch.allclose(dropped, nothing, atol=1e-6) and not torch.allclose(dropped, with_fields)
    assert empty.doc_id == "e"


def test_losses_by_hand():
    scores = torch.tensor([[2.0, 0.0, 1.0]])
    # −log softmax: −2 + log(e² + 1 + e) = −2 + log 11.107338 = 0.407606
    assert softmax_loss(scores).item() == pytest.approx(0.407606, abs=1e-6)
    # labels 2, 0, 1 → gains 4, 1, 2; pairs (0>1) w 3 diff 2, (0>2) w 2 diff 1, (2>1) w 1 diff 1
    # (3·log(1+e⁻²) + 2·log(1+e⁻¹) + 1·log(1+e⁻¹)) / 6 = (0.380784 + 0.626523 + 0.313262) / 6
    expected = (3 * math.log1p(math.exp(-2)) + 3 * math.log1p(math.exp(-1))) / 6
    assert expected == pytest.approx(0.220095, abs=1e-6)
    assert pairwise_loss(scores, torch.tensor([[2, 0, 1]])).item() == pytest.approx(expected, abs=1e-6)


def test_rerank_keeps_documents_below_depth_in_their_order():
    ranking = [("a", 9.0), ("b", 8.0), ("c", 7.0), ("gone", 6.5), ("d", 6.0), ("e", 5.0)]
    out = rerank_ranking(ranking, {"a": 0.1, "b": 0.7, "c": 0.4}, depth=4)
    assert [d for d, _ in out] == ["b", "c", "a", "gone", "d", "e"]  # "gone": not scorable, kept below
    assert out[3][1] == pytest.approx(0.1 - 1) and out[5][1] == pytest.approx(0.1 - 3)


class _Overlap(torch.nn.Module):
    """A stand-in model: the number of query words in the document's title."""

    kind = "overlap"

    def __init__(self):
        super().__init__()
        self.p = torch.nn.Parameter(torch.zeros(1))

    def score(self, queries, docs):
        return torch.tensor([float(len(set(q.split()) & set(d.text("title").split()))) for q, d in zip(queries, docs)])


def test_rerank_run_end_to_end():
    docs = {i: make_document(i, title=t) for i, t in [("x", "red apple"), ("y", "apple"), ("z", "pear")]}
    run = Run({"q": [("z", 3.0), ("y", 2.0), ("x", 1.0), ("w", 0.5)]}, "bm25")
    out = rerank(_Overlap(), run, [Query("q", "red apple")], docs, depth=2, batch_size=1)
    assert [d for d, _ in out.ranking["q"]] == ["y", "z", "x", "w"]  # top 2 re-ranked, x and w untouched


def test_a_rerank_killed_halfway_resumes_to_the_same_run(tmp_path, monkeypatch):
    """Issue 51 item 4: finished batches go to the checkpoint; the re-launch scores only the others (the same
    batches: the same scores) and writes the uninterrupted run's file; the checkpoint is then removed."""
    import irglow.models.rerank.rerank as rerank_module

    monkeypatch.setattr(rerank_module, "MARK_SECONDS", -1.0)  # every batch written at once
    words = ["red", "apple", "pear", "fig", "plum"]
    docs = {f"d{i}": make_document(f"d{i}", title=" ".join(words[j] for j in range(5) if (i >> j) & 1))
            for i in range(32)}
    queries = [Query(f"q{k}", f"{words[k]} {words[(k + 1) % 5]}") for k in range(5)]
    run = Run({q.query_id: [(f"d{i}", 32.0 - i) for i in range(32)] for q in queries}, "bm25")
    whole = rerank(_Overlap(), run, queries, docs, depth=20, batch_size=8)
    checkpoint = tmp_path / ".x.partial.jsonl"

    class Dies(_Overlap):
        calls = 0

        def score(self, queries, docs):
            Dies.calls += 1
            if Dies.calls == 4:
                raise RuntimeError("killed")
            return super().score(queries, docs)

    with pytest.raises(RuntimeError, match="killed"):
        rerank(Dies(), run, queries, docs, depth=20, batch_size=8, checkpoint=checkpoint)
    assert len(checkpoint.read_text().splitlines()) == 1 + 3  # the key, then three scored batches

    class Counts(_Overlap):
        pairs = 0

        def score(self, queries, docs):
            Counts.pairs += len(queries)
            return super().score(queries, docs)

    resumed = rerank(Counts(), run, queries, docs, depth=20, batch_size=8, checkpoint=checkpoint)
    assert Counts.pairs == 5 * 20 - 3 * 8 and not checkpoint.exists()
    assert resumed.write(tmp_path / "a.run").read_bytes() == whole.write(tmp_path / "b.run").read_bytes()


def test_nrmf_save_load_round_trip(tmp_path):
    torch.manual_seed(0)
    model = NRMF(NRMFConfig(**SMALL)).eval()
    doc = make_document("d", title="stone fruit", anchor=["cherry", "date"])
    before = model.score(["cherry fruit"], [doc])
    loaded = NRMF.load(model.save(tmp_path / "nrmf")).eval()
    assert torch.equal(before, loaded.score(["cherry fruit"], [doc]))
    assert loaded.config == model.config


def test_monobert_featurize_and_round_trip(tmp_path):
    from irglow.models.rerank.monobert import MonoBERT, MonoBERTConfig

    model = MonoBERT.from_pretrained_bert(MonoBERTConfig(fields=["title", "body"], field_max_tokens={"title": 2},
                                                         default_field_tokens=3)).eval()
    doc = make_document("d", title="stone fruit salad", body="cherry cherry cherry date")
    batch = model.featurize(["apple pie"], [doc])
    tok = model.tokenizer
    words = tok.convert_ids_to_tokens(batch["input_ids"][0].tolist())
    # [CLS] query [SEP] title (2 pieces) [SEP] body (3 pieces) [SEP]; segment 0 for the query, 1 after
    assert words == ["[CLS]", "apple", "pie", "[SEP]", "stone", "fruit", "[SEP]", "cherry", "cherry", "cherry",
                     "[SEP]"]
    assert batch["token_type_ids"][0].tolist() == [0] * 4 + [1] * 7
    before = model.score(["apple pie"], [doc])
    loaded = MonoBERT.load(model.save(tmp_path / "mono")).eval()
    assert torch.allclose(before, loaded.score(["apple pie"], [doc]), atol=1e-6)


def test_trainer_learns_and_resumes(tiny_index, tiny_collection, tmp_path):
    docs = {d.doc_id: d for d in tiny_collection.docs_iter()}
    cfg = RerankTrainConfig.from_dict({"kind": "nrmf", "model": dict(SMALL, fields=["title", "body"]),
                                       "negatives": 1, "batch_queries": 1, "epochs": 2, "val_fraction": 0.0})
    best = RerankTrainer(cfg, tmp_path / "m").train(tiny_index, docs, tiny_collection.queries(),
                                                    tiny_collection.qrels())
    import json

    info = json.loads((tmp_path / "m" / "training.json").read_text())
    assert info["train_queries"] == 2 and info["state"]["step"] == 4 and (best / "nrmf.json").is_file()
    # no query could be held out for validation: the trained model is kept, not the untrained start (issue 21)
    assert info["state"]["best_step"] == 4
    # a third epoch resumes from the checkpoint (weights_only) rather than starting over
    cfg.epochs = 3
    RerankTrainer(cfg, tmp_path / "m").train(tiny_index, docs, tiny_collection.queries(), tiny_collection.qrels())
    info = json.loads((tmp_path / "m" / "training.json").read_text())
    assert info["state"]["step"] == 6 and info["state"]["epoch"] == 3
    with pytest.raises(ValueError, match=r"unknown \[rerank\.\w+\] setting"):
        RerankTrainConfig.from_dict({"kind": "nrmf", "epoch": 1})


def test_trainer_does_not_validate_twice_at_an_epoch_end(tiny_index, tiny_collection, tmp_path):
    """2 training queries, batches of 1, 2 epochs = steps 1..4; every 2 steps: the untrained model,
    step 2 (periodic — the epoch end at step 2 is the same model, not validated again) and step 4."""
    import json

    docs = {d.doc_id: d for d in tiny_collection.docs_iter()}
    cfg = RerankTrainConfig.from_dict({"kind": "nrmf", "model": dict(SMALL, fields=["title", "body"]),
                                       "negatives": 1, "batch_queries": 1, "epochs": 2, "val_fraction": 0.0,
                                       "eval_every": 2})
    RerankTrainer(cfg, tmp_path / "m").train(tiny_index, docs, tiny_collection.queries(), tiny_collection.qrels())
    info = json.loads((tmp_path / "m" / "training.json").read_text())
    assert [h["step"] for h in info["state"]["history"]] == [0, 2, 4]


def test_the_last_step_is_always_validated(tiny_index, tiny_collection, tmp_path):
    """Issue 37 item 6: max_steps 1 with eval_every 30 validated only the untrained model and kept it silently;
    the last step is validated and training.json says which step was kept and why."""
    import json

    docs = {d.doc_id: d for d in tiny_collection.docs_iter()}
    cfg = RerankTrainConfig.from_dict({"kind": "nrmf", "model": dict(SMALL, fields=["title", "body"]),
                                       "negatives": 1, "batch_queries": 1, "epochs": 2, "val_fraction": 0.0,
                                       "eval_every": 30, "max_steps": 1})
    RerankTrainer(cfg, tmp_path / "m").train(tiny_index, docs, tiny_collection.queries(), tiny_collection.qrels())
    info = json.loads((tmp_path / "m" / "training.json").read_text())
    assert [h["step"] for h in info["state"]["history"]] == [0, 1]
    assert info["kept"].startswith(f"step {info['state']['best_step']}")


def _beir(folder, n=12):
    """A small BEIR folder: document i is about word w<i>; query i asks for it."""
    import json

    folder.mkdir()
    words = [f"w{i}x" for i in range(n)]
    with open(folder / "corpus.jsonl", "w") as f:
        for i, w in enumerate(words):
            f.write(json.dumps({"_id": f"d{i}", "title": f"{w} report", "text": f"{w} {w} and {words[(i + 1) % n]}"})
                    + "\n")
    with open(folder / "queries.jsonl", "w") as f:
        for i, w in enumerate(words):
            f.write(json.dumps({"_id": f"q{i}", "text": f"{w} report"}) + "\n")
    (folder / "qrels").mkdir()
    for split in ("train", "test"):
        (folder / "qrels" / f"{split}.tsv").write_text(
            "query-id\tcorpus-id\tscore\n" + "".join(f"q{i}\td{i}\t1\n" for i in range(n)))
    return folder


def test_cli_train_rerank_and_explain(tmp_path, capsys):
    from irglow.cli import main

    data = _beir(tmp_path / "coll")
    sets = [f"--set=model.{k}={v}" for k, v in (("embedding_dim", 8), ("filters", 8), ("dim", 8), ("hidden", 8),
                                                ("hash_buckets", 1000))]
    assert main(["nrmf", "train", str(data), "--out", str(tmp_path / "m"), "--data-dir", str(tmp_path / "idx"),
                 "--set=epochs=1", "--set=batch_queries=4", "--set=negatives=1", *sets]) == 0
    best = tmp_path / "m" / "best"
    assert (best / "nrmf.json").is_file() and (tmp_path / "m" / "manifest.json").is_file()
    run = tmp_path / "bm25.run"
    Run({"q1": [("d1", 3.0), ("d0", 2.0), ("d5", 1.0), ("nowhere", 0.5)]}, "bm25").write(run)
    out = tmp_path / "out" / "nrmf.run"
    assert main(["rerank", str(run), "--model", str(best), "--data", str(data), "--depth", "2", "-o", str(out)]) == 0
    reranked = Run.read(out)
    assert [d for d, _ in reranked.ranking["q1"]][2:] == ["d5", "nowhere"]  # below the depth: untouched
    assert sorted(d for d, _ in reranked.ranking["q1"][:2]) == ["d0", "d1"] and reranked.tag == "bm25-nrmf"
    capsys.readouterr()
    assert main(["nrmf", "explain", str(data), "--model", str(best), "--query", "w1x report", "--doc", "d1"]) == 0
    table = capsys.readouterr().out
    assert "| d1 |" in table and "without title" in table and "without text" in table


@pytest.mark.parametrize("kind, model", [
    ("nrmf", dict(SMALL, fields=["title", "body"])),
    pytest.param("monobert", {"fields": ["title", "body"], "default_field_tokens": 6, "query_max_tokens": 6},
                 marks=pytest.mark.slow)])
def test_a_resumed_training_is_the_uninterrupted_one(tiny_index, tiny_collection, tmp_path, monkeypatch, kind, model):
    """A re-ranker killed after its first epoch's checkpoint and resumed equals the one trained at once: the
    negatives' sampler travels in the checkpoint (a sampler seeded afresh on resume drew other negatives: the
    SciFact monoBERT resumed at step 91 departed from the uninterrupted curve, 0.6866 against 0.6462 at step 120),
    and torch's RNG with it (monoBERT's dropout)."""
    import irglow.models.training as train_module
    from tests.integration.resumed import assert_resumed_is_uninterrupted

    docs = {d.doc_id: d for d in tiny_collection.docs_iter()}
    queries, qrels = tiny_collection.queries(), tiny_collection.qrels()
    cfg = RerankTrainConfig.from_dict({"kind": kind, "model": model, "negatives": 2, "batch_queries": 1, "epochs": 3,
                                       "val_fraction": 0.0, "negative_depth": 3})
    assert_resumed_is_uninterrupted(
        monkeypatch, train_module, lambda out: RerankTrainer(cfg, out).train(tiny_index, docs, queries, qrels),
        tmp_path, evaluations=4)
