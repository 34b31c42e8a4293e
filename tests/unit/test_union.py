"""Several training sources as one collection (collection.train = ["a@train", "b@train"])."""

from __future__ import annotations

import math
import random

import pytest

from irglow.data.records import Qrel, Query, make_document
from irglow.data.union import UnionCollection, epoch_order, parse_sources, source_of


class _Coll:
    def __init__(self, name, fields, docs, queries, qrels):
        self.name, self.fields, self._d, self._q, self._r = name, fields, docs, queries, qrels

    def docs_iter(self):
        return iter(self._d)

    def queries(self, split):
        return self._q[split]

    def qrels(self, split):
        return self._r[split]


def test_sources_parse_from_lists_and_comma_strings():
    assert parse_sources("a@train,b@dev", "train") == [("a", "train"), ("b", "dev")]
    assert parse_sources(["../x@y/c@train", "d"], "train") == [("../x@y/c", "train"), ("d", "train")]
    assert parse_sources("solo", "dev") == [("solo", "dev")]
    # a demo spec's own options stay with it; a second source follows after its split
    assert parse_sources("demo:n_topics=12,docs_per_topic=4", "train") == [("demo:n_topics=12,docs_per_topic=4", "train")]
    assert parse_sources("demo:n_topics=3,seed=2@train,beir/x@dev", "t") == [("demo:n_topics=3,seed=2", "train"),
                                                                               ("beir/x", "dev")]
    with pytest.raises(ValueError, match="names no collection"):
        parse_sources(",", "train")


def test_union_keeps_every_source_apart_by_prefix():
    a = _Coll("a", ("title", "text"), [make_document("1", title="t", text="x")],
              {"train": [Query("1", "q a")], "test": [Query("9", "no")]}, {"train": [Qrel("1", "1", 1)]})
    b = _Coll("b", ("text", "url"), [make_document("1", text="y", url="u")],
              {"dev": [Query("1", "q b")]}, {"dev": [Qrel("1", "1", 2)]})
    u = UnionCollection([(a, "train"), (b, "dev")])
    assert u.fields == ("title", "text", "url")
    assert [d.doc_id for d in u.docs_iter()] == ["0/1", "1/1"]
    assert u.queries("train") == [Query("0/1", "q a"), Query("1/1", "q b")]
    assert u.qrels("train") == [Qrel("0/1", "0/1", 1), Qrel("1/1", "1/1", 2)]  # graded labels as given
    assert u.name.startswith("union-") and u.name != UnionCollection([(b, "dev"), (a, "train")]).name
    with pytest.raises(ValueError, match="has one split, 'train', not 'test'"):
        u.queries("test")
    with pytest.raises(ValueError, match="two sources or more"):
        UnionCollection([(a, "train")])


def test_validation_gives_every_source_one_vote():
    from irglow.data.union import mean_over_sources, source_of

    assert source_of("0/PLAIN-1") == "0" and source_of("12/x/y") == "12" and source_of("PLAIN-1") is None
    # source 0: (1 + 0 + 0.5) / 3 = 0.5, source 1: 0.2 → (0.5 + 0.2) / 2 = 0.35, not the plain mean 0.425
    assert mean_over_sources({"0/a": 1.0, "0/b": 0.0, "0/c": 0.5, "1/x": 0.2}) == pytest.approx(0.35)
    assert mean_over_sources({"a": 1.0, "b": 0.0, "c": 0.5, "x": 0.2}) == pytest.approx(0.425)  # one collection
    assert mean_over_sources({"0/a": 1.0, "b": 0.0}) == pytest.approx(0.5)  # not all union ids: plain mean
    assert mean_over_sources({"0/a": 1.0, "0/b": 0.0}) == pytest.approx(0.5)  # one source
    assert math.isnan(mean_over_sources({}))


def test_plain_order_is_the_seeded_shuffle_and_balanced_changes_nothing_without_sources():
    ids = ["a", "b", "c", "d", "e"]
    expected = list(range(5))
    random.Random(7).shuffle(expected)
    assert epoch_order(ids, 7) == expected
    assert epoch_order(ids, 7, balanced=True) == expected  # plain ids: one source
    assert epoch_order(["0/a", "0/b", "0/c"], 7, balanced=True) == epoch_order(["0/a", "0/b", "0/c"], 7)


def test_balanced_order_alternates_sources_and_stops_with_the_smallest():
    # source 0 has 2 queries (positions 0, 2), source 1 has 4 (positions 1, 3, 4, 5)
    ids = ["0/a", "1/w", "0/b", "1/x", "1/y", "1/z"]
    for seed in range(20):
        order = epoch_order(ids, seed, balanced=True)
        assert [source_of(ids[i]) for i in order] == ["0", "1", "0", "1"]  # 2 of each, taken in turn
        assert sorted(order[0::2]) == [0, 2]  # every query of the smallest source, once
        assert len(set(order[1::2])) == 2 and set(order[1::2]) <= {1, 3, 4, 5}
    # the larger source is drawn afresh with the seed: over seeds, all of its queries are used
    assert {i for seed in range(20) for i in epoch_order(ids, seed, balanced=True)[1::2]} == {1, 3, 4, 5}


def test_sources_are_taken_in_numeric_order():
    ids = [f"{s}/q" for s in (10, 2, 10, 2)]
    order = epoch_order(ids, 0, balanced=True)
    assert [ids[i].split("/")[0] for i in order] == ["2", "10", "2", "10"]
