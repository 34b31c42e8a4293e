"""Issue 21, without Lucene: every reproduction of a silently wrong or unclear result, pinned."""

from __future__ import annotations

import gzip
import json
import logging
import os
from pathlib import Path

import pytest

from irglow.cli import main
from irglow.data.records import Qrel, Query
from irglow.data.trec import FormatError, read_qrels, read_topics
from irglow.runs.trec import Run


def _beir(folder, corpus_lines, queries=None, qrels="q1\td1\t1\n"):
    folder.mkdir(parents=True, exist_ok=True)
    (folder / "corpus.jsonl").write_text("".join(line + "\n" for line in corpus_lines))
    (folder / "queries.jsonl").write_text("".join(json.dumps(q) + "\n" for q in (queries or [{"_id": "q1", "text": "x"}])))
    (folder / "qrels").mkdir(exist_ok=True)
    (folder / "qrels" / "test.tsv").write_text("query-id\tcorpus-id\tscore\n" + qrels)
    return folder


# 2 — the index cache keys on content, not on path, size and mtime
def test_beir_name_changes_with_content_even_when_size_and_mtime_are_kept(tmp_path):
    from irglow.data.beir import BeirCollection

    folder = _beir(tmp_path / "c", ['{"_id": "d1", "text": "lemon tart"}'])
    corpus = folder / "corpus.jsonl"
    before, stat = BeirCollection(folder).name, corpus.stat()
    corpus.write_text(corpus.read_text().replace("lemon", "zebra"))  # same size
    os.utime(corpus, ns=(stat.st_atime_ns, stat.st_mtime_ns))  # as cp -p, rsync -a, tar do
    assert corpus.stat().st_size == stat.st_size and corpus.stat().st_mtime_ns == stat.st_mtime_ns
    assert BeirCollection(folder).name != before
    corpus.write_text(corpus.read_text().replace("zebra", "lemon"))
    assert BeirCollection(folder).name == before  # the same content is the same collection


def test_demo_name_holds_every_generator_setting():
    from irglow.data.collection import load_collection

    names = {load_collection(spec).name for spec in
             ("demo", "demo:name_pool=40", "demo:test_fraction=0.5", "demo:queries_per_topic=3")}
    assert len(names) == 4
    assert load_collection("demo:name_pool=36").name == load_collection("demo").name  # 36 is the default


# 5 — duplicate query ids
@pytest.mark.parametrize("name,text,line", [
    ("q.tsv", "1\tfirst\n2\tsecond\n1\tthird\n", 3),
    ("queries.jsonl", '{"_id": "1", "text": "a"}\n{"_id": "1", "text": "b"}\n', 2),
])
def test_duplicate_query_ids_stop_with_both_lines(tmp_path, name, text, line):
    (tmp_path / name).write_text(text)
    with pytest.raises(FormatError, match=rf"{name}:{line}: duplicate query id '1' \(first on line 1\)"):
        read_topics(tmp_path / name)


def test_duplicate_trec_topic_numbers_stop(tmp_path):
    (tmp_path / "t.txt").write_text("<top><num> 301 <title> a </top>\n<top><num> 301 <title> b </top>\n")
    with pytest.raises(FormatError, match="duplicate topic number '301'"):
        read_topics(tmp_path / "t.txt")


# 6 — lossless scores
def test_written_run_reads_back_with_the_same_scores_and_order(tmp_path):
    import random

    rng = random.Random(7)
    # scores that six decimals would tie (a 0.05/0.95 fusion of deep runs produces such pairs)
    ranking = {f"q{i}": [(f"d{j}", 0.5 + rng.random() * 1e-7) for j in range(200)] for i in range(3)}
    ranking["q0"] += [("e1", 1e-300), ("e2", -0.0), ("e3", 123456789.123456789), ("e4", float("inf"))]
    run = Run(ranking, "t")
    back = Run.read(run.write(tmp_path / "a.run"))
    assert back.ranking == run.ranking


