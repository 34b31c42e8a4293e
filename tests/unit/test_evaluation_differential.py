"""Differential test of evaluation: generated run and qrels files in every shape the TREC formats allow, scored by
irglow (``eval``/``compare``/``report``'s code path, the columnar and the strict reader, ``fuse``) and by a
reference built from what the file *means* — the (query, document, score) triples the generator wrote — scored by
ir_measures' pytrec_eval provider (trec_eval's own code and tie order) or, for the measures pytrec_eval lacks
(``RR@k``, ``Judged@k``, ``NCG@k``), a few lines here on trec_eval's order (score descending, document id
descending). Any difference fails: the same judgments and ranking give the same number, whatever the file looks
like (blocks of a query's lines apart, shuffled lines, ties, ±inf, scientific notation, tabs, runs of spaces, CRLF,
a BOM, gzip, blank lines, unjudged documents, judged documents nobody retrieved, labels −1 and 0, repeated lines
under ``--duplicates keep-max``).
"""

from __future__ import annotations

import gzip
import math
import tempfile
from pathlib import Path

import ir_measures
import numpy as np
import pytest
from hypothesis import HealthCheck, Phase, given, settings, strategies as st

from irglow.cli import build_parser
from irglow.commands.evaluate import _comparison, _read_runs
from irglow.commands.report import report_from_files
from irglow.data.trec import FormatError, read_qrels
from irglow.eval.compare import compare
from irglow.eval.report import json_score
from tests.files import decode_details
from irglow.runs.columns import _fast, read_ranked
from irglow.runs.fusion import fuse
from irglow.runs.trec import Run

EXAMPLES = 60  # files generated per run of the main property (README: "Differential test of evaluation")

# every family of measure irglow offers (any ir_measures measure, NCG@k registered by irglow), at a small cutoff
# so the generated rankings cross it
PYTREC = ["nDCG@3", "nDCG", "R@3", "P@2", "P(rel=2)@3", "AP", "AP@3", "RR", "Success@2", "Rprec"]
OWN = ["RR@2", "Judged@3", "NCG@3", "NCG", "Bpref"]
MEASURES = PYTREC + OWN

QIDS = ["1", "2", "10", "9", "003", "q_é"]
DOCS = ["d1", "d2", "d10", "d9", "D1", "doc-ü", 'x"q', "a#b", "1", "01", "z\u00a0nbsp"]  # a no-break space is no separator
SCORE_TEXTS = ["0", "1", "1.0", "2", "-1", "0.5", "1e-3", "1E3", "-2.5e+1", "inf", "-inf", "Infinity", ".5", "5.",
               "+3", "7.000"]
scores = st.one_of(st.sampled_from(SCORE_TEXTS), st.floats(allow_nan=False).map(repr),
                   st.integers(-3, 3).map(str))


@st.composite
def run_models(draw, duplicates: bool):
    """(query → [(doc, score text)], the file's lines in order) with each query's lines in one or more blocks."""
    queries = draw(st.lists(st.sampled_from(QIDS), unique=True, min_size=draw(st.sampled_from([1, 1, 1, 0])), max_size=5))
    model: dict[str, list[tuple[str, str]]] = {}
    for q in queries:
        docs = draw(st.lists(st.sampled_from(DOCS), unique=True, min_size=1, max_size=7))
        model[q] = [(d, draw(scores)) for d in docs]
        if duplicates and draw(st.booleans()):
            d = draw(st.sampled_from(docs))
            model[q].append((d, draw(scores)))  # a repeated (query, document): keep-max keeps the higher score
    lines = []
    blocks = []
    written_in_order = draw(st.sampled_from([True, True, False]))  # as most run files: a query's lines best first
    for q, entries in model.items():
        if written_in_order:
            entries = sorted(entries, key=lambda e: (float(e[1]), e[0]), reverse=True)
        cuts = sorted(draw(st.lists(st.integers(1, max(1, len(entries) - 1)), min_size=1, max_size=2, unique=True)))
        bounds = [0, *[c for c in cuts if c < len(entries)], len(entries)]
        blocks += [[(q, d, s) for d, s in entries[a:b]] for a, b in zip(bounds, bounds[1:]) if a < b]
    shape = draw(st.sampled_from(["blocks", "blocks", "shuffled", "in order"]))
    if shape == "blocks":
        lines = [line for block in draw(st.permutations(blocks)) for line in block]
    elif shape == "shuffled":
        lines = list(draw(st.permutations([line for block in blocks for line in block])))
    else:
        lines = [line for block in blocks for line in block]
    return model, lines


