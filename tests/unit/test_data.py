import re
import hashlib
import json

import pytest

from irglow.data.beir import BeirCollection
from irglow.data.collection import load_collection
from irglow.data.demo import DemoCollection, DemoConfig
from irglow.data.records import make_document


def _digest(coll) -> str:
    h = hashlib.sha1()
    for d in coll.docs_iter():
        h.update(json.dumps([d.doc_id, d.fields], sort_keys=True).encode())
    return h.hexdigest()


def test_demo_is_deterministic_multifield_and_graded():
    small = DemoConfig(n_topics=20, docs_per_topic=6, n_roundups=20, n_background=10)
    a, b = DemoCollection(small), DemoCollection(small)
    assert _digest(a) == _digest(b)
    docs = list(a.docs_iter())
    assert len(docs) == 20 * 6 + 20 + 10 + 2
    assert any(len(d.fields.get("anchor", ())) > 1 for d in docs)  # multi-instance anchors
    assert any("title" not in d.fields for d in docs)  # missing fields
    assert any(any(ord(ch) > 127 for ch in d.text("title") + d.text("body")) for d in docs)  # unicode
    assert max(len(d.text("body").split()) for d in docs) > 5000  # an over-long page
    grades = {q.relevance for q in a.qrels("train")}
    assert grades == {0, 1, 2}
    train, test = {q.query_id for q in a.queries("train")}, {q.query_id for q in a.queries("test")}
    assert train and test and not train & test
    with pytest.raises(KeyError, match="splits"):
        a.queries("dev")


def test_demo_spec_overrides():
    c = load_collection("demo:n_topics=10,docs_per_topic=3")
    assert c.config.n_topics == 10 and c.config.docs_per_topic == 3


def test_make_document_missing_and_multi_instance():
    d = make_document("x", title=None, body="  ", anchor=["a one", "", "a two"], url="u")
    assert set(d.fields) == {"anchor", "url"}
    assert d.text("anchor") == "a one\na two" and d.text("title") == ""
    assert d.contents(["title", "url", "anchor"]) == "u\na one\na two"


def test_beir_folder_every_string_field(tmp_path):
    (tmp_path / "qrels").mkdir()
    (tmp_path / "corpus.jsonl").write_text(
        json.dumps({"_id": "1", "title": "T", "text": "body", "url": "http://x", "authors": ["A", "B"],
                    "metadata": {"year": 2000}}) + "\n" + json.dumps({"_id": "2", "text": "only text"}) + "\n")
    (tmp_path / "queries.jsonl").write_text(json.dumps({"_id": "q1", "text": "query"}) + "\n"
                                            + json.dumps({"_id": "q2", "text": "unjudged"}) + "\n")
    (tmp_path / "qrels" / "test.tsv").write_text("query-id\tcorpus-id\tscore\nq1\t1\t1\n")
    c = load_collection(str(tmp_path))
    assert isinstance(c, BeirCollection)
    assert c.fields == ("title", "text", "url", "authors")
    docs = list(c.docs_iter())
    assert docs[0].fields["authors"] == ("A", "B") and "title" not in docs[1].fields
    assert [q.query_id for q in c.queries("test")] == ["q1"] and c.splits == ("test",)
    with pytest.raises(KeyError, match="no qrels for split 'dev'"):
        c.qrels("dev")


def test_unknown_dataset_names_close_matches():
    from irglow.data.irds import UnknownDatasetError

    with pytest.raises(UnknownDatasetError, match="beir/scifact"):
        load_collection("beir/scifakt/test")


def test_misspelt_split_and_demo_setting_are_named_before_any_work():
    from irglow.data.irds import UnknownDatasetError, resolve_id

    assert resolve_id("beir/scifact", "test") == "beir/scifact/test"
    assert resolve_id("beir/scifact/test", "test") == "beir/scifact/test"
    with pytest.raises(UnknownDatasetError, match="no split 'tset' \\(did you mean 'test'\\?\\); its splits: test, train"):
        resolve_id("beir/scifact", "tset")
    with pytest.raises(ValueError, match="unknown setting 'foo'.*known: seed, n_topics"):
        load_collection("demo:foo=1")
    with pytest.raises(ValueError, match="n_topics='many' is not a int"):
        load_collection("demo:n_topics=many")
    assert load_collection("demo:n_topics=3").config.n_topics == 3


@pytest.mark.parametrize("spec, message", [
    ("demo:name_pool=2,n_topics=5", "name_pool=2 gives 4 distinct name pairs, fewer than n_topics=5; raise name_pool "
                                    "to at least 3"),
    ("demo:name_pool=1", "name_pool=1 gives 1 distinct name pairs, fewer than n_topics=200"),
    ("demo:n_topics=0", "n_topics=0 must be an integer >= 1"),
    ("demo:test_fraction=nan", "test_fraction=nan must be a number between 0 and 1"),
    ("demo:test_fraction=1.5", "test_fraction=1.5 must be a number between 0 and 1"),
    ("demo:n_topics=2", "roundup pages cover 3 topics"),
    ("demo:n_topics=1,n_roundups=0", "test_fraction=0.25 of n_topics=1 leaves no test topic"),
    ("demo:n_topics=3,test_fraction=0.9", "leaves no training topic"),
])
def test_impossible_demo_specs_are_refused_before_generating(spec, message):
    """Issue 59.13: name_pool=2,n_topics=5 looped forever looking for a fifth distinct name pair."""
    with pytest.raises(ValueError, match=r"^demo collection: .*" + re.escape(message)):
        load_collection(spec)


def test_demo_name_holds_every_generator_setting():
    from irglow.data.collection import load_collection

    names = {load_collection(spec).name for spec in
             ("demo", "demo:name_pool=40", "demo:test_fraction=0.5", "demo:queries_per_topic=3")}
    assert len(names) == 4
    assert load_collection("demo:name_pool=36").name == load_collection("demo").name  # 36 is the default