def test_fused_run_keeps_its_order_through_the_file(tmp_path):
    from irglow.runs.fusion import fuse

    a = Run({"q": [(f"d{j}", 1000.0 - j) for j in range(1000)]}, "a")
    b = Run({"q": [(f"d{j}", float(j % 7)) for j in range(1000)]}, "b")
    fused = fuse([a, b], "wsum", weights=[0.05, 0.95], tag="f")
    assert Run.read(fused.write(tmp_path / "f.run")).ranking == fused.ranking


# 4 — one naming rule for eval and compare
def test_eval_keeps_runs_with_the_same_file_name_apart(tmp_path, capsys):
    qrels = tmp_path / "q.qrels"
    qrels.write_text("q1 0 d1 1\n")
    for sub, doc in (("a", "d1"), ("b", "d9")):
        (tmp_path / sub).mkdir()
        Run({"q1": [(doc, 1.0)]}, sub).write(tmp_path / sub / "sys.run")
    assert main(["eval", str(tmp_path / "a" / "sys.run"), str(tmp_path / "b" / "sys.run"), "--qrels", str(qrels),
                 "-m", "RR@10", "--format", "csv"]) == 0
    rows = [r for r in capsys.readouterr().out.splitlines()[1:] if r]
    assert [r.split(",")[:2] for r in rows] == [[str(tmp_path / "a" / "sys"), "1.0"], [str(tmp_path / "b" / "sys"), "0.0"]]


# 9 — measure cutoffs
@pytest.mark.parametrize("text", ["NCG@0", "nDCG@0", "R@1000000000000000000000"])
def test_bad_cutoffs_are_refused_with_the_measure(text):
    from irglow.eval.measures import parse_measure

    with pytest.raises(ValueError, match=rf"measure '{text}': the cutoff must be a whole number from 1"):
        parse_measure(text)


def test_eval_cli_names_a_bad_measure(tmp_path, capsys):
    (tmp_path / "q.qrels").write_text("q1 0 d1 1\n")
    Run({"q1": [("d1", 1.0)]}).write(tmp_path / "a.run")
    assert main(["eval", str(tmp_path / "a.run"), "--qrels", str(tmp_path / "q.qrels"), "-m", "nDCG@0"]) == 2
    assert "nDCG@0" in capsys.readouterr().err


# 10 — query ids shared with the qrels
def test_zero_padded_query_ids_are_named(caplog):
    from irglow.eval.compare import compare

    qrels = [Qrel(str(i), "d1", 1) for i in range(1, 6)]
    padded = Run({f"0{i}": [("d1", 1.0)] for i in range(1, 6)}, "padded")
    # sharing no query is an error (issue 37 item 9: an all-zero row is no result), still naming the cause
    with pytest.raises(ValueError, match="shares 0 of its 5 query ids.*leading zeros"):
        compare({"padded": padded}, qrels, ["RR@10"])
    other = Run({f"x{i}": [("d1", 1.0)] for i in range(1, 6)}, "other")
    with pytest.raises(ValueError, match="another split"):
        compare({"other": other}, qrels, ["RR@10"])
    few = Run({"01": [("d1", 1.0)], "02": [("d1", 1.0)], "1": [("d1", 1.0)]}, "few")  # shares some: a warning
    with caplog.at_level(logging.WARNING):
        assert "leading zeros" in compare({"few": few}, qrels, ["RR@10"]).caption()
    fine = Run({str(i): [("d1", 1.0)] for i in range(1, 4)}, "fine")
    assert "Warning" not in compare({"fine": fine}, qrels, ["RR@10"]).caption()


# 12 — corpus oddities
@pytest.mark.parametrize("line,message", [
    ('{"_id": null, "text": "a"}', "document id must be a string or an integer, not None"),
    ('{"_id": true, "text": "a"}', "not True"),
    ('{"_id": 2.0, "text": "a"}', "not 2.0"),
    ('[{"_id": "d1", "text": "a"}]', "expected one JSON object per line"),
    ('{"text": "a"}', "no '_id'"),
    ('{"_id": "' + "x" * 40000 + '", "text": "a"}', "Lucene's limit for an indexed term is 32766"),
])
def test_corpus_records_that_would_be_mangled_are_refused_by_line(tmp_path, line, message):
    from irglow.data.beir import BeirCollection

    folder = _beir(tmp_path / "c", ['{"_id": "d0", "text": "fine"}', line])
    with pytest.raises(FormatError, match="corpus.jsonl:2: ") as e:
        list(BeirCollection(folder).docs_iter())
    assert message in str(e.value)


