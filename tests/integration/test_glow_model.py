import pytest
import torch

from irglow.data.records import make_document
from irglow.index.stats import CollectionStats
from irglow.models.checkpoints import load_encoder
from irglow.models.glow.attention import WeightedSelfAttention
from irglow.models.glow.model import Featurizer, GlowConfig, GlowEncoder
from irglow.models.glow.weights import WeightConfig, WordWeighter, split_words


def explicit_weighted_attention(q, k, v, weights, mode: str, pad_mask=None, scale: float | None = None):
    """The papers' formula written out, the reference the fused module is tested against:
    softmax(w ⊙ QKᵀ/√d + mask) V."""
    scale = scale if scale is not None else q.shape[-1] ** -0.5
    logits = (q @ k.transpose(-1, -2)) * scale  # [B, H, T, T]
    if mode == "key":
        logits = logits * weights[:, None, None, :]
    elif mode == "row":
        logits = logits * weights[:, None, :, None]
    if pad_mask is not None:  # [B, T] True = real token
        logits = logits.masked_fill(~pad_mask[:, None, None, :], float("-inf"))
    return torch.softmax(logits, -1) @ v


def n_params(m):
    return sum(p.numel() for p in m.parameters() if p.requires_grad)


@pytest.mark.parametrize("mode", ["key", "row"])
def test_fused_attention_equals_explicit_formula(mode):
    torch.manual_seed(0)
    bert, _ = load_encoder("default", num_layers=1)
    layer = WeightedSelfAttention(bert.encoder.layer[0].attention.self, mode).eval()
    B, T, H = 2, 7, bert.config.hidden_size
    x = torch.randn(B, T, H)
    w = torch.rand(B, T) * 3
    pad = torch.ones(B, T, dtype=torch.bool)
    pad[1, 5:] = False
    layer.token_weights = w
    ours, _ = layer(x, attention_mask=pad[:, None, None, :])
    heads, d = layer.num_attention_heads, layer.attention_head_size
    split = lambda t: t.view(B, T, heads, d).transpose(1, 2)
    ref = explicit_weighted_attention(split(layer.query(x)), split(layer.key(x)), split(layer.value(x)), w, mode, pad)
    ref = ref.transpose(1, 2).reshape(B, T, H)
    assert torch.allclose(ours[pad], ref[pad], atol=1e-5)
    if mode == "key":  # key-side: a padded key with any weight is still ignored
        assert torch.allclose(ours[0], ref[0], atol=1e-5)


@pytest.mark.pretrained
def test_bert_variant_equals_stock_bert_and_parameter_counts():
    torch.manual_seed(0)
    cfg = dict(num_layers=3, fields=["title", "body"], pooling="cls")
    plain = GlowEncoder.from_pretrained_bert(GlowConfig(variant="bert", **cfg)).eval()
    glow = GlowEncoder.from_pretrained_bert(GlowConfig(variant="glow", **cfg)).eval()
    stock, tok = load_encoder("default", num_layers=3)
    stock.eval()
    assert n_params(glow) == n_params(plain) == n_params(stock)  # 2 fields: BERT's own 2 segments
    enc = tok(["a short query", "another one that is longer"], padding=True, return_tensors="pt")
    with torch.no_grad():
        ours = plain(enc["input_ids"], enc["attention_mask"], enc["token_type_ids"])
        ref = stock(**enc).last_hidden_state[:, 0]
        # weights all 1 in GLOW = plain BERT
        ones = glow(enc["input_ids"], enc["attention_mask"], enc["token_type_ids"], torch.ones(enc["input_ids"].shape))
    assert torch.allclose(ours, ref, atol=1e-5) and torch.allclose(ones, ref, atol=1e-5)
    four = GlowEncoder.from_pretrained_bert(GlowConfig(variant="glow", num_layers=3, fields=["title", "url", "body", "anchor"]))
    emb = four.bert.embeddings.token_type_embeddings.weight
    assert emb.shape[0] == 4 and torch.equal(emb[2], emb[0]) and torch.equal(emb[3], emb[0])
    assert n_params(four) == n_params(stock) + 2 * emb.shape[1]  # only the two new field rows


@pytest.fixture(scope="module")
def weighter(demo_index):
    return WordWeighter(demo_index, CollectionStats.load(demo_index))


