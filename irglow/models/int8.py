"""An int8 copy of a BERT model's inference forward pass, run by ONNX Runtime on the CPU.

The module (anything whose ``forward(input_ids, attention_mask, token_type_ids)`` returns one tensor: a mean-pooled
encoder, monoBERT with its head) is exported with ``torch.onnx.export``, its attention and layer norms fused by
ONNX Runtime's transformer optimizer, then its weights quantized to int8 per output channel (dynamic quantization:
activations are quantized batch by batch, so no calibration data is needed).  Without the fusion, the quantized
attention matrices lose most of the model's precision (cosine 0.875 to fp32 on MiniLM against ≥ 0.99 with it).

The file is cached under ``cache_dir`` by a digest of the weights, the export settings and the ONNX Runtime
version, so a changed checkpoint never reuses a stale graph.  Training and GPUs never come here: a GPU keeps
torch's fp16/bf16 autocast.  Needs the ``int8`` extra (``pip install irglow[int8]``).
"""

from __future__ import annotations

import logging
import os
import warnings
from pathlib import Path

import numpy as np
import torch

from irglow.utils.digest import model_digest

log = logging.getLogger(__name__)

INPUTS = ("input_ids", "attention_mask", "token_type_ids")
OPSET = 17


def available() -> bool:
    """ONNX Runtime and onnx are installed (the ``int8`` extra)."""
    try:
        import onnx  # noqa: F401
        import onnxruntime  # noqa: F401
    except ImportError:
        return False
    return True


PRECISIONS = ("fp32", "int8")
INT8_TOLERANCE = 0.002  # nDCG@10 int8 may lose against fp32 on held-out queries before a stage falls back


def check_precision(precision: str, device) -> str:
    """The precision a forward pass runs in: ``int8`` only on the CPU (a GPU keeps torch and its autocast, said
    once), and only with ONNX Runtime installed (else an error that says how to get it)."""
    if precision not in PRECISIONS:
        raise ValueError(f"precision must be one of {', '.join(PRECISIONS)}, not {precision!r}")
    if precision == "int8" and torch.device(device).type != "cpu":
        log.warning("precision int8 is a CPU backend; on %s the model runs in fp32 (with autocast)", device)
        return "fp32"
    if precision == "int8" and not available():
        raise ImportError("precision int8 needs ONNX Runtime: pip install 'irglow[int8]' "
                          "(or: pip install onnx onnxruntime)")
    return precision


def default_cache_dir() -> Path:
    return Path(os.environ.get("IRGLOW_CACHE", Path.home() / ".cache" / "irglow")) / "int8"


def _bert_shape(module: torch.nn.Module) -> tuple[int, int]:
    """(attention heads, hidden size) of the first BERT-like config inside ``module`` (the optimizer's fusion
    needs them)."""
    for m in module.modules():
        config = getattr(m, "config", None)
        if config is not None and hasattr(config, "num_attention_heads") and hasattr(config, "hidden_size"):
            return int(config.num_attention_heads), int(config.hidden_size)
    raise ValueError("no BERT-like config (num_attention_heads, hidden_size) inside the module")


class Int8Forward:
    """``Int8Forward(module)(input_ids=…, attention_mask=…, token_type_ids=…)`` → the module's output, computed
    by ONNX Runtime with int8 weights (a float32 CPU tensor)."""

    def __init__(self, module: torch.nn.Module, cache_dir: str | Path | None = None, threads: int | None = None):
        if not available():
            raise ImportError("the int8 backend needs ONNX Runtime: pip install 'irglow[int8]' "
                              "(or: pip install onnx onnxruntime)")
        import onnxruntime as ort


        module = module.cpu().eval()
        heads, hidden = _bert_shape(module)
        key = model_digest(module, backend="onnxruntime-int8", opset=OPSET, ort=ort.__version__, heads=heads,
                           hidden=hidden, kind=type(module).__name__)
        self.path = Path(cache_dir or default_cache_dir()) / key / "model.onnx"
        if not self.path.is_file():
            build(module, self.path, heads, hidden)
        options = ort.SessionOptions()
        options.intra_op_num_threads = threads or torch.get_num_threads()
        options.log_severity_level = 3
        self.session = ort.InferenceSession(str(self.path), options, providers=["CPUExecutionProvider"])
        self.inputs = [i.name for i in self.session.get_inputs()]

    def __call__(self, **inputs: torch.Tensor) -> torch.Tensor:
        feed = {k: inputs[k].cpu().numpy().astype(np.int64) for k in self.inputs}
        return torch.from_numpy(self.session.run(None, feed)[0])