def test_integer_ids_are_kept_and_non_text_fields_counted(tmp_path, caplog):
    from irglow.data.beir import BeirCollection

    folder = _beir(tmp_path / "c", ['{"_id": 7, "text": "a", "year": 2001}', '{"_id": "d8", "text": "b", "year": 1999}',
                                    '{"_id": "d9", "text": "c", "meta": {"k": 1}}'])
    with caplog.at_level(logging.WARNING):
        docs = list(BeirCollection(folder).docs_iter())
    assert [d.doc_id for d in docs] == ["7", "d8", "d9"] and all(set(d.fields) == {"text"} for d in docs)
    assert "field 'year' is not text in 2 records" in caplog.text and "field 'meta' is not text in 1 records" in caplog.text


# Crashes and unclear errors
def test_config_base_cycles_and_relative_paths(tmp_path):
    from irglow.config import load_config

    (tmp_path / "sub").mkdir()
    (tmp_path / "sub" / "a.toml").write_text('base = "b.toml"\n[lexical]\ndepth = 10\n')
    (tmp_path / "sub" / "b.toml").write_text('[lexical]\nk1 = 1.2\ndepth = 5\n')
    assert load_config(tmp_path / "sub" / "a.toml")["lexical"] == {"k1": 1.2, "depth": 10}  # beside a.toml
    (tmp_path / "self.toml").write_text('base = "self.toml"\n')
    with pytest.raises(ValueError, match="cycle"):
        load_config(tmp_path / "self.toml")
    (tmp_path / "x.toml").write_text('base = "y.toml"\n')
    (tmp_path / "y.toml").write_text('base = "x.toml"\n')
    with pytest.raises(ValueError, match="cycle"):
        load_config(tmp_path / "x.toml")
    (tmp_path / "bad.toml").write_text("[lexical\n")
    with pytest.raises(ValueError, match="bad.toml: not valid TOML"):
        load_config(tmp_path / "bad.toml")


@pytest.mark.parametrize("args,message", [
    (["--step", "0"], "weight grid step"), (["--step", "2"], "weight grid step"),
    (["--k", "-1"], "RRF constant"), (["--depth", "-1"], "argument --depth: -1 must be >= 1"),
    (["--depth", "0"], "argument --depth: 0 must be >= 1"),
])
def test_fuse_refuses_settings_that_would_divide_by_zero_or_drop_documents(tmp_path, capsys, args, message):
    Run({"q": [("d1", 1.0), ("d2", 0.5)]}).write(tmp_path / "a.run")
    Run({"q": [("d2", 1.0)]}).write(tmp_path / "b.run")
    (tmp_path / "q.qrels").write_text("q 0 d1 1\n")
    extra = ["--tune-runs", str(tmp_path / "a.run"), str(tmp_path / "b.run"), "--tune-qrels",
             str(tmp_path / "q.qrels")] if "--step" in args else []
    try:
        rc = main(["fuse", str(tmp_path / "a.run"), str(tmp_path / "b.run"), "-o", str(tmp_path / "f.run"),
                   *args, *extra])
    except SystemExit as e:  # argparse's own usage error (a type that refuses the value), exit status 2
        rc = e.code
    assert rc == 2 and message in capsys.readouterr().err


def test_zscore_fusion_refuses_infinite_scores():
    from irglow.runs.fusion import fuse

    with pytest.raises(ValueError, match="infinite scores"):
        fuse([Run({"q": [("d1", float("inf")), ("d2", 1.0)]}, "a"), Run({"q": [("d1", 1.0)]}, "b")], "wsum", "z-score")


def test_irglow_data_naming_a_file_is_a_clear_error(tmp_path, monkeypatch):
    from irglow.index.lucene_index import data_dir

    (tmp_path / "f").write_text("")
    monkeypatch.setenv("IRGLOW_DATA", str(tmp_path / "f"))
    with pytest.raises(NotADirectoryError, match="IRGLOW_DATA names .* which is a file"):
        data_dir()


