"""Re-ranker kinds as a registry: irglow's own (monoBERT, NRM-F) and any a package registers, each found by name.

A kind is what ``>>`` puts after a ranker (``Lexical("bm25") >> Model("linear")``) and what ``[rerank] models``
and a variant's ``kind`` name.  irglow's own kinds train in its one training loop (:mod:`irglow.models.rerank.train`);
another package's kind is a :class:`RerankerKind` registered under the entry-point group ``irglow.rerankers``
(``linear = "linear_rerank:LinearReranker"``, ``examples/linear_rerank.py``).  Either way the re-ranking stage
gives it its first stage's run of the training queries, holds out the same queries every trainer holds out (so a
fusion with it is tuned on queries it never saw), caches its model by its settings and training data, writes the
kind into the model folder (``irglow-model.json``: loaded by it, never guessed from file names), re-ranks any run
— a fusion, another re-ranking — and builds its PyTerrier transformer.
"""

from __future__ import annotations

import json
from dataclasses import asdict, is_dataclass
from pathlib import Path
from typing import Any, Sequence
from irglow.settings import check_fields, check_settings
from irglow.utils.plugins import registered

BUILT_IN = ("monobert", "nrmf")  # trained by irglow's training loop (irglow.models.rerank.train)
ENTRY_POINTS = "irglow.rerankers"
MODEL_FILE = "irglow-model.json"  # {"kind": ...} in every re-ranking model folder irglow writes


class RerankerKind:
    """A kind of re-ranking model another package adds.  Set ``name`` and ``settings_class`` (a dataclass of
    :func:`irglow.settings.setting` fields, bound from ``[rerank.<name>]`` or a variant), and implement
    :meth:`train` and :meth:`rerank`; :meth:`transformer` comes from :meth:`rerank`."""

    name = ""
    settings_class: type | None = None

    def bind(self, table: dict[str, Any], where: str) -> Any:
        """Its training settings from a table; a misspelt key or a wrong value is named before any work."""
        if self.settings_class is None:
            if table:
                raise ValueError(f"[{where}]: the {self.name} re-ranker takes no settings, not {sorted(table)}")
            return None
        check_settings(table, self.settings_class.__dataclass_fields__, f"[{where}]")
        return check_fields(self.settings_class(**table), where)

    def train(self, settings: Any, queries: Sequence, qrels: Sequence, first_stage, docs, model_dir: Path) -> None:
        """Train on the training ``queries`` (their judgments ``qrels``; ``first_stage``: the run it will re-rank, of
        those queries) and save the model into ``model_dir``."""
        raise NotImplementedError

    def rerank(self, model_dir: Path, run, queries: Sequence, docs, depth: int, tag: str):
        """``run`` with each query's top ``depth`` re-ordered by the model in ``model_dir``, the rest kept below in
        its order (:func:`irglow.models.rerank.rerank.rerank_ranking`), as a :class:`~irglow.runs.trec.Run`."""
        raise NotImplementedError

    def settings_dict(self, settings: Any) -> dict[str, Any]:
        """Its settings as plain values (the cache key and the manifest)."""
        return asdict(settings) if is_dataclass(settings) else {}


def plugin_kinds() -> dict[str, RerankerKind]:
    """The kinds other packages register (entry-point group ``irglow.rerankers``); a name irglow's kinds (or another
    plugin) use is an error naming both, as is an entry point that is no :class:`RerankerKind`."""
    found: dict[str, RerankerKind] = {}
    for point in registered(ENTRY_POINTS):
        where = f"entry point {point.name} = {point.value!r} ({ENTRY_POINTS})"
        try:
            loaded = point.load()
            kind = loaded() if isinstance(loaded, type) else loaded
        except Exception as e:  # noqa: BLE001 - a plugin's own failure, named with its entry point
            raise ValueError(f"{where} failed to load: {type(e).__name__}: {e}") from e
        if not isinstance(kind, RerankerKind) or not kind.name:
            raise ValueError(f"{where} is not a re-ranker kind with a name (a subclass of "
                             f"irglow.models.rerank.kinds.RerankerKind, name = '...'): it is {loaded!r}")
        if kind.name != point.name:  # the entry point's name is the kind's (its [rerank.<name>] table)
            raise ValueError(f"{where}: the entry point is named {point.name!r}, its kind {kind.name!r}: name them alike")
        if kind.name in BUILT_IN or kind.name in found:
            raise ValueError(f"{where}: the re-ranker kind {kind.name!r} is taken")
        found[kind.name] = kind
    return found


def kind_names() -> tuple[str, ...]:
    """Every re-ranker kind: irglow's, then the registered ones."""
    return (*BUILT_IN, *plugin_kinds())


def plugin_kind(name: str) -> RerankerKind | None:
    """The registered kind ``name`` (``None``: one of irglow's own, or none)."""
    return plugin_kinds().get(name)


def write_kind(model_dir: Path, kind: str) -> None:
    """Say a model folder's kind in it (what :func:`kind_of` reads)."""
    Path(model_dir).mkdir(parents=True, exist_ok=True)
    (Path(model_dir) / MODEL_FILE).write_text(json.dumps({"kind": kind}))


def kind_of(model_dir: str | Path) -> str:
    """The kind a model folder says it holds."""
    f = Path(model_dir) / MODEL_FILE
    if not f.is_file():
        raise FileNotFoundError(f"{model_dir} is not a re-ranker folder irglow wrote: it has no {MODEL_FILE} (a "
                                f"folder trained before irglow recorded model kinds: train it again)")
    return json.loads(f.read_text())["kind"]