def build(module: torch.nn.Module, path: Path, heads: int, hidden: int) -> Path:
    """Export, fuse and quantize ``module`` into ``path`` (written atomically: a folder renamed into place)."""
    import onnx
    from onnxruntime.quantization import QuantType, quantize_dynamic
    from onnxruntime.transformers.optimizer import optimize_model

    from irglow.utils.atomic import atomic_dir

    log.info("building the int8 ONNX graph of %s in %s", type(module).__name__, path.parent)
    example = {"input_ids": torch.tensor([[101, 2023, 2003, 102], [101, 2054, 102, 0]]),
               "attention_mask": torch.tensor([[1, 1, 1, 1], [1, 1, 1, 0]]),
               "token_type_ids": torch.zeros(2, 4, dtype=torch.long)}
    axes = {k: {0: "batch", 1: "tokens"} for k in INPUTS}
    with atomic_dir(path.parent) as tmp:
        fp32 = tmp / "fp32.onnx"
        with torch.no_grad(), warnings.catch_warnings():
            # the tracer notes Python-level branches on shapes (padding length, causality) that are fixed for
            # an encoder with an attention mask, and advanced indexing it exports for non-negative indices
            warnings.simplefilter("ignore")
            torch.onnx.export(module, (), str(fp32), kwargs=example, input_names=list(INPUTS), output_names=["out"],
                              dynamic_axes={**axes, "out": {0: "batch"}}, opset_version=OPSET, dynamo=False)
        fused = tmp / "fused.onnx"
        optimize_model(str(fp32), model_type="bert", num_heads=heads, hidden_size=hidden).save_model_to_file(str(fused))
        root = logging.getLogger()
        level = root.level
        root.setLevel(logging.ERROR)  # the quantizer advises "pre-processing" on the root logger at every call
        try:
            quantize_dynamic(str(fused), str(tmp / path.name), weight_type=QuantType.QInt8, per_channel=True,
                             extra_options={"DefaultTensorType": onnx.TensorProto.FLOAT})
        finally:
            root.setLevel(level)
        fp32.unlink()
        fused.unlink()
    return path


class MeanPooled(torch.nn.Module):
    """A HF encoder followed by mean pooling over the attended tokens: what :class:`~irglow.dense.encode.MeanPoolEncoder`
    computes, as one module that exports whole."""

    def __init__(self, encoder: torch.nn.Module):
        super().__init__()
        self.encoder = encoder

    def forward(self, input_ids, attention_mask, token_type_ids):
        hidden = self.encoder(input_ids=input_ids, attention_mask=attention_mask,
                              token_type_ids=token_type_ids).last_hidden_state
        mask = attention_mask.unsqueeze(-1).to(hidden.dtype)
        return (hidden * mask).sum(1) / mask.sum(1).clamp(min=1)


def int8_scorer(model):
    """``score(queries, docs)`` of a cross-encoder whose forward takes BERT's three inputs (monoBERT), in int8;
    any other model (NRM-F's word-level network) keeps its own fp32 ``score``, said once."""
    featurize = getattr(model, "featurize", None)
    try:
        forward = Int8Forward(model) if featurize is not None else None
    except ValueError:  # no BERT inside: nothing the int8 backend can run
        forward = None
    if forward is None:
        log.warning("precision int8 covers BERT models; %s is scored in fp32", type(model).__name__)
        return model.score
    return lambda queries, docs: forward(**featurize(queries, docs))
