"""Every measure irglow accepts, against ir_measures per query and over the queries, on generated files.

``test_evaluation_differential.py`` checks the file readers and the common measures; this one checks the measures
themselves: every measure and parameter ir_measures computes through pytrec_eval (trec_eval's own code), gdeval's
(``ERR@k``, ``nDCG(dcg='exp-log2')@k``), the msmarco provider's ``RR@k``, the judgment rate and irglow's NCG, with
``judged_only=True`` variants, ``--judged-only`` (trec_eval ``-J``), graded labels −1 … 3 and the count measures
(summed over the queries, as trec_eval sums them). The reference is ir_measures given what the files mean; where
trec_eval and ir_measures disagree, trec_eval's source decides and the difference is written down here:

- a query the run misses scores 0, NumQ counts it and NumRel its relevant documents (``trec_eval -c``: 3 for
  judged queries with 1 and 2 relevant documents and a run of the first only); ir_measures leaves such a query out;
- a negative label is "in the pool, not judged" (``form_res_rels.c``: ``RELVALUE_UNJUDGED``): never relevant,
  dropped by ``-J``, and told apart from an unpooled document by infAP alone — so the reference gives infAP the
  negative labels and every other measure the others, which trec_eval scores the same;
- a query whose every label is negative is scored as one with no judgment (trec_eval reads past its label counts),
  except that NumRet counts the documents it retrieved, as trec_eval 9.0.7 and 10 do (issue 80: ``0 0 x 1 / 1 0 a -1
  / 2 0 b 1`` with a run of ``0 x, 1 a, 1 c, 2 b`` gives NumRet 4).
"""

from __future__ import annotations

import itertools
import math
import tempfile
from pathlib import Path

import ir_measures
import pytest
from hypothesis import given, settings, strategies as st

from irglow.cli import build_parser
from irglow.commands.evaluate import _read_runs
from irglow.data.trec import read_qrels
from irglow.eval.compare import compare
from irglow.eval.measures import parse_measure, parse_measures, split_measures
from tests.unit.test_evaluation_differential import (BOUNDED, as_trec_eval_reads, meaning, qrels_models,
                                                     run_models, trec_ranking, write_qrels_file, write_run_file)

# pytrec_eval's measures, each parameter at more than one value (cutoffs small enough for the generated rankings)
PYTREC = [
    "P@1", "P@3", "P(rel=2)@2", "P(judged_only=True)@2", "P(rel=2,judged_only=True)@3",
    "RR", "RR(rel=2)", "RR(judged_only=True)",
    "Rprec", "Rprec(rel=2)", "Rprec(judged_only=True)",
    "AP", "AP@2", "AP(rel=2)", "AP(judged_only=True)@3", "AP(rel=3,judged_only=True)",
    "nDCG", "nDCG@2", "nDCG(judged_only=True)@2", "nDCG(judged_only=True)", "nDCG(gains={0:0,1:1,2:3,3:7})@3",
    "nDCG(dcg='log2',gains={1:2,2:1})",
    "R@2", "R@5", "R(judged_only=True)@2",
    "Bpref", "Bpref(rel=2)",
    "NumRet", "NumRet(rel=2)", "NumRelRet", "NumRel", "NumQ",
    "SetAP", "SetAP(rel=2,judged_only=True)",
    "SetF", "SetF(beta=0.5)", "SetF(rel=2,beta=2.0,judged_only=True)",
    "SetP", "SetP(relative=True)", "SetP(rel=2,judged_only=True)",
    "SetR", "SetR(rel=2)",
    "Success@1", "Success(rel=2)@3", "Success(judged_only=True)@2",
    "IPrec@0.0", "IPrec@0.5", "IPrec(judged_only=True)@0.2",
    "infAP", "infAP(rel=2)",
]
OTHERS = ["RR@2", "RR(rel=2)@3", "Judged@2", "ERR@3", "nDCG(dcg='exp-log2')@3", "NCG@3", "NCG"]
MEASURES = PYTREC + OTHERS
# the measures whose -J value ir_measures computes as a parameter: irglow's --judged-only column of each
CONDENSABLE = [m for m in PYTREC if "judged_only" not in m and not m.startswith(("Bpref", "Num", "SetR", "infAP"))]


