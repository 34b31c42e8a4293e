"""The CUDA paths (fp32 and autocast) give what the CPU gives.  Skipped without a CUDA device.

No Java and no downloaded checkpoint: a small random BERT and a WordPiece vocabulary written here,
so these run on any GPU machine that has torch and transformers (``pytest -m gpu tests/gpu``).
"""

from __future__ import annotations

import pytest
import torch

from irglow.data.records import Query, make_document
from irglow.runs.trec import Run

pytestmark = [pytest.mark.gpu,
              pytest.mark.skipif(not torch.cuda.is_available(), reason="needs a CUDA device")]

WORDS = "apple banana cherry date fruit stone the of and a protein cell gene study effect".split()


@pytest.fixture(scope="module")
def tiny_bert(tmp_path_factory) -> str:
    from transformers import BertConfig, BertModel, BertTokenizerFast

    path = tmp_path_factory.mktemp("tiny-bert")
    vocab = ["[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]", *WORDS, "##s", "##ing"]
    (path / "vocab.txt").write_text("\n".join(vocab) + "\n")
    BertTokenizerFast(vocab_file=str(path / "vocab.txt"), do_lower_case=True).save_pretrained(path)
    torch.manual_seed(0)
    cfg = BertConfig(vocab_size=len(vocab), hidden_size=64, num_hidden_layers=2, num_attention_heads=4,
                     intermediate_size=128, max_position_embeddings=128)
    BertModel(cfg).save_pretrained(path)
    return str(path)


def test_weighted_attention_on_cuda_matches_cpu(tiny_bert):
    from irglow.models.glow.model import GlowConfig, GlowEncoder

    torch.manual_seed(0)
    model = GlowEncoder.from_pretrained_bert(GlowConfig(base_model=tiny_bert, variant="glow")).eval()
    ids = torch.randint(5, 5 + len(WORDS), (4, 12))
    mask = torch.ones_like(ids)
    mask[1, 7:] = 0
    types = torch.zeros_like(ids)
    weights = torch.rand(4, 12) * 3 + 0.1
    with torch.no_grad():
        cpu = model(ids, mask, types, weights)
        model.cuda()
        gpu = model(ids.cuda(), mask.cuda(), types.cuda(), weights.cuda()).cpu()
        with torch.autocast("cuda", dtype=torch.bfloat16):
            bf16 = model(ids.cuda(), mask.cuda(), types.cuda(), weights.cuda()).float().cpu()
    assert torch.allclose(gpu, cpu, atol=1e-4)
    assert torch.nn.functional.cosine_similarity(bf16, cpu).min() > 0.99


def test_monobert_rerank_with_amp_on_cuda_ranks_like_cpu(tiny_bert):
    from irglow.models.rerank.monobert import MonoBERT, MonoBERTConfig
    from irglow.models.rerank.rerank import rerank

    torch.manual_seed(0)
    model = MonoBERT.from_pretrained_bert(MonoBERTConfig(base_model=tiny_bert))
    docs = {f"d{i}": make_document(f"d{i}", title=WORDS[i], body=" ".join(WORDS[i:i + 5])) for i in range(8)}
    queries = [Query("q1", "apple fruit"), Query("q2", "gene study")]
    run = Run({q.query_id: [(d, 10.0 - i) for i, d in enumerate(docs)] for q in queries}, "bm25")
    cpu = rerank(model, run, queries, docs, depth=6, device=torch.device("cpu"))
    gpu = rerank(model, run, queries, docs, depth=6, device=torch.device("cuda"))  # autocast on CUDA
    for q in ("q1", "q2"):
        c, g = dict(cpu.ranking[q]), dict(gpu.ranking[q])
        assert [d for d, _ in gpu.ranking[q][6:]] == [d for d, _ in cpu.ranking[q][6:]]  # the tail untouched
        assert max(abs(c[d] - g[d]) for d in list(docs)[:6]) < 2e-2  # fp16 autocast against fp32
