"""Issue 39 item 1: topic clusters of the queries' MiniLM embeddings (the shipped checkpoint, offline), and what the
pipeline's results page gets from the index and the encoder."""

from __future__ import annotations

import pytest


@pytest.mark.pretrained
def test_clusters_separate_topics_and_are_the_same_each_time():
    from irglow.dense.clusters import query_clusters

    texts = {"v1": "vitamin d deficiency in children", "v2": "vitamin d supplements and bone density",
             "v3": "low vitamin d levels in elderly people", "v4": "vitamin d intake during pregnancy",
             "c1": "electric car battery range in winter", "c2": "charging electric cars at home",
             "c3": "battery degradation of electric cars", "c4": "electric car sales in europe"}
    first = query_clusters(texts, k=2)
    assert first == query_clusters(texts, k=2)  # seeded k-means
    assert len({first[q] for q in ("v1", "v2", "v3", "v4")}) == 1
    assert len({first[q] for q in ("c1", "c2", "c3", "c4")}) == 1 and first["v1"] != first["c1"]
    assert "vitamin" in first["v1"] and ("electric" in first["c1"] or "car" in first["c1"])
    assert query_clusters({"a": "x", "b": "y"}) == {}  # too few queries to group


def test_report_analysis_gives_the_page_its_matcher_and_clusters(demo_index):
    from irglow.data.demo import DemoCollection
    from irglow.index.stats import CollectionStats
    from irglow.models.explain import report_analysis

    queries = {q.query_id: q.text for q in DemoCollection().queries("test")}
    extras = report_analysis(demo_index, CollectionStats.load(demo_index), queries, clusters=3)
    assert set(extras) == {"matcher", "clusters", "cluster_source"}
    assert set(extras["clusters"]) == set(queries) and len(set(extras["clusters"].values())) == 3
    assert "all-MiniLM-L6-v2" in extras["cluster_source"]
    assert report_analysis(None, None, queries, clusters=0) == {}