NUMBERS = itertools.count(10**6)


def ir_measures_values(measures: list[str], run: dict, qrels: dict) -> dict[str, dict[str, float]]:
    """measure text → judged query → ir_measures' value, with the conventions of the module's docstring."""
    parsed = {m: ir_measures.parse_measure(m) for m in measures}
    out = {m: {q: missed(parsed[m], judged) for q, judged in qrels.items()} for m in measures}
    labelled = {q: judged for q, judged in qrels.items() if any(g >= 0 for g in judged.values())}
    scored = {q: {d: g for d, g in judged.items() if g >= 0} for q, judged in labelled.items()}
    for text, measure in parsed.items():
        # gdeval.pl reads numeric topic ids only, and trec_eval caches a query's ranking by its id: numbers new to
        # each call (pytrec_eval's evaluators for other parameters would share the cache)
        number = {q: str(next(NUMBERS)) for q in sorted(set(run) | set(qrels), reverse=True)}
        back = {n: q for q, n in number.items()}
        ranked = {number[q]: docs for q, docs in as_trec_eval_reads(run).items() if docs}
        given = labelled if measure.NAME in ("infAP", "Judged") else scored
        if measure.NAME == "Judged":
            given = qrels
        if measure.NAME in ("RR", "ERR", "Judged") or measure.NAME == "nDCG" and measure.params.get("dcg") == "exp-log2":
            # the msmarco, judged and gdeval providers order ties their own way: they get trec_eval's ranking as ranks
            ranking = {number[q]: {d: float(len(r) - i) for i, d in enumerate(r)}
                       for q, docs in run.items() if (r := trec_ranking(docs))}
        else:
            ranking = ranked
        numbered = {number[q]: judged for q, judged in given.items() if judged}
        for metric in ir_measures.iter_calc([measure], numbered, ranking):
            if back[metric.query_id] in out[text] and run.get(back[metric.query_id]):  # -c: a missed query is 0
                out[text][back[metric.query_id]] = float(metric.value)
        if measure.NAME == "NumRet" and measure.params.get("rel") is None:  # retrieved, whatever the labels
            for q in set(qrels) - set(labelled):
                out[text][q] = float(len(run.get(q) or {}))
    return out


def missed(measure, judged: dict) -> float:
    """A query the run misses, as ``trec_eval -c`` scores it (trec_eval.c fills every missed query from the qrels
    alone): NumQ 1, NumRel its judgments at or above the relevance level, everything else 0."""
    if measure.NAME == "NumQ":
        return 1.0
    if measure.NAME == "NumRel":
        return float(sum(g >= measure.params.get("rel", 1) for g in judged.values()))
    return 0.0


def ncg_by_hand(run: dict, qrels: dict, k: int | None) -> dict[str, float]:
    out = {}
    for q, judged in qrels.items():
        docs = trec_ranking(run.get(q, {}))
        gains = sorted((max(g, 0) for g in judged.values()), reverse=True)
        ideal = sum(gains[:k] if k else gains)
        got = sum(max(judged.get(d, 0), 0) for d in (docs[:k] if k else docs))
        out[q] = got / ideal if ideal > 0 and docs else 0.0
    return out


def reference(run: dict, qrels: dict) -> dict[str, dict[str, float]]:
    out = ir_measures_values([m for m in MEASURES if not m.startswith("NCG")], run, qrels)
    out["NCG@3"], out["NCG"] = ncg_by_hand(run, qrels, 3), ncg_by_hand(run, qrels, None)
    condensed = ir_measures_values([_judged_only(m) for m in CONDENSABLE], run, qrels)
    for m in CONDENSABLE:
        out[f"{m}'"] = condensed[_judged_only(m)]
    return out


def _judged_only(text: str) -> str:
    """``P@3`` → ``P(judged_only=True)@3``: the measure as ``trec_eval -J`` computes it."""
    name, _, cutoff = text.partition("@")
    if "(" in name:
        name = name[:-1] + ",judged_only=True)"
    else:
        name += "(judged_only=True)"
    return f"{name}@{cutoff}" if cutoff else name