def test_gzipped_runs_and_qrels_are_read_transparently(tmp_path, capsys):
    with gzip.open(tmp_path / "q.qrels.gz", "wt") as f:
        f.write("q1 0 d1 1\nq2 0 d2 1\n")
    run = Run({"q1": [("d1", 2.0)], "q2": [("d9", 1.0)]}, "a")
    with gzip.open(tmp_path / "sys.run.gz", "wt") as f:
        f.write(run.write(tmp_path / "plain.run").read_text())
    assert Run.read(tmp_path / "sys.run.gz").ranking == run.ranking
    assert read_qrels(tmp_path / "q.qrels.gz") == [Qrel("q1", "d1", 1), Qrel("q2", "d2", 1)]
    assert main(["eval", str(tmp_path / "sys.run.gz"), "--qrels", str(tmp_path / "q.qrels.gz"), "-m", "RR@10",
                 "--format", "csv"]) == 0
    assert capsys.readouterr().out.splitlines()[1].startswith("sys,0.5")


def test_compare_refuses_to_overwrite_an_input(tmp_path):
    (tmp_path / "q.qrels").write_text("q1 0 d1 1\n")
    Run({"q1": [("d1", 1.0)]}).write(tmp_path / "a.run")
    before = (tmp_path / "a.run").read_bytes()
    for target in ("a.run", "q.qrels"):
        with pytest.raises(SystemExit, match="one of the inputs"):
            main(["compare", str(tmp_path / "a.run"), "--qrels", str(tmp_path / "q.qrels"), "-o", str(tmp_path / target)])
    assert (tmp_path / "a.run").read_bytes() == before


def test_latex_table_escapes_run_names():
    from irglow.eval.compare import compare

    qrels = [Qrel("q1", "d1", 1)]
    runs = {"bm25_title": Run({"q1": [("d1", 1.0)]}), "a&b%": Run({"q1": [("d2", 1.0)]})}
    tex = compare(runs, qrels, ["RR@10"], baseline="bm25_title").to_latex()
    assert r"bm25\_title" in tex and r"a\&b\%" in tex and "bm25_title " not in tex.split("%")[0]


def test_duplicate_lines_can_be_kept_from_the_cli(tmp_path, capsys):
    (tmp_path / "q.qrels").write_text("q1 0 d1 1\n")
    (tmp_path / "d.run").write_text("q1 Q0 d1 1 1.0 t\nq1 Q0 d1 2 3.0 t\n")
    assert main(["eval", str(tmp_path / "d.run"), "--qrels", str(tmp_path / "q.qrels")]) == 2
    assert "--duplicates keep-max" in capsys.readouterr().err
    assert main(["eval", str(tmp_path / "d.run"), "--qrels", str(tmp_path / "q.qrels"), "--duplicates", "keep-max",
                 "-m", "RR@10", "--format", "csv"]) == 0


def test_files_written_inside_an_atomic_dir_get_the_umask_permissions(tmp_path):
    from irglow.utils.atomic import atomic_dir

    old = os.umask(0o022)
    try:
        with atomic_dir(tmp_path / "model") as tmp:
            fd = os.open(tmp / "weights.safetensors", os.O_CREAT | os.O_WRONLY, 0o600)  # as safetensors does
            os.close(fd)
    finally:
        os.umask(old)
    assert oct((tmp_path / "model" / "weights.safetensors").stat().st_mode & 0o777) == "0o644"


def test_scipy_warnings_stay_out_of_the_terminal(recwarn):
    from irglow.eval.compare import compare

    qrels = [Qrel("q1", "d1", 1), Qrel("q2", "d2", 1)]
    runs = {"a": Run({"q1": [("d1", 1.0)], "q2": [("d2", 1.0)]}), "b": Run({"q1": [("d9", 1.0)], "q2": [("d9", 1.0)]})}
    compare(runs, qrels, ["RR@10"], baseline="a")
    assert not [w for w in recwarn if issubclass(w.category, RuntimeWarning)]