@st.composite
def file_shapes(draw):
    """How a file is written: separators, line endings, BOM, gzip, blank lines, a final newline."""
    return {"seps": draw(st.sampled_from([[" "], [" "], [" "], ["\t"], [" ", "\t", "  ", " \t "]])),
            "newline": draw(st.sampled_from(["\n", "\n", "\r\n"])), "bom": draw(st.booleans()),
            "gzip": draw(st.sampled_from([False, False, True])), "blank": draw(st.booleans()),
            "final": draw(st.booleans())}


def write_file(path: Path, rows: list[list[str]], shape: dict, draw) -> Path:
    text_lines = []
    for row in rows:
        seps = [draw(st.sampled_from(shape["seps"])) for _ in row[1:]]
        text_lines.append(row[0] + "".join(s + f for s, f in zip(seps, row[1:])))
        if shape["blank"] and draw(st.booleans()):
            text_lines.append("")
    text = shape["newline"].join(text_lines) + (shape["newline"] if shape["final"] else "")
    data = ("\ufeff" if shape["bom"] else "").encode() + text.encode("utf-8")
    path.write_bytes(gzip.compress(data) if shape["gzip"] else data)
    return path


@st.composite
def qrels_models(draw):
    """query → {doc: label}: some queries the runs lack, documents no run retrieved, labels −1 … 3."""
    queries = draw(st.lists(st.sampled_from(QIDS), unique=True, min_size=1, max_size=5))
    return {q: draw(st.dictionaries(st.sampled_from(DOCS + ["never-retrieved"]), st.integers(-1, 3), min_size=1,
                                    max_size=6)) for q in queries}


def write_qrels_file(path: Path, model: dict, draw) -> Path:
    shape = draw(file_shapes())
    rows = [[q, draw(st.sampled_from(["0", "Q0"])), d, str(label)] for q, judged in model.items()
            for d, label in judged.items()]
    if draw(st.booleans()):  # BEIR's TSV, with its header
        shape["seps"] = ["\t"]
        rows = [["query-id", "corpus-id", "score"], *[[r[0], r[2], r[3]] for r in rows]]
    return write_file(path, rows, shape, draw)


def write_run_file(path: Path, lines, draw) -> Path:
    rows = [[q, "Q0", d, str(draw(st.integers(-2, 99))), s, draw(st.sampled_from(["tag", "other"]))]
            for q, d, s in lines]
    return write_file(path, rows, draw(file_shapes()), draw)


# -- the reference -------------------------------------------------------------------------------------------------

def meaning(model: dict) -> dict[str, dict[str, float]]:
    """What a run file says: each (query, document)'s score, the highest where a line repeats."""
    out: dict[str, dict[str, float]] = {}
    for q, entries in model.items():
        for d, s in entries:
            out.setdefault(q, {})
            out[q][d] = max(out[q].get(d, -math.inf), float(s))
    return out


def trec_ranking(docs: dict[str, float]) -> list[str]:
    """trec_eval's order: score descending, then document id descending (byte order = code-point order)."""
    return [d for d, _ in sorted(docs.items(), key=lambda x: (x[1], x[0]), reverse=True)]


