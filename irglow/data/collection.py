"""One entry point, :func:`load_collection`, from a user-facing spec to a collection object.

A spec is ``demo``, a path to a BEIR folder, or an ir_datasets id.  Every collection offers
``name`` (a cache key), ``fields``, ``docs_iter()``, ``queries(split)`` and ``qrels(split)``.
"""

from __future__ import annotations

import dataclasses
from pathlib import Path
from typing import Iterator, Protocol

from irglow.data.records import Document, Qrel, Query


class Collection(Protocol):
    name: str

    @property
    def fields(self) -> tuple[str, ...]: ...

    def docs_iter(self) -> Iterator[Document]: ...

    def queries(self, split: str) -> list[Query]: ...

    def qrels(self, split: str) -> list[Qrel]: ...


def load_collection(spec: str) -> Collection:
    from irglow.data.beir import BeirCollection, is_beir_folder

    if spec == "demo" or spec.startswith("demo:"):
        from irglow.data.demo import DemoCollection, DemoConfig

        overrides = {}
        for item in filter(None, spec.partition(":")[2].split(",")):
            key, _, value = item.partition("=")
            known = {f.name: f for f in dataclasses.fields(DemoConfig)}
            if key not in known:
                raise ValueError(f"demo collection: unknown setting {key!r} in {spec!r}; known: {', '.join(known)}")
            try:
                overrides[key] = type(getattr(DemoConfig, key))(value)
            except ValueError:
                raise ValueError(f"demo collection: {key}={value!r} is not a {type(getattr(DemoConfig, key)).__name__}"
                                 ) from None
        return DemoCollection(DemoConfig(**overrides))
    if is_beir_folder(spec):
        return BeirCollection(spec)
    if Path(spec).exists():
        raise FileNotFoundError(f"{spec} exists but is not a BEIR folder (expected corpus.jsonl inside)")
    from irglow.data.irds import IrdsCollection

    return IrdsCollection(spec)