def test_validation_split_needs_eleven_queries_and_says_so(caplog):
    from irglow.models.checkpoints import split_validation

    with caplog.at_level(logging.WARNING):
        assert split_validation(["a", "b", "c"], 0.1, "T", 13) == ([], ["a", "b", "c"])
    assert "only 3 training queries" in caplog.text and "the model after the last step is kept" in caplog.text
    val, train = split_validation([str(i) for i in range(20)], 0.1, "T", 13)
    assert val and sorted(val + train, key=int) == [str(i) for i in range(20)] and not set(val) & set(train)
    assert train == [str(i) for i in range(20) if str(i) not in val]  # the given order kept


def test_every_trainer_holds_out_the_same_queries_of_those_it_shares():
    """Issue 37 item 7: on NFCorpus TW-BERT and NRM-F shuffled their own (different) eligible ids and shared 39
    of ~250 held-out queries.  With the split by hash of (seed, id), two trainers whose eligible queries
    differ agree on every query they share; another seed gives another split."""
    import random

    from irglow.models.checkpoints import held_out, split_validation

    ids = [f"PLAIN-{i}" for i in range(2500)]
    rng = random.Random(0)
    twbert = [q for q in ids if rng.random() < 0.9]  # judged relevant, whether or not the document is indexed
    nrmf = [q for q in ids if rng.random() < 0.8]
    rng.shuffle(nrmf)
    v1, _ = split_validation(twbert, 0.1, "TW-BERT", 13)
    v2, _ = split_validation(nrmf, 0.1, "NRM-F", 13)
    both = set(twbert) & set(nrmf)
    assert set(v1) & both == set(v2) & both and len(set(v1) & both) > 150
    assert all(held_out(13, q) < 0.1 for q in v1) and 0.08 < len(v1) / len(twbert) < 0.12
    v3, _ = split_validation(twbert, 0.1, "TW-BERT", 14)
    assert len(set(v3) & set(v1)) < len(v1) / 2
    # ten or fewer: nothing held out; eleven whose hashes all exceed the fraction: the lowest one is
    few = [q for q in ids if held_out(13, q) > 0.5][:11]
    assert split_validation(few, 0.1, "T", 13)[0] == [min(few, key=lambda q: held_out(13, q))]


def test_query_digest_covers_ids_and_text():
    from irglow.utils.digest import qrels_digest, queries_digest

    base = [Query("1", "lemon tart"), Query("2", "x")]
    assert queries_digest(base) != queries_digest([Query("1", "lemon pie"), Query("2", "x")])
    assert queries_digest(base) != queries_digest([Query("01", "lemon tart"), Query("2", "x")])
    assert qrels_digest([Qrel("1", "d", 1), Qrel("2", "e", 0)]) == qrels_digest([Qrel("2", "e", 0), Qrel("1", "d", 1)])
    assert qrels_digest([Qrel("1", "d", 1)]) != qrels_digest([Qrel("1", "d", 2)])


def test_columnar_reader_equals_the_strict_one(tmp_path):
    """The fast path for evaluation (Arrow + numpy) ranks exactly as Run.read, ties and unsorted files included,
    and hands anything unusual to the strict reader."""
    import irglow.runs.columns as columns
    from irglow.runs.columns import RankedRun, read_ranked

    text = ("q2 Q0 b 1 1.5 t\nq1 Q0 a 1 2.0 t\nq1 Q0 c 2 2.0 t\nq1 Q0 b 3 3.0 t\nq2 Q0 a 2 1.5 t\n"
            "q1 Q0 d 4 -1.0 t\nq2 Q0 z 3 0.25 t\n")
    (tmp_path / "r.run").write_text(text)
    strict = RankedRun.from_run(Run.read(tmp_path / "r.run"))
    assert columns._fast(tmp_path / "r.run") is not None
    fast = read_ranked(tmp_path / "r.run")
    assert fast.ranked == strict.ranked and fast.tag == "t"
    assert list(fast.ranked["q1"]) == ["b", "c", "a", "d"]  # 3.0, then the 2.0 tie by id descending
    (tmp_path / "tabs.run").write_text(text.replace(" ", "\t"))
    assert columns._fast(tmp_path / "tabs.run") is None and read_ranked(tmp_path / "tabs.run").ranked == strict.ranked
    (tmp_path / "dup.run").write_text(text + "q1 Q0 a 9 0.1 t\n")
    with pytest.raises(FormatError, match="dup.run:8: duplicate document a"):
        read_ranked(tmp_path / "dup.run")
    (tmp_path / "nan.run").write_text(text + "q1 Q0 e 9 nan t\n")
    with pytest.raises(FormatError, match="nan.run:8: score is NaN"):
        read_ranked(tmp_path / "nan.run")
    with gzip.open(tmp_path / "r.run.gz", "wt") as f:
        f.write(text)
    assert read_ranked(tmp_path / "r.run.gz").ranked == strict.ranked