def test_whole_word_weights_and_field_ids(weighter):
    cfg = GlowConfig(variant="glow", fields=["title", "url", "body", "anchor"], field_max_tokens={"body": 12})
    bert, tok = load_encoder("default", num_layers=1)
    feat = Featurizer(cfg, tok, weighter)
    doc = make_document("x", title="Brulzem unbelievableness", url="https://www.site.com/brulzem-fistorbran",
                        body="the brulzem " * 20, anchor=["one anchor", "two"])
    batch = feat.documents([doc, make_document("empty")])
    ids, types, w = batch["input_ids"][0], batch["token_type_ids"][0], batch["token_weights"][0]
    toks = tok.convert_ids_to_tokens(ids.tolist())
    seps = [i for i, t in enumerate(toks) if t == "[SEP]"]
    assert len(seps) == 4 and toks[0] == "[CLS]"
    # field ids: title 0, url 1, body 2, anchor 3 — each field's [SEP] carries its field id
    assert types[1:seps[0] + 1].unique().tolist() == [0]
    assert types[seps[0] + 1:seps[1] + 1].unique().tolist() == [1]
    assert types[seps[1] + 1:seps[2] + 1].unique().tolist() == [2]
    assert types[seps[2] + 1:seps[3] + 1].unique().tolist() == [3]
    assert seps[2] - seps[1] - 1 == 12  # body truncated to its budget
    assert "site" in toks[seps[0]:seps[1]] and "/" not in toks[seps[0]:seps[1]]  # URL split into words
    # every piece of "unbelievableness" carries the same weight
    n = len(tok.tokenize("unbelievableness"))
    word_pieces = list(range(seps[0] - n, seps[0]))
    assert n > 1 and len({round(float(w[i]), 6) for i in word_pieces}) == 1
    assert float(w[1]) != float(w[word_pieces[0]])  # a different word, a different weight
    assert float(w[0]) == 1.0 and all(float(w[s]) == 1.0 for s in seps)  # [CLS]/[SEP] neutral
    # the empty document still encodes: [CLS] and one [SEP] per field
    assert batch["attention_mask"][1].sum() == 5


def test_a_one_field_model_reads_every_field_of_the_searched_collection(demo_index):
    """A model trained where the text is the only field (NFCorpus) reads a collection's title and text in its one
    segment, title first (as its checkpoint reads ``title + text``); a fielded model reads each of its own."""
    from types import SimpleNamespace

    from irglow.models.glow.model import featurizer_for, read_fields

    assert read_fields(["text"], ["title", "text"]) == {"text": ["title", "text"]}
    assert read_fields(["text"], ["text"]) == {"text": ["text"]}
    assert read_fields(["title", "text"], ["text"]) == {"title": ["title"], "text": ["text"]}  # title: empty
    bert, tok = load_encoder("default", num_layers=1)
    doc = make_document("x", title="Brulzem fistorbran", url="https://a.org/x", body="the brulzem", anchor=["more"])
    chosen = SimpleNamespace(config=GlowConfig(variant="glow", fields=["body"]), tokenizer=tok)  # a user's choice
    batch = featurizer_for(chosen, demo_index, CollectionStats.load(demo_index)).documents([doc])
    assert tok.convert_ids_to_tokens(batch["input_ids"][0].tolist()) == ["[CLS]", *tok.tokenize("the brulzem"),
                                                                         "[SEP]"]
    model = SimpleNamespace(config=GlowConfig(variant="glow", fields=["body"], read_all_fields=True), tokenizer=tok)
    batch = featurizer_for(model, demo_index, CollectionStats.load(demo_index)).documents([doc])
    toks = tok.convert_ids_to_tokens(batch["input_ids"][0].tolist())
    expected = tok.tokenize("Brulzem fistorbran https a org x the brulzem more")  # title, url, body, anchor
    assert toks == ["[CLS]", *expected, "[SEP]"] and batch["token_type_ids"][0].unique().tolist() == [0]
    assert torch.isfinite(batch["token_weights"][0]).all() and float(batch["token_weights"][0][1]) != 1.0
    # the stage turns it on only for fields it took from a one-field training collection
    from irglow.models.glow.stage import model_config
    from irglow.models.glow.train import GlowTrainConfig

    train, chosen = GlowTrainConfig(model=GlowConfig(fields=["text"])), frozenset({"fields"})
    picked = [(c.variant, c.fields, c.read_all_fields) for c in (
        model_config(GlowTrainConfig(), frozenset(), ("text",), "glow"),
        model_config(GlowTrainConfig(), frozenset(), ("title", "text"), "bert"),
        model_config(train, chosen, ("text",), "glow"), model_config(train, chosen, ("title", "text"), "glow"))]
    assert picked == [("glow", ["text"], True), ("bert", ["title", "text"], False), ("glow", ["text"], False),
                      ("glow", ["text"], False)]


