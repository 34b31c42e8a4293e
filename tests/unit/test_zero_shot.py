"""Zero-shot evaluation (irglow.zero_shot): which collections are in-domain."""

from __future__ import annotations

import json
import shutil

from irglow.data.beir import BeirCollection
from irglow.zero_shot import Seen, doc_sample, shared_between


def _beir(folder, docs, queries):
    (folder / "qrels").mkdir(parents=True)
    (folder / "corpus.jsonl").write_text("".join(json.dumps({"_id": f"d{i}", "title": "", "text": t}) + "\n"
                                                 for i, t in enumerate(docs)))
    (folder / "queries.jsonl").write_text("".join(json.dumps({"_id": f"q{i}", "text": t}) + "\n"
                                                  for i, t in enumerate(queries)))
    (folder / "qrels" / "test.tsv").write_text("query-id\tcorpus-id\tscore\nq0\td0\t1\n")
    return BeirCollection(folder)


def test_a_copy_under_another_name_is_in_domain_and_a_stranger_is_not(tmp_path):
    train = _beir(tmp_path / "scifact", ["Lyme disease ticks", "quantum  entanglement", ""], ["lyme ticks", "spin"])
    shutil.copytree(tmp_path / "scifact", tmp_path / "renamed")
    copy = BeirCollection(tmp_path / "renamed")
    stranger = _beir(tmp_path / "other", ["zebra stripes", ""], ["zebra"])
    seen = Seen.of([(train, train.queries("test"))])
    assert seen.shared(copy, copy.queries("test")) == ("2 of its first 2 documents and 1 of its 1 queries occur in "
                                                       "the collections training or validation chose on")
    assert seen.shared(stranger, stranger.queries("test")) is None  # empty documents share nothing
    same_queries = _beir(tmp_path / "qonly", ["unrelated text"], ["LYME   ticks"])  # case and spaces folded
    assert "1 of its 1 queries" in seen.shared(same_queries, same_queries.queries("test"))


def test_a_folder_without_qrels_is_one_note_not_a_traceback(tmp_path, caplog):
    """Issue 37 item 10: zero-shot on a BEIR folder without qrels printed a traceback (and built its index)."""
    from irglow.zero_shot import _load

    (tmp_path / "corpus.jsonl").write_text('{"_id": "d1", "text": "a b"}\n')
    (tmp_path / "queries.jsonl").write_text('{"_id": "q1", "text": "a"}\n')
    notes = []
    assert _load(str(tmp_path), "test", {}, notes, "x") is None
    assert notes == [f"x not evaluated: {tmp_path} has no qrels for split 'test'; splits: []"]
    assert "Traceback" not in caplog.text


def test_listed_collections_sharing_a_corpus_are_said_to(tmp_path):
    """Two listed collections over one corpus (NFCorpus dev and test, or one collection under two names) are not
    two independent pieces of evidence for the pooled effect: the table says so; unrelated ones get no note."""
    dev = _beir(tmp_path / "dev", ["vitamin d", "statins", "fish oil"], ["a"])
    test = _beir(tmp_path / "test", ["fish  oil", "statins", "kale"], ["b"])
    other = _beir(tmp_path / "other", ["zebra stripes"], ["c"])
    notes = shared_between({"dev": doc_sample(dev), "test": doc_sample(test), "other": doc_sample(other)})
    assert notes == ["dev and test share documents (2 of the first 3 and 3): the pooled effect counts that corpus "
                     "twice, so it is not independent evidence"]


def test_a_collection_sharing_only_a_validation_source_is_in_domain(tmp_path):
    """Issue 37 item 11: a collection whose documents chose the checkpoint ([validation] also: NFCorpus train when
    NFCorpus dev is evaluated) is in-domain, though the models never trained on it."""
    train = _beir(tmp_path / "scifact", ["lyme disease ticks"], ["lyme"])
    nf_train = _beir(tmp_path / "nf-train", ["statins and cholesterol", "vitamin d"], ["statins"])
    nf_dev = _beir(tmp_path / "nf-dev", ["vitamin d", "kale"], ["kale soup"])
    assert Seen.of([(train, train.queries("test"))]).shared(nf_dev, nf_dev.queries("test")) is None
    seen = Seen.of([(train, train.queries("test")), (nf_train, nf_train.queries("test"))])
    assert seen.shared(nf_dev, nf_dev.queries("test")).startswith("1 of its first 2 documents and 0 of its 1 queries")


def test_a_few_pages_shared_by_chance_do_not_make_a_training_collection(tmp_path):
    """Issue 59.16: a collection sharing 2 trivial pages of 1,042 with the training one was called in-domain."""
    common = ["the of and to in", "home page"]
    train = _beir(tmp_path / "train", common + [f"training text {i}" for i in range(50)], ["a"])
    other = _beir(tmp_path / "other", common + [f"other text {i}" for i in range(250)], ["b"])
    assert Seen.of([(train, train.queries("test"))]).shared(other, other.queries("test")) is None  # 2 of 252
    close = _beir(tmp_path / "close", common + [f"training text {i}" for i in range(2)], ["c"])
    assert Seen.of([(train, train.queries("test"))]).shared(close, close.queries("test")).startswith("4 of its first 4")
