"""Issue 61.1: the pipeline runs its units in the order of the plan's graph — each after the units making the parts
of its nodes, matched as objects — and refuses nodes that are parts of each other, naming them."""

from __future__ import annotations

from types import SimpleNamespace

import pytest

from irglow.pipeline import run_order
from irglow.rankers import Fusion, Lexical, NRMF, Rerank


def _unit(name, *writes):
    return None, SimpleNamespace(name=name, writes=writes)


def test_units_run_after_the_units_making_their_parts():
    bm25, bm25f = Lexical("bm25"), Lexical("bm25f")
    hybrid = Fusion([bm25, bm25f])
    reranked = Rerank(hybrid, NRMF(), name="nrmf(bm25+bm25f)")
    # ``all``'s node fuses every run: its unit waits for the units making what it fuses (pipeline._among)
    graph = {"bm25": bm25, "bm25f": bm25f, "bm25+bm25f": hybrid, "nrmf(bm25+bm25f)": reranked, "all": Fusion(["all"])}
    units = [_unit("rerank", "nrmf(bm25+bm25f)"), _unit("lexical:bm25", "bm25"), _unit("all", "all"),
             _unit("fusion", "bm25+bm25f"), _unit("lexical:bm25f", "bm25f")]
    assert [u.name for _, u in run_order(units, graph)] == ["lexical:bm25", "lexical:bm25f", "fusion", "rerank",
                                                            "all"]
    # an equal node that is not the graph's own is no edge (the graph's objects are): with a copy of the fusion
    # neither it nor the re-ranking of the original waits, and the units keep the order given
    copy = {**graph, "bm25+bm25f": Fusion([Lexical("bm25"), Lexical("bm25f")])}
    without_all = [u for u in units if u[1].name != "all"]
    assert [u.name for _, u in run_order(without_all, copy)] == ["rerank", "lexical:bm25", "fusion", "lexical:bm25f"]


def test_nodes_made_of_each_other_are_refused_naming_them():
    a = Rerank(Lexical("bm25"), NRMF(), name="a")
    b = Rerank(a, NRMF(), name="b")
    object.__setattr__(a, "first", b)  # a graph a configuration cannot bind (irglow.plan refuses it): forced here
    with pytest.raises(RuntimeError, match=r"rerank:a reads \['b'\]; rerank:b reads \['a'\]"):
        run_order([_unit("rerank:a", "a"), _unit("rerank:b", "b")], {"a": a, "b": b})
