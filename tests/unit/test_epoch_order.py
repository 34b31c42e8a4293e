"""The order a training epoch visits its queries: the plain shuffle, or batches balanced across sources."""

from __future__ import annotations

import random

from irglow.data.union import epoch_order, source_of


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