def check(values: dict, want: dict, what: str) -> None:
    for m, per_query in want.items():
        key = m if m in values else str(parse_measure(m.rstrip("'"))) + ("'" if m.endswith("'") else "")
        for q, value in per_query.items():
            same_nan = math.isnan(value) and math.isnan(values[key][q])  # trec_eval's 0/0 (IPrec of an empty -J list)
            assert same_nan or math.isclose(values[key][q], value, rel_tol=1e-9, abs_tol=1e-12), \
                f"{what}: {m} of query {q}: irglow {values[key][q]!r}, reference {value!r}"


@settings(max_examples=25, **BOUNDED)
@given(st.data())
def test_every_measure_agrees_with_ir_measures(data):
    draw = data.draw
    model, lines = draw(run_models(False))
    qrels_model = draw(qrels_models())
    run = meaning(model)
    with tempfile.TemporaryDirectory() as tmp:
        run_path = write_run_file(Path(tmp) / "a.run", lines, draw)
        qrels_path = write_qrels_file(Path(tmp) / "q.qrels", qrels_model, draw)
        qrels = read_qrels(qrels_path)
        args = build_parser().parse_args(["eval", str(run_path), "--qrels", str(qrels_path), "--judged-only",
                                          *[a for m in MEASURES for a in ("-m", m)]])
        evaluated = _read_runs(args, qrels)["a"]
        want = reference(run, qrels_model)
        check(evaluated.values, want, "eval")
        if not set(run) & set(qrels_model):  # an error (trec_eval's exit 7), not a table: test_evaluation_differential
            return
        table = compare({"a": evaluated}, qrels, MEASURES, judged_only=True)
        for m in MEASURES:
            measure = parse_measure(m)
            got = table.means.loc["a", str(measure)]
            values = list(want[m].values())
            total = sum(values) if m.startswith("Num") else sum(values) / len(values)
            assert (math.isnan(got) and math.isnan(total)) or math.isclose(got, total, rel_tol=1e-9, abs_tol=1e-12), \
                f"{m}: {got} against {total}"
            if m in ("NumRet", "NumRet(rel=2)", "NumRelRet"):  # ir_measures' own sum over the queries both hold (NumQ
                # and NumRel also count the queries the run misses, as trec_eval -c does)
                aggregate = ir_measures.calc_aggregate([measure], [q for q in _qrels_list(qrels_model) if q[2] >= 0],
                                                       {q: d for q, d in as_trec_eval_reads(run).items() if d})
                # ir_measures is not given a query judged with negative labels only: its retrieved documents added
                extra = sum(len(run.get(q) or {}) for q, judged in qrels_model.items()
                            if judged and not any(g >= 0 for g in judged.values())) if m == "NumRet" else 0
                assert math.isclose(got, aggregate.get(measure, 0.0) + extra, abs_tol=1e-9), m


def _qrels_list(model: dict) -> list:
    return [ir_measures.Qrel(q, d, g) for q, judged in model.items() for d, g in judged.items()]


# -- the reproductions of issue 50, worked out by hand -----------------------------------------------------------

def _eval(tmp_path, run: str, qrels: str, *args: str) -> dict:
    (tmp_path / "x.run").write_text(run)
    (tmp_path / "x.qrels").write_text(qrels)
    parsed = build_parser().parse_args(["eval", str(tmp_path / "x.run"), "--qrels", str(tmp_path / "x.qrels"), *args])
    return {m: v["1"] for m, v in _read_runs(parsed, read_qrels(tmp_path / "x.qrels"))["x"].values.items()}


def test_infap_reads_minus_one_as_pooled_and_unjudged(tmp_path):
    """r1, u, r2 with u labelled −1: u is in the pool, unjudged; infAP's estimate sees two relevant of two judged
    at ranks 1 and 3, both precisions 1 → 1.0 less trec_eval's 1e-5 smoothing (it was 0.8333: u read as
    non-relevant, (1 + 2/3) / 2)."""
    got = _eval(tmp_path, "1 Q0 r1 1 3 r\n1 Q0 u 2 2 r\n1 Q0 r2 3 1 r\n", "1 0 r1 1\n1 0 u -1\n1 0 r2 1\n",
                "-m", "infAP")
    assert got["infAP"] == pytest.approx(1.0, abs=1e-5)


