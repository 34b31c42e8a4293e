"""Content digests (irglow.utils.digest)."""

from __future__ import annotations

from irglow.data.records import Qrel, Query


def test_query_digest_covers_ids_and_text():
    from irglow.utils.digest import qrels_digest, queries_digest

    base = [Query("1", "lemon tart"), Query("2", "x")]
    assert queries_digest(base) != queries_digest([Query("1", "lemon pie"), Query("2", "x")])
    assert queries_digest(base) != queries_digest([Query("01", "lemon tart"), Query("2", "x")])
    assert qrels_digest([Qrel("1", "d", 1), Qrel("2", "e", 0)]) == qrels_digest([Qrel("2", "e", 0), Qrel("1", "d", 1)])
    assert qrels_digest([Qrel("1", "d", 1)]) != qrels_digest([Qrel("1", "d", 2)])
