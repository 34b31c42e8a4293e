"""Mixing a fine-tuned model with the checkpoint it started from (WiSE-FT, Wortsman et al., CVPR 2022).

A model fine-tuned on a few hundred queries of one collection moves away from what its checkpoint knew about
every other collection.  The straight line between the two, θ(m) = θ₀ + m·(θ − θ₀), holds models that keep
more of the start (small m) or more of the training (m near 1); which point serves best is an empirical
question, answered here on the validation queries — the training collection's held-out ones and, with
``[validation] also``, other sources' (:mod:`irglow.models.validation`), so the mix is chosen for generality as
well as for the training collection.  It costs one validation per candidate and no training step.

Weights the model has and the checkpoint lacks (or holds in another shape: token-type embeddings grown for
extra fields, a scoring head) are kept as trained.
"""

from __future__ import annotations

import logging
import math
import shutil
from pathlib import Path
from typing import Callable

log = logging.getLogger(__name__)

UNMIXED = "best-unmixed"  # the best epoch's model, kept whole while a mix holds ``best``


def check_mixes(mixes) -> list[float]:
    """The mixing fractions, sorted: each strictly between 0 (the checkpoint, validated at step 0 already) and 1
    (the trained model)."""
    if isinstance(mixes, (int, float)) and not isinstance(mixes, bool):
        mixes = [mixes]
    if not isinstance(mixes, (list, tuple)):
        raise ValueError(f"mix_checkpoint = {mixes!r} must be a list of fractions in (0, 1), e.g. [0.5, 0.75]")
    for m in mixes:
        if isinstance(m, bool) or not isinstance(m, (int, float)) or not 0.0 < m < 1.0:
            raise ValueError(f"mix_checkpoint: {m!r} is not a fraction strictly between 0 (the checkpoint) and 1 "
                             f"(the trained model)")
    return sorted({float(m) for m in mixes})


def mix_weights(model, start: dict, trained: dict, m: float) -> int:
    """Set ``model``'s parameters to θ₀ + m·(θ − θ₀) wherever ``start`` has a weight of the same name and shape
    (others: the trained θ).  Returns how many tensors were mixed."""
    import torch

    mixed = 0
    with torch.no_grad():
        for name, p in model.named_parameters():
            p0, p1 = start.get(name), trained[name]
            if p0 is not None and p0.shape == p.shape and m != 1.0:
                p0 = p0.to(p.device, p.dtype)
                p.copy_(p0 + m * (p1.to(p.device, p.dtype) - p0))
                mixed += 1
            else:
                p.copy_(p1)
    return mixed


def choose_mix(model, start: dict, mixes: list[float], validate: Callable[[], tuple[float, dict]],
               best_score: float, save: Callable[[Path], None], out: Path) -> list[dict]:
    """Validate θ(m) for each ``m`` in ``mixes`` (``model`` holds the trained θ on entry and on exit) and keep
    the best in ``out/best`` when it beats ``best_score``, the best epoch's validation score; that epoch's model
    then moves to ``out/best-unmixed``.  Run again (a resumed training, other fractions), it
    starts from the epoch's model again, so ``best`` is always this call's choice.  Returns the curve:
    ``[{"mix": m, "val_ndcg@10": score, "val_by_source": {...}}, …]``."""
    out = Path(out)
    trained = {n: p.detach().clone() for n, p in model.named_parameters()}
    curve, winner = [], None
    for m in mixes:
        n = mix_weights(model, start, trained, m)
        score, by_source = validate()
        curve.append({"mix": m, "val_ndcg@10": score, **({"val_by_source": by_source} if by_source else {})})
        log.info("mixed with the checkpoint, m %.2f (%d tensors): validation nDCG@10 %.4f%s", m, n, score,
                 "".join(f", {k} {v:.4f}" for k, v in by_source.items()))
        if not math.isnan(score) and score > best_score + 1e-5:
            best_score, winner = score, m
    unmixed = out / UNMIXED
    if winner is not None:  # saved once, not at every improvement
        mix_weights(model, start, trained, winner)
        save(out / "mixed")
        if not unmixed.is_dir():
            (out / "best").rename(unmixed)
        else:
            shutil.rmtree(out / "best", ignore_errors=True)
        (out / "mixed").rename(out / "best")
    elif unmixed.is_dir():  # an earlier call's mix won; none of these does: the epoch's model is `best` again
        shutil.rmtree(out / "best", ignore_errors=True)
        unmixed.rename(out / "best")
    mix_weights(model, start, trained, 1.0)  # the trained weights again
    for c in curve:
        c["kept"] = c["mix"] == winner
    return curve