def test_judged_only_measure_is_cut_after_condensing(tmp_path):
    """u1, u2 unjudged above a: condensed to [a], nDCG@2 is 1 (cut first, the top 2 held nothing judged: 0)."""
    got = _eval(tmp_path, "1 Q0 u1 1 5 r\n1 Q0 u2 2 4 r\n1 Q0 a 3 3 r\n", "1 0 a 1\n1 0 b 0\n",
                "-m", "nDCG(judged_only=True)@2")
    assert got["nDCG(judged_only=True)@2"] == 1.0


def test_judged_only_drops_minus_one_documents(tmp_path):
    """trec_eval -J drops p (label −1) like an unjudged document: a is first, P@1' = 1 (p kept: 0)."""
    got = _eval(tmp_path, "1 Q0 p 1 5 r\n1 Q0 a 2 4 r\n", "1 0 p -1\n1 0 a 1\n1 0 b 0\n", "-m", "P@1",
                "--judged-only")
    assert (got["P@1"], got["P@1'"]) == (0.0, 1.0)


def test_counts_are_summed_over_queries(tmp_path):
    """Query 1 retrieves a (relevant) and b, query 2 retrieves a (its relevant is b), query 3 is missed: NumRet
    2 + 1 = 3, NumRel 1 + 1 + 1 = 3 (query 3's relevant document counts: trec_eval -c fills a missed query from the
    qrels), NumRelRet 1, NumQ 3 (every judged query, -c); AP averages (1 + 0 + 0) / 3."""
    (tmp_path / "c.run").write_text("1 Q0 a 1 3 r\n1 Q0 b 2 2 r\n2 Q0 a 1 3 r\n")
    (tmp_path / "c.qrels").write_text("1 0 a 1\n2 0 b 1\n3 0 a 1\n")
    qrels = read_qrels(tmp_path / "c.qrels")
    args = build_parser().parse_args(["eval", str(tmp_path / "c.run"), "--qrels", str(tmp_path / "c.qrels"),
                                      "-m", "NumRet NumRel NumRelRet NumQ AP"])
    table = compare(_read_runs(args, qrels), qrels, "NumRet NumRel NumRelRet NumQ AP")
    assert table.means.loc["c"].to_dict() == {"NumRet": 3.0, "NumRel": 3.0, "NumRet(rel=1)": 1.0, "NumQ": 3.0,
                                              "AP": pytest.approx(1 / 3)}
    assert table.to_markdown().splitlines()[2].split("|")[2:6] == [" 3        ", " 3        ", " 1               ",
                                                                   " 3      "]


def test_gdeval_measures_take_any_query_id(tmp_path):
    """gdeval.pl reads numeric topics only; irglow numbers the queries for it: ERR@10 of one relevant (label 1) at
    rank 1 is (2^1 − 1) / 2^4 = 0.0625 (gdeval's top grade is 4), for query id "a-b"."""
    (tmp_path / "g.run").write_text("a-b Q0 r1 1 3 r\n")
    (tmp_path / "g.qrels").write_text("a-b 0 r1 1\n")
    args = build_parser().parse_args(["eval", str(tmp_path / "g.run"), "--qrels", str(tmp_path / "g.qrels"),
                                      "-m", "ERR@10"])
    assert _read_runs(args, read_qrels(tmp_path / "g.qrels"))["g"].values["ERR@10"] == {"a-b": 0.0625}


@pytest.mark.parametrize("text, message", [
    ("P(rel=0)@5", "rel must be a whole number >= 1"),
    ("Accuracy", "is not computed here"),
    ("RR(judged_only=True)@10", "is not computed here"),
    ("IPrec@2.0", "recall level r from 0 to 1"),
    ("SetF(beta=2)", "invalid param beta"),
    ("nDCG@0", "cutoff must be a whole number"),
])
def test_measures_not_computed_exactly_are_refused(text, message):
    with pytest.raises(ValueError, match=message):
        parse_measure(text)


def test_measures_with_commas_in_their_parameters_split_whole():
    assert split_measures("nDCG@10 P(rel=2,judged_only=True)@5, AP") == \
        ["nDCG@10", "P(rel=2,judged_only=True)@5", "AP"]
    assert [str(m) for m in parse_measures("SetF(rel=2,beta=0.5) RR")] == ["SetF(rel=2,beta=0.5)", "RR"]