def as_trec_eval_reads(run: dict) -> dict:
    """The run as pytrec_eval is given it: its scores, except for a query where rounding them to single precision
    (what trec_eval stores) ties scores the file tells apart — the one documented difference: irglow orders by the
    scores as written, so there the reference gets rank values in that order."""
    out = {}
    for q, docs in run.items():
        scores = list(docs.values())
        with np.errstate(over="ignore"):
            single = np.array(scores, np.float32).tolist()
        if len(set(single)) == len(set(scores)):
            out[q] = docs
        else:
            ranked = trec_ranking(docs)
            out[q] = {d: float(len(ranked) - i) for i, d in enumerate(ranked)}
    return out


def reference_values(run: dict, qrels: dict) -> dict[str, dict[str, float]]:
    """measure → judged query → value; a judged query the run lacks scores 0 (trec_eval -c)."""
    out = {m: {q: 0.0 for q in qrels} for m in MEASURES}
    # trec_eval reads a negative label as "pooled, not judged" (no measure but infAP counts it); pytrec_eval
    # corrupts memory on one (hangs and crashes later in the process), so it is given the judged labels only
    judged_only = {q: {d: g for d, g in docs.items() if g >= 0} for q, docs in qrels.items()}
    for name in PYTREC:
        for metric in ir_measures.pytrec_eval.iter_calc([ir_measures.parse_measure(name)], judged_only,
                                                        as_trec_eval_reads(run)):
            out[str(metric.measure)][metric.query_id] = metric.value
    for q, judged in qrels.items():
        docs = trec_ranking(run.get(q, {}))
        if not docs:
            continue
        first = next((i for i, d in enumerate(docs, 1) if judged.get(d, 0) > 0), None)
        out["RR@2"][q] = 1 / first if first is not None and first <= 2 else 0.0
        out["Judged@3"][q] = sum(d in judged for d in docs[:3]) / min(3, len(docs))
        # trec_eval's bpref: a negative label is "pooled, not judged"; each retrieved relevant document scores
        # 1 − min(judged non-relevant above it, R) / min(R, N)
        rel = sum(g > 0 for g in judged.values())
        nonrel = sum(g == 0 for g in judged.values())
        above, total = 0, 0.0
        for d in docs:
            g = judged.get(d, -1)
            if g > 0:
                total += 1.0 - (min(above, rel) / min(rel, nonrel) if min(rel, nonrel) else 0.0)
            elif g == 0:
                above += 1
        out["Bpref"][q] = total / rel if rel else 0.0
        gains = sorted((max(g, 0) for g in judged.values()), reverse=True)
        for name, k in (("NCG@3", 3), ("NCG", None)):
            ideal = sum(gains[:k]) if k else sum(gains)
            got = sum(max(judged.get(d, 0), 0) for d in (docs[:k] if k else docs))
            out[name][q] = got / ideal if ideal > 0 else 0.0
    return out


def as_lists(ranked) -> dict[str, list[tuple[str, float]]]:
    """A RankedRun read from a file as query → [(doc, score from the file)], best first."""
    return {q: docs for q, docs in ranked.top(10**9).ranking.items()}


def same_values(got: dict, want: dict, what: str) -> None:
    for m in MEASURES:
        for q, value in want[m].items():
            assert math.isclose(got[m][q], value, rel_tol=1e-12, abs_tol=1e-12), \
                f"{what}: {m} of query {q}: irglow {got[m][q]!r}, reference {value!r}"


# -- the properties ------------------------------------------------------------------------------------------------

# no 'explain' phase: its line tracing makes shrinking a failure of the multi-process comparison take minutes
BOUNDED = dict(deadline=None, derandomize=True, phases=[Phase.explicit, Phase.generate, Phase.shrink],
               suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large])
PROPERTY = settings(max_examples=EXAMPLES, **BOUNDED)


