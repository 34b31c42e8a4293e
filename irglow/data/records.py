"""Standard records used end to end: documents with named fields, queries, qrels, scored docs.

Qrels and scored documents are ir_measures' own NamedTuples, so nothing has to be
converted between loading and evaluation.
"""

from __future__ import annotations

from typing import Iterable, Mapping, NamedTuple

from ir_measures import Qrel, ScoredDoc  # re-exported: the same records from loading to evaluation

__all__ = ["Document", "Query", "Qrel", "ScoredDoc", "make_document"]

INSTANCE_SEPARATOR = "\n"
LUCENE_TERM_LIMIT = 32766  # bytes: the longest term Lucene indexes; a document id is one term


class Document(NamedTuple):
    """A document with named fields.

    ``fields`` maps a field name to its instances: most fields have one, a field such as
    anchor text or clicked queries can have several, and a missing field is simply absent
    (never an empty string) so "missing" and "empty" cannot be confused downstream.
    """

    doc_id: str
    fields: Mapping[str, tuple[str, ...]]

    def text(self, field: str) -> str:
        """All instances of ``field`` joined by newlines; ``""`` when the field is missing."""
        return INSTANCE_SEPARATOR.join(self.fields.get(field, ()))

    def contents(self, field_order: Iterable[str] | None = None) -> str:
        """Every field's text in ``field_order`` (default: stored order), the combined ``contents``."""
        names = list(field_order) if field_order is not None else list(self.fields)
        return INSTANCE_SEPARATOR.join(t for t in (self.text(f) for f in names) if t)


class Query(NamedTuple):
    """A query: its id and its text (what is searched and encoded)."""
    query_id: str
    text: str


def make_document(doc_id: str, **fields: str | Iterable[str] | None) -> Document:
    """Build a :class:`Document`; ``None``/empty values become missing fields, lists become instances.

    Args:
        doc_id: The document's id.
        **fields: Its fields by name: a text, several texts (a field with instances), or ``None`` (missing).
    """
    clean: dict[str, tuple[str, ...]] = {}
    for name, value in fields.items():
        if value is None:
            continue
        instances = (value,) if isinstance(value, str) else tuple(v for v in value if isinstance(v, str))
        instances = tuple(v for v in instances if v.strip())
        if instances:
            clean[name] = instances
    return Document(str(doc_id), clean)
