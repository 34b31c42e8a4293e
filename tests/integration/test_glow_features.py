"""GLOW's batch featurizer (arrays over the batch) against the reference, the per-word path: equal to the last bit.

Documents are drawn with hypothesis from the demo collection's words, stopwords, punctuation, unknown words,
numbers, URLs and arbitrary unicode (zero-width and control characters the tokenizer drops, CJK, emoji), in fields
with several instances, fields missing and budgets small enough that a field is tokenized whole."""

import numpy as np
import pytest
import torch
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from irglow.data.demo import DemoCollection
from irglow.data.records import make_document
from irglow.index.stats import CollectionStats
from irglow.models.checkpoints import load_encoder
from irglow.models.glow.model import Featurizer, GlowConfig
from irglow.models.glow.weights import WordWeighter, split_words

FIELDS = ["title", "url", "body", "anchor"]


@pytest.fixture(scope="module")
def parts(demo_index):
    _, tok = load_encoder("default", num_layers=1)
    vocab = sorted({w for d, _ in zip(DemoCollection().docs_iter(), range(40)) for w in split_words(d.contents())})
    return demo_index, CollectionStats.load(demo_index), tok, vocab


def words(vocab):
    return st.one_of(
        st.sampled_from(vocab), st.sampled_from(["the", "of", "and", "The", "AND", "a"]),
        st.sampled_from([".", ",", "!", "'s", "--", "(", "©", "½", "²"]),
        st.from_regex(r"[a-z]{3,9}[0-9]{0,3}", fullmatch=True),  # words the collection mostly lacks
        st.sampled_from(["\u200b", "\x07", "\u0301", "naïve", "Straße", "İstanbul", "東京大学", "😀", "ｆｕｌｌ", "snake_case", "_x", "a__b2"]),
        st.text(min_size=1, max_size=6))


def documents(vocab):
    text = st.lists(words(vocab), max_size=40).map(" ".join)
    url = st.lists(st.sampled_from(vocab + ["www", "com", "x1", "my_page", "é-x"]), max_size=5).map(lambda ws: "https://" + "/".join(ws))
    field = st.fixed_dictionaries({}, optional={"title": text, "url": url, "body": text,
                                                "anchor": st.lists(text, min_size=1, max_size=3)})
    return st.lists(field, min_size=1, max_size=4)


@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture,
                                                                  HealthCheck.too_slow])
@given(data=st.data())
def test_batch_features_equal_the_per_word_reference(parts, data):
    index, stats, tok, vocab = parts
    variant = data.draw(st.sampled_from(["glow", "glow-idf", "glow-wt", "glow-us", "bert"]))
    fields = data.draw(st.sampled_from([FIELDS, ["title", "body"], ["body"]]))
    weights = data.draw(st.fixed_dictionaries({}, optional={
        "field_weights": st.fixed_dictionaries({"title": st.sampled_from([0.5, 2.0]), "body": st.just(1.3)}),
        "field_b": st.fixed_dictionaries({"body": st.sampled_from([0.0, 0.4, 1.0])}),
        "idf_n": st.just(1e8), "doc_k1": st.sampled_from([0.9, 2.0])}))
    config = GlowConfig(variant=variant, fields=fields, weights=weights,
                        field_max_tokens={"body": data.draw(st.sampled_from([3, 12, 96]))},
                        default_field_tokens=data.draw(st.sampled_from([2, 20])))
    read = {fields[0]: FIELDS} if len(fields) == 1 and data.draw(st.booleans()) else None  # read_all_fields
    docs = [make_document(f"d{i}", **f) for i, f in enumerate(data.draw(documents(vocab)))]

    def featurizer():
        weighter = WordWeighter(index, stats, config.weight_config()) if config.weighted else None
        return Featurizer(config, tok, weighter, read)

    arrays, per_word = featurizer(), featurizer()
    ours, reference = arrays.documents(docs), per_word.documents_per_word(docs)
    assert ours.keys() == reference.keys()
    for name in ours:
        assert ours[name].dtype == reference[name].dtype and torch.equal(ours[name], reference[name]), name
    assert arrays._arrays, "the batch path ran (irglow's Java helper compiled)"
    if config.weighted:  # every piece's float64 weight too, before float32 could hide a difference
        *_, word, raw, idf = arrays._arrays.arrays(docs)
        c = per_word.config
        budgets = {f: c.field_max_tokens.get(f, c.default_field_tokens) for f in fields}
        for doc, row in zip(docs, word):
            by_field = {f: [x for s in per_word.read_fields[f] for inst in doc.fields.get(s, ())
                            for x in split_words(inst, s in c.url_fields)] for f in fields}
            _, feats = per_word._pieces(by_field, budgets, is_query=False)
            expected = [x for f in fields for x in feats[f]]
            ours = [(raw[j], idf[j]) for j in row if j >= 0]
            assert np.array_equal(np.array(ours, dtype=float), np.array(expected, dtype=float), equal_nan=True)


def test_memos_past_their_limit_start_again_and_the_features_do_not_change(parts, monkeypatch):
    """Memory stays flat on a corpus whose every URL is a new word: past their limit the memos (pieces and idf per
    word here, terms per word in Java) start again, and the features are the reference's still."""
    from irglow.models.glow import features

    index, stats, tok, vocab = parts
    monkeypatch.setattr(features, "MEMO_LIMIT", 10)
    config = GlowConfig(variant="glow", fields=["title", "body"])
    docs = [make_document(f"d{i}", title=" ".join(vocab[i:i + 5]), body=" ".join(vocab[i:i + 60]) + f" w{i}x")
            for i in range(30)]
    small = Featurizer(config, tok, WordWeighter(index, stats, config.weight_config()))
    batches = [small.documents(docs[i:i + 5]) for i in range(0, 30, 5)]
    assert 0 < len(small._arrays._pieces) < 10 + 70  # started again at least once, never the whole vocabulary
    reference = Featurizer(config, tok, WordWeighter(index, stats, config.weight_config()))
    for i, batch in zip(range(0, 30, 5), batches):
        expected = reference.documents_per_word(docs[i:i + 5])
        assert all(torch.equal(batch[k], expected[k]) for k in expected)


def test_worker_processes_encode_the_corpus_the_process_itself_encodes(parts, tmp_path):
    """Issue 69 item 3: ``encode_workers`` processes (spawned: each opens the index and starts its own JVM) read and
    featurize the batches while the model encodes; the vectors and their order are the one-process encoding's."""
    from irglow.data.demo import DemoCollection
    from irglow.data.docstore import docs_store
    from irglow.dense.encode import encode_corpus, load_embeddings
    from irglow.models.glow.model import GlowEncoder, featurizer_for
    from irglow.models.glow.runner import glow_encoders

    index, stats, _, _ = parts
    model = GlowEncoder.from_pretrained_bert(GlowConfig(variant="glow", num_layers=1, fields=["title", "body"])).eval()
    docs = docs_store(DemoCollection()).sequence()[:200]
    got = {}
    for workers in (0, 1):
        encoder, _ = glow_encoders(model, featurizer_for(model, index, stats), torch.device("cpu"))
        with torch.no_grad():
            encode_corpus(docs, encoder, tmp_path / f"w{workers}", 32, workers=workers)
        got[workers] = load_embeddings(tmp_path / f"w{workers}")
    assert np.array_equal(got[0][0], got[1][0]) and got[0][1] == got[1][1] == list(docs.ids())