@PROPERTY
@given(st.data(), st.booleans())
def test_eval_agrees_with_ir_measures_on_every_file(data, duplicates):
    draw = data.draw
    model, lines = draw(run_models(duplicates))
    qrels_model = draw(qrels_models())
    with tempfile.TemporaryDirectory() as tmp:
        run_path = write_run_file(Path(tmp) / "a.run", lines, draw)
        qrels_path = write_qrels_file(Path(tmp) / "q.qrels", qrels_model, draw)
        mode = "keep-max" if duplicates else "error"
        repeated = sum(len(e) for e in model.values()) != sum(len(set(d for d, _ in e)) for e in model.values())

        qrels = read_qrels(qrels_path)
        assert {(q.query_id, q.doc_id): q.relevance for q in qrels} == \
            {(q, d): g for q, judged in qrels_model.items() for d, g in judged.items()}

        if repeated and mode == "error":  # both readers refuse, naming the file and line
            with pytest.raises(FormatError, match="duplicate document"):
                Run.read(run_path)
            with pytest.raises(FormatError, match="duplicate document"):
                read_ranked(run_path)
            return
        want_run = meaning(model)
        strict = Run.read(run_path, mode)
        assert {q: dict(docs) for q, docs in strict.ranking.items()} == want_run
        assert {q: [d for d, _ in docs] for q, docs in strict.ranking.items()} == \
            {q: trec_ranking(docs) for q, docs in want_run.items()}
        fast = None if run_path.read_bytes()[:2] == b"\x1f\x8b" else _fast(run_path)
        if fast is not None:  # the columnar reader, where it takes the file, reads what the strict one reads
            assert as_lists(fast) == strict.ranking
        assert as_lists(read_ranked(run_path, mode)) == strict.ranking

        want = reference_values(want_run, qrels_model)
        args = build_parser().parse_args(["eval", str(run_path), "--qrels", str(qrels_path), "-m", " ".join(MEASURES),
                                          "--duplicates", mode])
        evaluated = _read_runs(args, qrels)["a"]
        same_values(evaluated.values, want, "eval")
        if not set(want_run) & set(qrels_model):  # no judged query (an empty run too): an error, not an all-zero row,
            # as trec_eval's "No queries with both results and relevance info" (exit 7, with or without -c)
            with pytest.raises(ValueError, match="shares 0 of its|ranks no document for any query"):
                compare({"a": evaluated}, qrels, MEASURES)
            return
        table = compare({"a": evaluated}, qrels, MEASURES)
        for m in MEASURES:
            assert math.isclose(table.means.loc["a", m], sum(want[m].values()) / len(qrels_model), abs_tol=1e-12)


@settings(max_examples=15, **BOUNDED)
@given(st.data())
def test_compare_and_report_agree_with_ir_measures(data):
    """``compare`` and ``report`` (two runs, evaluated in worker processes) give every run's per-query values the
    reference gives, and the report shows each run's top documents in trec_eval's order with the file's scores."""
    draw = data.draw
    models = [draw(run_models(False)) for _ in range(2)]
    qrels_model = draw(qrels_models())
    with tempfile.TemporaryDirectory() as tmp:
        paths = [str(write_run_file(Path(tmp) / f"{name}.run", lines, draw))
                 for name, (_, lines) in zip("ab", models)]
        qrels_path = str(write_qrels_file(Path(tmp) / "q.qrels", qrels_model, draw))
        args = build_parser().parse_args(["report", *paths, "--qrels", qrels_path, "-m", " ".join(MEASURES), "--depth", "3",
                                          "--permutations", "10"])
        if any(not set(m) & set(qrels_model) for m, _ in models):  # an empty run too (trec_eval's exit 7)
            with pytest.raises(ValueError, match="shares 0 of its|ranks no document for any query"):
                _comparison(args, read_qrels(qrels_path))
            return
        cmp = _comparison(args, read_qrels(qrels_path))
        report = report_from_files(args)
        shown = {}
        for row in report["queries"]:
            shown[row["id"]] = row["values"]
        tops = decode_details(report)[0]
        for name, (model, _) in zip("ab", models):
            run = meaning(model)
            want = reference_values(run, qrels_model)
            same_values(cmp.values_per_query[name], want, f"compare, run {name}")
            for q in qrels_model:
                for i, m in enumerate(MEASURES):
                    assert math.isclose(shown[q][name][i], want[m][q], abs_tol=1e-12), f"report: {name} {m} {q}"
                expected = [[d, json_score(run[q][d])] for d in trec_ranking(run.get(q, {}))[:3]]
                assert tops[q]["top"][name] == expected, f"report: run {name}'s top 3 for query {q}"


