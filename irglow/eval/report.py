"""``irglow report``: a results browser in one self-contained HTML file — why a system wins, query by query.

The page holds its script, style and data (no server, no network, no library: plain JS and SVG, so nothing
needs vendoring or pinning).  Three views, each with a URL fragment that can be pasted into notes:

* ``#/overview`` — the comparison table exactly as :func:`irglow.eval.compare.compare` computed it (marks, the
  test and correction named, Δ with CI, Judged@10, risk), sortable by any column, and each run's per-query
  difference to the baseline, sorted;
* ``#/queries?run=twbert&measure=nDCG@10&filter=losses`` — every query with both runs' values and Δ, filters
  a researcher wants (wins / losses / ties, unjudged documents in the run's top 10, free text), sortable by
  |Δ|, by τ_AP or by rank-biased overlap of the two whole rankings (DiffIR's contrastive selection,
  :mod:`irglow.eval.contrast`);
* ``#/query/<id>?a=bm25&b=twbert`` — two runs side by side: rank, document id, title and a snippet with the
  query's terms highlighted, the relevance grade (or *unjudged*), how far each document moved, the query's
  measures, and TW-BERT's learned term weights beside the fixed prior where the run came from TW-BERT.

Per-query detail (top-k lists, document snippets, grades) is stored as gzip-compressed base64 chunks of a
few hundred queries, decoded by the browser (``DecompressionStream``) only when a query is opened: the page
opens at MS MARCO size (``bench/report_open.py``).  Every document text reaches the page as text nodes, never
as markup: a document holding ``<script>`` shows those characters.
"""

from __future__ import annotations

import base64
import gzip
import html
import json
import math
import re
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Mapping

from irglow.data.records import Qrel
from irglow.eval.breakdown import breakdown_tables, characteristics
from irglow.eval.compare import Comparison, JUDGED
from irglow.eval.contrast import CONTRAST_DEPTH, rbo, tau_ap
from irglow.eval.matching import TermMatcher
from irglow.runs.trec import Run
from irglow.data.docstore import docs_store
from irglow.utils.atomic import atomic_write_text

CHUNK_QUERIES = 250  # queries per compressed detail chunk
SNIPPET_CHARS = 320
TITLE_CHARS = 160
FIELD_CHARS = 4000  # a field's text in the document overlay (a 5 MB document shows its first 4,000 characters)
_WORD = re.compile(r"\w+", re.UNICODE)


