"""Issue 40 item 2: Lucene's hits as one packed array (irglow.BulkSearch.packOrdered's layout), read as it is."""

from __future__ import annotations

import struct

import numpy as np
import pytest

from irglow.runs.packed import PackedRanking, Segment
from irglow.runs.trec import Run


def _packed(hits: list[list[tuple[int, float]]], extra: list[int] | None = None) -> bytes:
    """[queries] [offsets] [doc numbers] [float32 scores] [extra], little-endian, as the Java side writes it."""
    offsets, at = [], 0
    for h in hits:
        offsets.append(at)
        at += len(h)
    offsets.append(at)
    docs = [d for h in hits for d, _ in h]
    scores = [s for h in hits for _, s in h]
    extra = extra or [0] * len(hits)
    return struct.pack(f"<i{len(offsets)}i{len(docs)}i{len(scores)}f{len(extra)}i", len(hits), *offsets, *docs,
                       *scores, *extra)


NAMES = np.array(["a", "b", "c", "d"], dtype=object)


def test_a_segment_reads_the_layout_by_hand():
    seg = Segment(_packed([[(2, 3.5), (0, 1.25)], [], [(3, 2.0)]], extra=[2, 0, 1]))
    assert len(seg) == 3 and seg.offsets.tolist() == [0, 2, 2, 3]
    assert seg.docs.tolist() == [2, 0, 3] and seg.scores.tolist() == [3.5, 1.25, 2.0] and seg.extra.tolist() == [2, 0, 1]


def test_queries_become_pairs_when_read_and_keep_the_given_order():
    ranking = PackedRanking(NAMES)
    ranking.add(["q2", "q1"], _packed([[(1, 0.5)], [(3, 2.0), (0, 2.0)]]))
    assert list(ranking) == ["q2", "q1"] and len(ranking) == 2 and "q1" in ranking and "q9" not in ranking
    assert ranking.assigned() == []  # nothing converted yet
    assert ranking["q1"] == [("d", 2.0), ("a", 2.0)] and ranking.assigned() == ["q1"]
    with pytest.raises(KeyError):
        ranking["q9"]
    ranking["q3"] = [("b", 1.0)]
    assert dict(ranking.items()) == {"q2": [("b", 0.5)], "q1": [("d", 2.0), ("a", 2.0)], "q3": [("b", 1.0)]}
    view = ranking.reordered(["q3", "q1", "qX"])
    assert list(view) == ["q3", "q1", "qX"] and view["qX"] == [] and view["q1"] == [("d", 2.0), ("a", 2.0)]
    with pytest.raises(ValueError, match="2 queries for 1"):
        ranking.add(["only"], _packed([[], []]))


def test_a_run_over_packed_hits_keeps_their_order_and_sorts_only_what_was_assigned():
    ranking = PackedRanking(NAMES)
    # packed hits are trusted to be in trec_eval's order already: Run does not sort them again
    ranking.add(["q1"], _packed([[(0, 1.0), (1, 1.0)]]))
    ranking["q2"] = [("a", 1.0), ("c", 1.0)]  # assigned: sorted as any run (ties by id descending)
    run = Run(ranking, "t")
    assert run.ranking["q1"] == [("a", 1.0), ("b", 1.0)] and run.ranking["q2"] == [("c", 1.0), ("a", 1.0)]
    assert len(run) == 2
