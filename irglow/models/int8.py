"""An int8 copy of a BERT model's inference forward pass, run by ONNX Runtime on the CPU.

The module (a mean-pooled encoder, monoBERT with its head, GLOW with its BM25-weighted attention: anything whose
forward takes named tensors and returns one) is exported with ``torch.onnx.export`` from an example batch, its
layer norms and GELUs fused by ONNX Runtime's transformer optimizer, then the matrix products with a weight
(every linear layer) are quantized to int8 per output channel (dynamic
quantization: activations are quantized batch by batch, no calibration data).  The products of two activations
(query × key, attention × value) stay in float: quantizing them too cost MiniLM most of its precision (cosine
0.875 to fp32, against ≥ 0.99 with weights only), and leaving them is what lets GLOW's modified attention go
through unchanged.

The file is cached under ``cache_dir`` by a digest of the weights, the settings the caller names (a model's
config), the inputs' names and shapes, and the ONNX Runtime version, so a changed checkpoint never reuses a stale
graph.  Training and GPUs never come here: a GPU keeps torch's fp16/bf16 autocast.  Needs the ``int8`` extra
(``pip install irglow[int8]``).
"""

from __future__ import annotations

import json
import logging
import warnings
from pathlib import Path

import numpy as np
import torch

from irglow.utils.digest import check_table_digests, model_digest, table_digests
from irglow.utils.paths import cache_dir
from irglow.utils.atomic import atomic_dir

log = logging.getLogger(__name__)

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


def kept_precision(name: str, scores: dict[str, float], queries: int, what: str, fallback: str,
                   **figures) -> tuple[str, dict]:
    """The stages' one rule: int8 is kept only where its nDCG@10 (``scores["int8"]``, on ``queries`` held-out
    training queries) is within ``INT8_TOLERANCE`` of fp32's; else fp32, said once.  Returns (the precision
    used, the check's figures for the stage notes)."""
    check = {"asked": "int8", "fp32_nDCG@10": scores["fp32"], "int8_nDCG@10": scores["int8"], "queries": queries,
             **figures}
    if scores["int8"] < scores["fp32"] - INT8_TOLERANCE:
        log.warning("%s: int8 loses %.4f nDCG@10 on %d %s (allowed %.3f); %s", name,
                    scores["fp32"] - scores["int8"], queries, what, INT8_TOLERANCE, fallback)
        return "fp32", {**check, "used": "fp32", "why": f"int8 below fp32 on the {what}"}
    return "int8", {**check, "used": "int8"}


def default_cache_dir() -> Path:
    return cache_dir("int8")


def has_bert(module: torch.nn.Module) -> bool:
    """Whether a BERT-like encoder (a config with attention heads) is inside: what this backend is for."""
    return any(hasattr(getattr(m, "config", None), "num_attention_heads") for m in module.modules())


def bert_inputs() -> dict[str, torch.Tensor]:
    """An example batch of BERT's three inputs (two rows, one padded), what a module is traced with."""
    return {"input_ids": torch.tensor([[101, 2023, 2003, 102], [101, 2054, 102, 0]]),
            "attention_mask": torch.tensor([[1, 1, 1, 1], [1, 1, 1, 0]]),
            "token_type_ids": torch.zeros(2, 4, dtype=torch.long)}


class Int8Forward:
    """``Int8Forward(module, example)(**batch)`` → the module's output for ``batch`` (the inputs ``example`` names),
    computed by ONNX Runtime with int8 weights (a float32 CPU tensor).  ``settings``: whatever besides the
    weights changes the forward pass (a model's config), for the cache key."""

    def __init__(self, module: torch.nn.Module, example: dict[str, torch.Tensor] | None = None,
                 cache_dir: str | Path | None = None, threads: int | None = None, **settings):
        if not available():
            raise ImportError("the int8 backend needs ONNX Runtime: pip install 'irglow[int8]' "
                              "(or: pip install onnx onnxruntime)")
        import onnxruntime as ort

        module = module.cpu().eval()
        example = {k: v.cpu() for k, v in (example or bert_inputs()).items()}
        shapes = {k: [str(v.dtype), v.dim()] for k, v in example.items()}
        key = model_digest(module, backend="onnxruntime-int8-weights-2", opset=OPSET, ort=ort.__version__,
                           inputs=shapes, kind=type(module).__name__, optimized=True, **settings)
        self.path = Path(cache_dir or default_cache_dir()) / key / "model.onnx"
        if not (self.path.is_file() and intact(self.path)):  # a damaged graph would score wrongly, or stop the process
            if self.path.is_file():
                log.warning("the int8 graph %s is not the one built (its recorded digest differs, or none was "
                            "recorded); it is built again", self.path)
            build(module, self.path, example)
        options = ort.SessionOptions()
        options.intra_op_num_threads = threads or torch.get_num_threads()
        options.log_severity_level = 3
        self.session = ort.InferenceSession(str(self.path), options, providers=["CPUExecutionProvider"])
        self.dtypes = {i.name: (np.int64 if "int64" in i.type else np.float32) for i in self.session.get_inputs()}

    def __call__(self, **inputs: torch.Tensor) -> torch.Tensor:
        feed = {k: inputs[k].cpu().numpy().astype(t, copy=False) for k, t in self.dtypes.items()}
        return torch.from_numpy(self.session.run(None, feed)[0])


