"""irglow's own re-ranking models, declared once: each kind's name, what it is, its torch model and settings
classes (named, imported when first used: nothing here imports torch) and its training defaults.  The registry's
:class:`~irglow.models.rerank.kinds.TorchKind` entries and the training settings' choices are made from this table."""

from __future__ import annotations

import importlib
from dataclasses import dataclass


@dataclass(frozen=True)
class TorchModel:
    """One of irglow's re-ranking models: ``model`` and ``config`` as ``"module:Class"``, the loss and learning rate its
    training uses where the settings leave them unset."""

    title: str
    model: str
    config: str
    loss: str
    lr: float

    @property
    def model_class(self) -> type:
        """The torch model class, imported now."""
        return _named(self.model)

    @property
    def config_class(self) -> type:
        """Its model's settings (``[rerank.<kind>.model]``)."""
        return _named(self.config)


def _named(target: str) -> type:
    module, _, name = target.partition(":")
    return getattr(importlib.import_module(module), name)


TORCH_MODELS: dict[str, TorchModel] = {
    "monobert": TorchModel("monoBERT cross-encoder", "irglow.models.rerank.monobert:MonoBERT",
                           "irglow.models.rerank.monobert:MonoBERTConfig", loss="softmax", lr=1e-4),
    "nrmf": TorchModel("NRM-F multi-field ranker", "irglow.models.rerank.nrmf:NRMF",
                       "irglow.models.rerank.nrmf:NRMFConfig", loss="pairwise", lr=1e-3),
}