def test_parallel_evaluation_reports_a_bad_line_and_equals_the_serial_one(tmp_path, capsys):
    from irglow.eval.compare import evaluate_files

    (tmp_path / "q.qrels").write_text("q1 0 d1 1\nq2 0 d2 1\n")
    for name, docs in (("a", ["d1", "d2"]), ("b", ["d2", "d1"]), ("c", ["d9", "d1"])):
        Run({q: [(d, 2.0 - i) for i, d in enumerate(docs)] for q in ("q1", "q2")}, name).write(tmp_path / f"{name}.run")
    paths = [tmp_path / f"{n}.run" for n in "abc"]
    qrels = read_qrels(tmp_path / "q.qrels")
    parallel = evaluate_files(paths, qrels, ["RR@10", "AP"], workers=2)
    serial = evaluate_files(paths, qrels, ["RR@10", "AP"], workers=1)
    assert [e.values for e in parallel] == [e.values for e in serial]
    assert parallel[0].values["RR@10"] == {"q1": 1.0, "q2": 0.5}
    (tmp_path / "b.run").write_text("q1 Q0 d1 1 2.0 b\nq1 Q0 d2 x 1.0 b\n")
    assert main(["compare", *map(str, paths), "--qrels", str(tmp_path / "q.qrels")]) == 2
    assert "b.run:2: rank must be an integer" in capsys.readouterr().err


def test_a_shard_left_by_another_model_is_encoded_again(tmp_path):
    """Issue 21.11: an interrupted sharded encoding is reused only for the same documents and model key."""
    import torch

    from irglow.data.records import make_document
    from irglow.dense.encode import encode_corpus, load_embeddings, shard_dir

    docs = [make_document(f"d{i}", body="x" * (i + 1)) for i in range(6)]
    calls = []

    def encoder(scale):
        def run(batch):
            calls.append(len(batch))
            return torch.tensor([[float(len(d.text("body"))) * scale, 1.0] for d in batch])
        return run

    encode_corpus(docs, encoder(1.0), tmp_path / "emb", batch_size=8, rank=0, world=2, key="model-a")
    assert calls == [3]
    encode_corpus(docs, encoder(1.0), tmp_path / "emb", batch_size=8, rank=0, world=2, key="model-a")
    assert calls == [3]  # same documents, same model: reused
    encode_corpus(docs, encoder(-1.0), tmp_path / "emb", batch_size=8, rank=0, world=2, key="model-b")
    assert calls == [3, 3]  # another model: encoded again
    vectors, ids = load_embeddings(shard_dir(tmp_path / "emb", 0, 2))
    assert ids == ["d0", "d1", "d2"] and vectors[0, 0] < 0


def test_a_pickled_checkpoint_is_refused_in_one_line(tmp_path):
    import shutil

    import torch

    from irglow.models.checkpoints import default_checkpoint, load_encoder

    src = default_checkpoint()
    for name in ("config.json", "tokenizer.json", "tokenizer_config.json", "vocab.txt", "special_tokens_map.json"):
        if (Path(src) / name).is_file():
            shutil.copy(Path(src) / name, tmp_path / name)

    class Code:
        def __reduce__(self):
            return (print, ("this would run",))

    torch.save({"weights": Code()}, tmp_path / "pytorch_model.bin")
    with pytest.raises(ValueError, match="pickled objects besides tensors") as e:
        load_encoder(str(tmp_path))
    assert "\n" not in str(e.value)