def test_query_weights_unknown_words_and_stopwords(weighter):
    cfg = GlowConfig(variant="glow")
    _, tok = load_encoder("default", num_layers=1)
    q = Featurizer(cfg, tok, weighter).queries(["the zzqxv", "of"])
    w = q["token_weights"]
    toks = tok.convert_ids_to_tokens(q["input_ids"][0].tolist())
    assert w[0, toks.index("the")] == pytest.approx(0.5)  # stopword weight
    assert q["attention_mask"][1].sum() == 3  # [CLS] of [SEP] — a query with no known word still encodes
    assert split_words("https://a.b/c-d_e", is_url=True) == ["https", "a", "b", "c", "d", "e"]


@pytest.fixture(scope="module")
def tiny_weighter(tiny_index):
    return WordWeighter(tiny_index, CollectionStats.load(tiny_index), WeightConfig(avg_query_len=2.0))


def test_bm25_query_word_weights_by_hand(tiny_weighter):
    """N = 3; df(apple) = 1 → idf ln(1 + 2.5/1.5) = 0.980829; df(cherry) = 2 → ln(1.6) = 0.470004.
    Query "apple cherry apple the": |q| = 3 content words, avg 2, k1 2, b 0.75 →
    norm = 2 (0.25 + 0.75 · 3/2) = 2.75; apple 0.980829 · 2 · 3 / (2 + 2.75) = 1.238942,
    cherry 0.470004 · 3 / (1 + 2.75) = 0.376003; "the" is dropped by the analyzer (None)."""
    raw = tiny_weighter.query_words(["apple", "cherry", "apple", "the"])
    assert raw[:3] == pytest.approx([1.238942, 0.376003, 1.238942], abs=1e-6) and raw[3] is None
    # normalised to mean 1 over the content words: mean (1.238942·2 + 0.376003)/3 = 0.951296
    assert tiny_weighter.normalise(raw) == pytest.approx([1.302373, 0.395253, 1.302373, 0.5], abs=1e-6)
    assert tiny_weighter.query_words(["apple"], mode="idf") == pytest.approx([0.980829], abs=1e-6)


def test_bm25f_document_word_weights_by_hand(tiny_weighter):
    """avg title length 1.5 (2 titled documents), avg body 3.  Title "cherry" (1 word):
    1 − 0.75 + 0.75 · 1/1.5 = 0.75; body "cherry date" (2): 0.25 + 0.75 · 2/3 = 0.75.
    tf~(cherry) = 1/0.75 + 1/0.75 = 2.6667 → 0.470004 · 2.6667 · 3 / (2.6667 + 2) = 0.805721;
    tf~(date) = 1.3333, idf 0.980829 → 0.980829 · 1.3333 · 3 / 3.3333 = 1.176995."""
    w = tiny_weighter.document_words({"title": ["cherry"], "body": ["cherry", "date"]})
    assert w["title"] == pytest.approx([0.805721], abs=1e-6)
    assert w["body"] == pytest.approx([0.805721, 1.176995], abs=1e-6)
    tiny_weighter.config.field_weights["title"] = 2.0  # α_title 2: tf~(cherry) = 2/0.75 + 1/0.75 = 4
    try:
        w = tiny_weighter.document_words({"title": ["cherry"], "body": ["cherry", "date"]})
    finally:
        tiny_weighter.config.field_weights.clear()
    assert w["title"] == pytest.approx([0.470004 * 4 * 3 / 6], abs=1e-6)