def _optimized(fp32: Path, out: Path, module: torch.nn.Module) -> bool:
    """ONNX Runtime's transformer optimizer on the exported graph (``out``): layer norms with their residual add
    and GELU with its bias fused, shape no-ops removed.  Attention is left as it is (the optimizer does not
    recognise torch's exported SDPA, nor GLOW's weighted keys).  False where it fails: the graph stays as
    exported."""
    from onnxruntime.transformers.optimizer import optimize_model

    config = next(m.config for m in module.modules() if hasattr(getattr(m, "config", None), "num_attention_heads"))
    try:
        optimize_model(str(fp32), model_type="bert", num_heads=int(config.num_attention_heads),
                       hidden_size=int(config.hidden_size)).save_model_to_file(str(out))
    except Exception as e:  # noqa: BLE001 (an optimizer pattern that does not fit: keep the plain graph)
        log.info("the transformer optimizer left the graph as exported: %s", e)
        return False
    return True


def build(module: torch.nn.Module, path: Path, example: dict[str, torch.Tensor]) -> Path:
    """Export ``module`` on ``example``, fuse its layer norms and GELUs, and quantize its weight products into
    ``path`` (written atomically: a folder renamed into place)."""
    import onnx
    from onnxruntime.quantization import QuantType, quantize_dynamic

    import inspect

    log.info("building the int8 ONNX graph of %s in %s", type(module).__name__, path.parent)
    # the exporter names the graph's inputs in the order of forward's parameters, whatever the order of the
    # keyword arguments: the names must follow that order, or a mask would be read as segment ids
    order = list(inspect.signature(module.forward).parameters)
    unknown = [k for k in example if k not in order]
    if unknown:
        raise ValueError(f"{type(module).__name__}.forward takes no {unknown}")
    example = {k: example[k] for k in order if k in example}
    names = list(example)
    axes = {k: {0: "batch", 1: "tokens"} for k in names}
    with atomic_dir(path.parent) as tmp:
        fp32 = tmp / "fp32.onnx"
        with torch.no_grad(), warnings.catch_warnings():
            # the tracer notes Python-level branches on shapes (padding length, causality) that are fixed for
            # an encoder with an attention mask, and advanced indexing it exports for non-negative indices
            warnings.simplefilter("ignore")
            torch.onnx.export(module, (), str(fp32), kwargs=example, input_names=names, output_names=["out"],
                              dynamic_axes={**axes, "out": {0: "batch"}}, opset_version=OPSET, dynamo=False)
        fused = tmp / "fused.onnx"
        source = fused if has_bert(module) and _optimized(fp32, fused, module) else fp32
        graph = onnx.load(str(source))
        weights = {i.name for i in graph.graph.initializer}
        # products of two activations (attention's q·kᵀ and p·v) stay in float
        activations = [n.name for n in graph.graph.node if n.op_type == "MatMul" and not set(n.input) & weights]
        root = logging.getLogger()
        level = root.level
        root.setLevel(logging.ERROR)  # the quantizer advises "pre-processing" on the root logger at every call
        try:
            quantize_dynamic(str(source), str(tmp / path.name), weight_type=QuantType.QInt8, per_channel=True,
                             op_types_to_quantize=["MatMul"], nodes_to_exclude=activations,
                             extra_options={"DefaultTensorType": onnx.TensorProto.FLOAT})
        finally:
            root.setLevel(level)
        for f in (fp32, fused):
            f.unlink(missing_ok=True)
        (tmp / DIGESTS).write_text(json.dumps(table_digests(tmp, [path.name])))
    return path


DIGESTS = "digests.json"  # the graph's SHA-256, written with it and checked before a session loads it


def intact(path: Path) -> bool:
    """Whether a cached graph is the one built (its recorded digest; hashed once per process and file state)."""
    try:
        recorded = json.loads((path.parent / DIGESTS).read_text())
    except (OSError, ValueError):
        return False
    return set(recorded) == {path.name} and check_table_digests(path.parent, recorded) is None


class MeanPooled(torch.nn.Module):
    """A HF encoder followed by mean pooling over the attended tokens: what :class:`~irglow.dense.encode.MeanPoolEncoder`
    computes, as one module that exports whole."""

    def __init__(self, encoder: torch.nn.Module):
        super().__init__()
        self.encoder = encoder

    def forward(self, input_ids, attention_mask, token_type_ids=None):
        segments = {} if token_type_ids is None else {"token_type_ids": token_type_ids}  # RoBERTa, DistilBERT: none
        hidden = self.encoder(input_ids=input_ids, attention_mask=attention_mask, **segments).last_hidden_state
        mask = attention_mask.unsqueeze(-1).to(hidden.dtype)
        return (hidden * mask).sum(1) / mask.sum(1).clamp(min=1)


def int8_scorer(model):
    """``score(queries, docs)`` of a cross-encoder whose forward takes BERT's three inputs (monoBERT), in int8;
    any other model (NRM-F's word-level network) keeps its own fp32 ``score``, said once."""
    featurize = getattr(model, "featurize", None)
    forward = Int8Forward(model) if featurize is not None and has_bert(model) else None
    if forward is None:
        log.warning("precision int8 covers BERT models; %s is scored in fp32", type(model).__name__)
        return model.score
    return lambda queries, docs: forward(**featurize(queries, docs))