def reference_fusion(runs: list[dict], method: str, weights: list[float], k: float = 60.0) -> dict:
    """Σ_r w_r / (k + rank_r(d)) (ranks in trec_eval's order), or Σ_r w_r · minmax_r(d) where a document a run
    did not retrieve takes that run's lowest normalised score."""
    out: dict[str, dict[str, float]] = {}
    for q in {q for r in runs for q in r}:
        fused: dict[str, float] = {}
        parts = [(w, r[q]) for r, w in zip(runs, weights) if r.get(q)]
        for w, docs in parts:
            if method == "rrf":
                for rank, d in enumerate(trec_ranking(docs), 1):
                    fused[d] = fused.get(d, 0.0) + w / (k + rank)
        if method == "wsum":
            normed = []
            for w, docs in parts:
                lo, hi = min(docs.values()), max(docs.values())
                normed.append((w, {d: (s - lo) / (hi - lo) if hi > lo else 1.0 for d, s in docs.items()}))
            for d in {d for _, n in normed for d in n}:
                fused[d] = sum(w * n.get(d, min(n.values())) for w, n in normed)
        out[q] = fused
    return out


@settings(max_examples=40, **BOUNDED)
@given(st.data(), st.sampled_from(["rrf", "wsum"]))
def test_fuse_agrees_with_a_reference_fusion(data, method):
    draw = data.draw
    models = [draw(run_models(False)) for _ in range(draw(st.integers(2, 3)))]
    weights = [draw(st.sampled_from([0.0, 0.5, 1.0, 2.0])) for _ in models]
    if method == "wsum":  # min-max normalisation cannot place an infinite score (fuse refuses it; tested elsewhere)
        models = [({q: [(d, s) for d, s in e if math.isfinite(float(s))] for q, e in m.items()},
                   [x for x in lines if math.isfinite(float(x[2]))]) for m, lines in models]
    with tempfile.TemporaryDirectory() as tmp:
        runs = [Run.read(write_run_file(Path(tmp) / f"{i}.run", lines, draw)) for i, (_, lines) in enumerate(models)]
        got = fuse(runs, method, "min-max", weights, depth=10**6)
        want = reference_fusion([meaning(m) for m, _ in models], method, weights)
        want = {q: docs for q, docs in want.items() if docs}
        assert set(got.ranking) == set(want)
        for q, docs in want.items():
            assert set(dict(got.ranking[q])) == set(docs)
            for d, s in got.ranking[q]:
                assert math.isclose(s, docs[d], rel_tol=1e-9, abs_tol=1e-12), f"{method}: query {q}, doc {d}"


def test_a_query_in_two_blocks_is_read_whole(tmp_path):
    """The reproduction of issue 37: query 1's lines in two blocks (``cat a.run b.run``); R@10 is 1, not 0.75."""
    run = tmp_path / "x.run"
    run.write_text("1 Q0 d1 1 2.0 r\n2 Q0 d9 1 1.0 r\n1 Q0 d2 2 1.5 r\n")
    qrels = tmp_path / "x.qrels"
    qrels.write_text("1 0 d1 1\n1 0 d2 1\n2 0 d9 1\n")
    assert as_lists(_fast(run)) == {"1": [("d1", 2.0), ("d2", 1.5)], "2": [("d9", 1.0)]}
    args = build_parser().parse_args(["eval", str(run), "--qrels", str(qrels), "-m", "R@10"])
    assert _read_runs(args, read_qrels(qrels))["x"].values["R@10"] == {"1": 1.0, "2": 1.0}