def test_token_level_weights_use_whole_field_statistics(tiny_weighter):
    """glow-tw differs from glow only in the unit: when every word is one WordPiece the two give the same
    weights, truncated or not (tf and length come from the whole field, length in words)."""
    _, tok = load_encoder("default", num_layers=1)
    doc = make_document("x", title="fruit", body="cherry cherry date cherry apple banana")
    out = {}
    for variant in ("glow", "glow-tw"):
        cfg = GlowConfig(variant=variant, fields=["title", "body"], field_max_tokens={"body": 3})
        out[variant] = Featurizer(cfg, tok, tiny_weighter).documents([doc])["token_weights"]
        q = Featurizer(cfg, tok, tiny_weighter).queries(["cherry cherry date"])["token_weights"]
        out[variant + "-q"] = q
    assert torch.allclose(out["glow"], out["glow-tw"]) and torch.allclose(out["glow-q"], out["glow-tw-q"])


@pytest.mark.pretrained
def test_weight_exponent_alpha():
    """w ** 0 is the plain checkpoint; w ** 0.5 equals feeding √w at α = 1."""
    torch.manual_seed(0)
    cfg = dict(num_layers=2, fields=["title", "body"])
    plain = GlowEncoder.from_pretrained_bert(GlowConfig(variant="bert", **cfg)).eval()
    glow = GlowEncoder.from_pretrained_bert(GlowConfig(variant="glow", **cfg)).eval()
    enc = plain.tokenizer(["a short query", "another one that is longer"], padding=True, return_tensors="pt")
    w = torch.rand(enc["input_ids"].shape) * 3 + 0.1
    args = (enc["input_ids"], enc["attention_mask"], enc["token_type_ids"])
    with torch.no_grad():
        ref = plain(*args)
        full = glow(*args, w)
        glow.alpha = 0.0
        zero = glow(*args, w)
        glow.alpha = 0.5
        half = glow(*args, w)
        glow.alpha = 1.0
        sqrt = glow(*args, w.sqrt())
    assert torch.allclose(zero, ref, atol=1e-5) and not torch.allclose(full, ref, atol=1e-3)
    assert torch.allclose(half, sqrt, atol=1e-5)


def test_untrained_unweighted_encoder_reproduces_the_checkpoint():
    """Issue 25.2, the single-field case: GLOW's input ([CLS] words [SEP], fields as segment-0 copies, mean
    pooling) with weights off and no training gives the checkpoint's own sentence embeddings, so whatever
    training adds is measured from the checkpoint's ranking, not from below it."""
    import torch

    from irglow.data.records import make_document
    from irglow.dense.encode import MeanPoolEncoder
    from irglow.models.glow.model import Featurizer, GlowConfig, GlowEncoder

    texts = ["Lyme disease is treated with antibiotics such as doxycycline or amoxicillin.",
             "The quick brown fox jumps over the lazy dog; it's 3.5 times faster (really!).",
             "Vitamin D deficiency is associated with fractures in older adults.",
             "mRNA-1273 and BNT162b2 vaccines reduce hospitalization in phase-3 trials."]
    docs = [make_document(f"d{i}", text=t) for i, t in enumerate(texts)]
    checkpoint = torch.nn.functional.normalize(MeanPoolEncoder("default", max_tokens=256, fields=["text"])(docs), dim=-1)
    config = GlowConfig(variant="bert", fields=["text"], url_fields=[], default_field_tokens=254)
    model = GlowEncoder.from_pretrained_bert(config).eval()
    with torch.no_grad():
        glow = torch.nn.functional.normalize(model(**Featurizer(config, model.tokenizer, None).documents(docs)), dim=-1)
    assert torch.allclose(checkpoint, glow, atol=1e-5)
    query = torch.nn.functional.normalize(MeanPoolEncoder("default")(["lyme disease antibiotics"]), dim=-1)
    assert torch.equal((query @ checkpoint.T).argsort(descending=True), (query @ glow.T).argsort(descending=True))


@pytest.mark.parametrize("layers", [0, -1, True])
def test_zero_layers_is_refused_not_read_as_all(layers):
    """Issue 50: glow.model.num_layers = 0 loaded the whole checkpoint (0 read as unset)."""
    from irglow.models.checkpoints import load_encoder

    with pytest.raises(ValueError, match="at least one layer"):
        load_encoder("unused-path", num_layers=layers)
