"""Collections from ir_datasets by id, with explicit field mappings for the ones irglow knows."""

from __future__ import annotations

import difflib
from contextlib import contextmanager
from functools import cached_property
from pathlib import Path
from typing import Iterator

from irglow.data.records import Document, Qrel, Query, make_document
from irglow.data.docstore import IrdsStore
from irglow.data.errors import DatasetUnavailableError, UnknownDatasetError

# dataset-id prefix -> (document attribute -> irglow field). Unlisted ids use every string field.
FIELD_MAPPINGS: dict[str, dict[str, str]] = {
    "msmarco-document-v2": {"url": "url", "title": "title", "headings": "headings", "body": "body"},
    "msmarco-document": {"url": "url", "title": "title", "body": "body"},
    "beir/": {"title": "title", "text": "text"},
    "cranfield": {"title": "title", "text": "text"},
}


def wanted_downloads(dataset_id: str) -> list[str]:
    """``URL → local path`` (or the licence instructions) for each file ir_datasets lists for ``dataset_id``."""
    import ir_datasets
    from ir_datasets.util.download import DownloadConfig

    top, _, rest = dataset_id.partition("/")
    entries = DownloadConfig.contents().get(top, {})
    keys = [k for k in entries if not rest or rest == k or rest.startswith(k + "/") or k.startswith(rest + "/")
            or k == "docs"]
    home = Path(ir_datasets.util.home_path())
    lines = []
    for k in keys:
        e = entries[k]
        if not isinstance(e, dict):
            continue
        local = home / top / e["cache_path"] if "cache_path" in e else home / "downloads" / str(e.get("expected_md5"))
        if "url" in e:
            lines.append(f"{e['url']} → {local}")
        elif "instructions" in e:
            lines.append(" ".join(str(e["instructions"]).format(path=local).split()))
    return lines


@contextmanager
def explain_unavailable(dataset_id: str):
    """Turn a failed download (an ``OSError``: no network, a refused or missing file) into a
    :class:`DatasetUnavailableError` naming the files; ir_datasets' own message says only the first."""
    try:
        yield
    except (OSError, RuntimeError) as e:
        # ir_datasets raises RuntimeError('All download sources failed', [every mirror's error]) once every
        # mirror failed: one line naming the cause is what a table note can hold, not every URL tried
        if isinstance(e, RuntimeError) and not (e.args and e.args[0] == "All download sources failed"):
            raise
        cause = "every download source failed" if isinstance(e, RuntimeError) else \
            f"{type(e).__name__}: {str(e).splitlines()[0][:120] if str(e) else ''}"
        wanted = wanted_downloads(dataset_id)
        raise DatasetUnavailableError(
            f"ir_datasets could not download {dataset_id!r} ({cause}); "
            + (f"it wants {'; '.join(wanted)} — put the file{'s' if len(wanted) > 1 else ''} there, or set "
               f"IR_DATASETS_HOME to a folder that has {'them' if len(wanted) > 1 else 'it'}" if wanted
               else "is the network reachable?")) from e


def _registry() -> list[str]:
    import ir_datasets

    return list(ir_datasets.registry._registered)  # noqa: SLF001 (no public listing)


def resolve_id(dataset_id: str, split: str | None = None) -> str:
    """``beir/scifact`` + ``test`` → ``beir/scifact/test``; an unknown id names close matches."""
    ids = _registry()
    if split and f"{dataset_id}/{split}" in ids:
        return f"{dataset_id}/{split}"
    children = sorted(i[len(dataset_id) + 1:] for i in ids if i.startswith(dataset_id + "/"))
    if split and dataset_id in ids and children and split not in dataset_id.split("/"):
        # the collection has splits and this is not one of them: say so before any download starts
        close = difflib.get_close_matches(split, children, n=3, cutoff=0.5)
        raise UnknownDatasetError(
            f"{dataset_id!r} has no split {split!r}{f' (did you mean {close[0]!r}?)' if close else ''}; "
            f"its splits: {', '.join(children)}")
    if dataset_id in ids:
        return dataset_id
    close = difflib.get_close_matches(f"{dataset_id}/{split}" if split else dataset_id, ids, n=5, cutoff=0.5)
    raise UnknownDatasetError(
        f"unknown collection {dataset_id!r}{f' (split {split!r})' if split else ''}: not a BEIR folder, not 'demo', "
        f"not an ir_datasets id. Close matches: {', '.join(close) or 'none'}")


def field_mapping(dataset_id: str) -> dict[str, str] | None:
    for prefix, mapping in FIELD_MAPPINGS.items():
        if dataset_id == prefix or dataset_id.startswith(prefix if prefix.endswith("/") else prefix + "/") \
                or dataset_id == prefix.rstrip("/"):
            return mapping
    return None


class IrdsCollection:
    def __init__(self, dataset_id: str):
        resolve_id(dataset_id)
        self.dataset_id = dataset_id
        self.name = "irds-" + dataset_id.replace("/", "-")

    def _dataset(self, split: str | None = None):
        import ir_datasets

        return ir_datasets.load(resolve_id(self.dataset_id, split))

    @cached_property
    def _mapping(self) -> dict[str, str]:
        mapping = field_mapping(self.dataset_id)
        if mapping is not None:
            return mapping
        doc_cls = self._dataset().docs_cls()
        types = getattr(doc_cls, "__annotations__", {})
        return {name: name for name in doc_cls._fields
                if name != "doc_id" and types.get(name, str) in (str, tuple[str, ...])}

    @property
    def fields(self) -> tuple[str, ...]:
        return tuple(self._mapping.values())

    def docs_iter(self) -> Iterator[Document]:
        with explain_unavailable(self.dataset_id):
            for doc in self._dataset().docs_iter():
                values = {dst: getattr(doc, src, None) for src, dst in self._mapping.items()}
                yield make_document(doc.doc_id, **values)

    def docs_store(self):
        """Documents by id through ir_datasets' own ``docs_store()`` (:mod:`irglow.data.docstore`)."""
        return IrdsStore(self)

    def docs_count(self) -> int | None:
        ds = self._dataset()
        return ds.docs_count() if ds.has_docs() else None

    def queries(self, split: str | None = None) -> list[Query]:
        with explain_unavailable(resolve_id(self.dataset_id, split)):
            return [Query(q.query_id, q.default_text() if hasattr(q, "default_text") else q.text)
                    for q in self._dataset(split).queries_iter()]

    def qrels(self, split: str | None = None) -> list[Qrel]:
        with explain_unavailable(resolve_id(self.dataset_id, split)):
            return [Qrel(q.query_id, q.doc_id, int(q.relevance)) for q in self._dataset(split).qrels_iter()]
