"""The ir_datasets loader, offline: a tiny BEIR-layout zip placed where ir_datasets keeps its download."""

import json
import os
import subprocess
import sys
import textwrap
import zipfile


def test_irds_beir_collection_fields_queries_qrels(tmp_path):
    home = tmp_path / "irds"
    target = home / "beir" / "scifact" / "source.zip"
    target.parent.mkdir(parents=True)
    corpus = [{"_id": "d1", "title": "Café title", "text": "first body", "metadata": {}},
              {"_id": "d2", "title": "", "text": "second body", "metadata": {}}]
    with zipfile.ZipFile(target, "w") as zf:
        zf.writestr("scifact/corpus.jsonl", "".join(json.dumps(d) + "\n" for d in corpus))
        zf.writestr("scifact/queries.jsonl", json.dumps({"_id": "q1", "text": "a claim", "metadata": {}}) + "\n")
        zf.writestr("scifact/qrels/test.tsv", "query-id\tcorpus-id\tscore\nq1\td2\t1\n")
        zf.writestr("scifact/qrels/train.tsv", "query-id\tcorpus-id\tscore\n")
    code = textwrap.dedent("""
        from irglow.data.collection import load_collection
        c = load_collection("beir/scifact")
        docs = list(c.docs_iter())
        print(c.fields, [(d.doc_id, sorted(d.fields)) for d in docs], docs[0].fields["title"])
        print(c.queries("test"), c.qrels("test"))
        from irglow.data.docstore import docs_store
        store = docs_store(c)  # ir_datasets' own docs_store(): the documents docs_iter gives, by id
        assert store.get_many(["d2", "d1"]) == [docs[1], docs[0]] and list(store.sequence()) == docs
        assert "d3" not in store and len(store) == 2
        # ir_datasets' docstore is opened once per process, not at every read (each opening logs a line)
        fresh, opened = load_collection("beir/scifact"), []
        dataset = fresh._dataset()
        real = dataset.docs_store
        dataset.docs_store = lambda: opened.append(1) or real()
        fresh._dataset = lambda split=None: dataset
        again = docs_store(fresh)
        assert [again[d].doc_id for d in ("d1", "d2", "d1")] == ["d1", "d2", "d1"], again
        assert len(opened) == 1, opened
    """)
    env = dict(os.environ, IR_DATASETS_HOME=str(home))
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, env=env, timeout=120)
    assert out.returncode == 0, out.stderr[-1500:]
    first, second = out.stdout.strip().splitlines()[-2:]
    assert first == "('title', 'text') [('d1', ['text', 'title']), ('d2', ['text'])] ('Café title',)"
    assert "Query(query_id='q1', text='a claim')" in second and "doc_id='d2', relevance=1" in second