def snippet(text: str, terms: set[str], chars: int = SNIPPET_CHARS) -> str:
    """A window of ``text`` around its first query term (the start when none occurs): a 5 MB document gives a
    few hundred characters, never its whole body."""
    first = 0
    for m in _WORD.finditer(text):  # one pass over the words (not one search per query term)
        if m.group().lower() in terms:
            first = m.start()
            break
    start = max(0, first - chars // 4)
    piece = text[start:start + chars]
    return ("…" if start else "") + " ".join(piece.split()) + ("…" if start + chars < len(text) else "")


def _doc_texts(collection, shown_for: dict[str, set[str]], terms_of: dict[str, set[str]]
               ) -> tuple[dict[str, dict[str, list[str]]], dict[str, list[list[str]]]]:
    """``{doc id: {query id: [title, snippet]}}`` for the documents the report shows, each snippet centred on
    *that* query's words (one pass over the corpus): a window chosen on every query's words would show a
    document shown for "quantum entanglement" around another query's "zebra".  Also every field of each shown
    document (``[[field, text], …]``, each cut at :data:`FIELD_CHARS`), for the page's document overlay."""
    out: dict[str, dict[str, list[str]]] = {}
    fields_of: dict[str, list[list[str]]] = {}
    if collection is None or not shown_for:
        return out, fields_of

    store = docs_store(collection)  # the shown documents by id: no pass over the corpus
    shown = sorted((d for d in shown_for if d in store), key=store.position_of)  # in corpus order, as before
    for doc in (doc for lo in range(0, len(shown), 512) for doc in store.get_many(shown[lo:lo + 512])):
        fields = list(doc.fields)
        title_field = next((f for f in fields if f.lower() in ("title", "headline")), None)
        title = " ".join(doc.text(title_field).split())[:TITLE_CHARS] if title_field else ""
        body = " ".join(doc.text(f) for f in fields if f != title_field)
        out[doc.doc_id] = {q: [title, snippet(body, terms_of.get(q, set()))] for q in shown_for[doc.doc_id]}
        fields_of[doc.doc_id] = [[f, _cut(doc.text(f))] for f in fields]
    return out, fields_of


def _cut(text: str, chars: int = FIELD_CHARS) -> str:
    return text if len(text) <= chars else text[:chars] + f"… [{len(text) - chars:,} more characters]"


def _best_other(cmp: Comparison, names: list[str], baseline: str) -> str | None:
    """The run a reader most likely came for: the best mean on the first measure among the others."""
    others = [n for n in names if n != baseline]
    if not others:
        return None
    first = cmp.means.columns[0]
    return max(others, key=lambda n: (cmp.means.loc[n, first] if cmp.means.loc[n, first] == cmp.means.loc[n, first]
                                      else float("-inf"), -others.index(n)))


def report_data(cmp: Comparison, runs: Mapping[str, Run], qrels: list[Qrel], queries: Mapping[str, str],
                collection=None, depth: int = 10, title: str = "irglow report",
                term_weights: Mapping[str, Mapping[str, Any]] | None = None, notes: list[str] | None = None,
                images: Mapping[str, bytes] | None = None, matcher: TermMatcher | None = None,
                clusters: Mapping[str, str] | None = None, cluster_source: str = "") -> dict[str, Any]:
    """Everything the page shows, as JSON-able data: the overview from ``cmp``, one row per judged query, the
    breakdown of each run's Δ by query characteristics (:mod:`irglow.eval.breakdown`), and the compressed
    per-query detail (top ``depth`` of every run, grades, document titles, snippets and fields).
    ``term_weights``: run tag → query id → {"terms": [...], "weights": [...], "prior": [...]} (TW-BERT) or a
    GLOW word table; ``matcher``: the index's analyzer and statistics, for highlighting the words that became
    query terms, shaded by their BM25 contribution, and for the mean-IDF grouping (none: raw query words are
    marked); ``clusters``: query id → topic label (embedding clusters, made by the caller)."""
    names = list(cmp.means.index)
    measures = [str(m) for m in cmp.means.columns]
    baseline = cmp.baseline or names[0]
    grades: dict[str, dict[str, int]] = {}
    for q in qrels:
        grades.setdefault(q.query_id, {})[q.doc_id] = int(q.relevance)
    qids = sorted(grades)
    per_query = cmp.values_per_query or {}
    tops = {n: {q: [d for d, _ in runs[n].ranking.get(q, [])[:depth]] for q in qids} for n in names if n in runs}
    terms_of = {q: {w.lower() for w in _WORD.findall(queries.get(q, ""))} for q in qids}
    shown_for: dict[str, set[str]] = {}
    for n in tops:
        for q in qids:
            for d in tops[n][q]:
                shown_for.setdefault(d, set()).add(q)
    texts, fields_of = _doc_texts(collection, shown_for, terms_of)
    relevant = {q: sum(1 for g in grades[q].values() if g > 0) for q in qids}
    chars = characteristics(qids, queries, relevant, {m: per_query.get(baseline, {}).get(m, {}) for m in measures},
                            baseline, mean_idf=matcher.mean_idf({q: queries.get(q, "") for q in qids})
                            if matcher is not None else None, clusters=clusters, cluster_source=cluster_source)
    rows = [_query_row(q, queries, names, measures, per_query, grades[q], tops, runs, baseline, relevant[q], chars)
            for q in qids]
    detail = _QueryDetail(runs, tops, grades, texts, fields_of, None if collection is None else set(texts), depth,
                          term_weights or {}, matcher, queries)
    chunks, where = detail.chunks(qids)
    breakdown = {"characteristics": [c.header() for c in chars],
                 "tables": _rounded(breakdown_tables(per_query, names, measures, baseline, qids, chars))}
    return {"title": title, "measures": measures, "baseline": baseline, "runs": names, "depth": depth,
            "best": _best_other(cmp, names, baseline),
            "caption": cmp.caption(), "explain": _explanations(cmp), "overview": _overview(cmp, names, measures, baseline),
            "judged_name": JUDGED, "queries": rows, "breakdown": breakdown,
            "highlight": matcher.describe() if matcher is not None else None,
            "chunk_of": where, "chunks": chunks, "notes": list(notes or []),
            "images": {k: base64.b64encode(v).decode("ascii") for k, v in (images or {}).items()}}


def _query_row(q: str, queries, names, measures, per_query, judged: dict[str, int], tops, runs, baseline: str,
               relevant: int, chars) -> dict[str, Any]:
    """One judged query's row of the queries table: each run's values, unjudged and relevant documents in its top,
    and its rank correlation with the baseline."""
    values = {n: [per_query.get(n, {}).get(m, {}).get(q) for m in measures] for n in names}
    unjudged = {n: sum(d not in judged for d in tops[n][q]) for n in tops}
    found = {n: sum(judged.get(d, 0) > 0 for d in tops[n][q]) for n in tops}
    # over the whole rankings (their first CONTRAST_DEPTH ranks), not the documents two top-k lists share
    whole = {n: [d for d, _ in runs[n].ranking.get(q, [])[:CONTRAST_DEPTH]] for n in tops}
    others = [n for n in tops if n != baseline and baseline in tops]
    tau = {n: _num(tau_ap(whole[baseline], whole[n])) for n in others}
    overlap = {n: _num(rbo(whole[baseline], whole[n])) for n in others}
    return {"id": q, "text": queries.get(q, ""), "values": values, "unjudged": unjudged, "found": found,
            "tau": tau, "rbo": overlap, "relevant": relevant, "judged": len(judged),
            "groups": {c.key: c.of[q] for c in chars if q in c.of}}


def _overview(cmp: Comparison, names: list[str], measures: list[str], baseline: str) -> list[dict[str, Any]]:
    """The overview table: per run and measure its mean, Δ, interval, p-value and mark; its risk columns."""
    overview = []
    for n in names:
        cells = []
        for m in measures:
            mark = "▲" if cmp.significant(n, m) and cmp.deltas.loc[n, m] > 0 else \
                "▼" if cmp.significant(n, m) else ""
            low = None if cmp.ci_low is None else cmp.ci_low.loc[n, m]
            high = None if cmp.ci_high is None else cmp.ci_high.loc[n, m]
            p = cmp.pvalues.loc[n, m]
            cells.append({"mean": _num(cmp.means.loc[n, m]), "mark": mark, "delta": _num(cmp.deltas.loc[n, m]),
                          "ci": [_num(low), _num(high)] if n != baseline and cmp.tested else None,
                          "p": _num(p)})
        risk, risk_sig = {}, {}
        if cmp.risk is not None and n in cmp.risk.index:
            for c in cmp.risk.columns:
                risk[c] = _num(cmp.risk.loc[n, c])
                p = cmp.risk_p.loc[n, c] if cmp.risk_p is not None and c in cmp.risk_p.columns else float("nan")
                risk_sig[c] = bool(p == p and p < cmp.alpha)
        overview.append({"run": n, "cells": cells, "judged": _num(cmp.judged[n]) if cmp.judged is not None else None,
                         "risk": risk, "risk_sig": risk_sig, "group": (cmp.groups or {}).get(n)})
    return overview


@dataclass
class _QueryDetail:
    """The per-query detail the page loads a chunk at a time: every run's top documents with grades, texts and
    fields, where a run ranks a shown document below its top, and the highlighting's terms and weights."""

    runs: Mapping[str, Run]
    tops: dict
    grades: dict
    texts: dict
    fields_of: dict
    in_corpus: set | None
    depth: int
    term_weights: Mapping[str, Mapping[str, Any]]
    matcher: TermMatcher | None
    queries: Mapping[str, str]

    def chunks(self, qids: list[str]) -> tuple[list[str], dict[str, int]]:
        """The detail in gzipped, base64 chunks of CHUNK_QUERIES queries, and each query's chunk."""
        weights = self.run_term_weights()
        chunks, where = [], {}
        for start in range(0, len(qids), CHUNK_QUERIES):
            part: dict[str, Any] = {}
            chunk_docs: dict[str, list[list[str]]] = {}
            for q in qids[start:start + CHUNK_QUERIES]:
                part[q] = self.entry(q, weights)
                for d in part[q]["docs"]:
                    if d in self.fields_of:
                        chunk_docs[d] = self.fields_of[d]
                where[q] = len(chunks)
            raw = json.dumps({"queries": part, "docs": chunk_docs}, ensure_ascii=False, separators=(",", ":"),
                             allow_nan=False).encode("utf-8")
            chunks.append(base64.b64encode(gzip.compress(raw, 6)).decode("ascii"))
        return chunks, where

    def run_term_weights(self) -> dict[str, dict[str, dict[str, float]]]:
        """Per run, the weight each analyzed query term carries in its score (TW-BERT's learned weight, GLOW's
        attention weight of the word that became it): the highlighting's shade multiplies the term's BM25 by it."""
        out: dict[str, dict[str, dict[str, float]]] = {}
        for n, table in self.term_weights.items():
            for q, w in table.items():
                if self.matcher is not None and "prior" not in w:  # GLOW: surface words → the terms they become
                    words = self.matcher.terms_of_words(w["terms"])
                    pairs = [(words[t.lower()], x) for t, x in zip(w["terms"], w["weights"])]
                else:  # TW-BERT: its uni-grams are analyzed terms already (bi-grams hold a space)
                    pairs = [(t, x) for t, x in zip(w["terms"], w["weights"]) if " " not in t]
                out.setdefault(n, {})[q] = {t: float(x) for t, x in pairs if t}
        return out

    def entry(self, q: str, run_term_weights) -> dict[str, Any]:
        tops, runs, depth, texts, grades = self.tops, self.runs, self.depth, self.texts, self.grades
        docs = {d for n in tops for d in tops[n][q]}
        # where a run ranks a shown document below its own top ``depth`` (the page says "rank 48 in bm25")
        beyond = {n: {d: r for r, (d, _) in enumerate(runs[n].ranking.get(q, [])[depth:], depth + 1)
                      if d in docs} for n in tops}
        entry = {"top": {n: [[d, json_score(s)] for d, s in runs[n].ranking.get(q, [])[:depth]] for n in tops},
                 "ranks": {n: r for n, r in beyond.items() if r},
                 "grades": {d: grades[q][d] for d in docs if d in grades[q]},
                 "docs": {d: texts[d][q] if d in texts else None for d in docs},
                 "missing": sorted(d for d in docs if self.in_corpus is not None and d not in self.in_corpus),
                 "weights": {n: w[q] for n, w in self.term_weights.items() if q in w}}
        if self.matcher is not None:
            text = self.queries.get(q, "")
            qterms = self.matcher.query_terms(text)
            shown = [text] + [t for d in docs if d in texts for t in texts[d][q]] + \
                [t for d in docs for _, t in self.fields_of.get(d, [])]
            entry["match"] = {"terms": qterms, "words": self.matcher.surface(shown, qterms),
                              "bm25": {d: {t: round(v, 4) for t, v in self.matcher.contributions(d, qterms).items()}
                                       for d in docs},
                              "weight": {n: w[q] for n, w in run_term_weights.items() if q in w}}
        return entry


def _rounded(tables):
    return {r: {m: {k: [[_num(x) if isinstance(x, float) else x for x in row] for row in rows]
                    for k, rows in by_char.items()} for m, by_char in by_m.items()} for r, by_m in tables.items()}


def _explanations(cmp: Comparison) -> list[str]:
    """What each column and mark of the overview means, in the words ``irglow compare`` prints."""
    out = []
    if cmp.baseline is not None and cmp.tested and cmp.ci_low is not None and not cmp.show_ci:
        out.append(f"Δ [CI] under a value: the run's mean minus {cmp.baseline}'s, with its "
                   f"{cmp.ci_description()}.")
    if cmp.judged is not None:
        out.append(f"{JUDGED}: the share of each run's top 10 documents that are judged; a low share means its "
                   f"scores count unjudged documents as not relevant and may understate it.")
    if cmp.risk is not None and not cmp.risk.empty:
        out.append(cmp.risk_intro().replace("`", "") + " Positive URisk: the gains outweigh the α-weighted "
                   "losses; TRisk above 2 (below −2): reliably less (more) risky than the baseline.")
    return out


def json_score(score: float) -> float | str:
    """A run's score as JSON the page can parse: ±inf (legal in a run file, not in JSON) as the text
    ``"Infinity"``/``"-Infinity"``, which the page's ``Number()`` reads back."""
    return score if math.isfinite(score) else ("Infinity" if score > 0 else "-Infinity")


def _num(x) -> float | None:
    try:
        x = float(x)
    except (TypeError, ValueError):
        return None
    return None if x != x or x in (float("inf"), float("-inf")) else round(x, 6)


def render(data: dict[str, Any]) -> str:
    """The HTML page: style, script and data inline.  The data sits in a ``<script type=application/json>``
    with every ``<`` escaped, so no text in it can close the element; each compressed chunk of per-query
    detail in an element of its own (base64 holds no ``<``), so opening the page parses only the small rest."""
    light = {k: v for k, v in data.items() if k != "chunks"}
    payload = json.dumps(light, ensure_ascii=False, separators=(",", ":")).replace("<", "\\u003c")
    chunks = "\n".join(f'<script type="text/plain" id="irglow-chunk-{i}">{c}</script>'
                       for i, c in enumerate(data["chunks"]))
    page = (Path(__file__).parent / "report_page.html").read_text(encoding="utf-8")
    return (page.replace("{{TITLE}}", html.escape(data["title"])).replace("{{DATA}}", payload)
            .replace("{{CHUNKS}}", chunks))


def read_page(path: str | Path) -> dict[str, Any]:
    """A written page's data, chunks included (what :func:`render` put in)."""
    page = Path(path).read_text(encoding="utf-8")
    data = json.loads(page.split('id="irglow-data">', 1)[1].split("</script>", 1)[0])
    data["chunks"] = [part.split(">", 1)[1].split("</script>", 1)[0]
                      for part in page.split('<script type="text/plain" id="irglow-chunk-')[1:]]
    return data


def write_report(path: str | Path, data: dict[str, Any]) -> Path:
    return atomic_write_text(Path(path), render(data))


def add_images(path: str | Path, images: Mapping[str, bytes]) -> Path:
    """Add PNG figures made after a page was written (zero-shot's forest plot, once every collection has run) to
    its overview."""
    data = read_page(path)
    data["images"].update({k: base64.b64encode(v).decode("ascii") for k, v in images.items()})
    return write_report(path, data)
