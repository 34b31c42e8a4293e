"""``irglow rerank RUN --model DIR …`` and ``irglow monobert|nrmf train|explain``."""

from __future__ import annotations

from pathlib import Path

from irglow.commands.common import writes_folder
from irglow.config import apply_override, load_config, write_manifest, write_run_manifest
from irglow.data.collection import agree_on_inputs, load_collection
from irglow.data.docstore import docs_store
from irglow.data.records import Query
from irglow.index.lucene_index import build_index
from irglow.models.rerank.explain import explain_table
from irglow.models.rerank.kinds import kind_of, load_reranker, reranker_kind
from irglow.models.rerank.train import RerankTrainConfig, RerankTrainer
from irglow.runs.trec import Run, check_token, gather_runs
from irglow.utils.atomic import check_not_input, check_writable, is_stdout, say_written
from irglow.utils.distributed import collective, is_main, main_first, rank_file, split


def train_config(kind: str, config_path: str, overrides: list[str]):
    cfg = load_config(config_path).get(kind, {})  # a shipped configs/… file is found from any folder
    for item in overrides:
        apply_override(cfg, item)
    cfg.pop("enabled", None)
    return RerankTrainConfig.from_dict({**cfg, "kind": kind}), cfg


@collective
@writes_folder("out")
def cmd_train(args) -> int:
    config, raw = train_config(args.kind, args.config, args.set)
    coll = load_collection(args.data)
    agree_on_inputs(coll, [args.split])  # under torchrun: the same corpus, queries and judgments on every rank
    index = main_first(lambda: build_index(coll, root=args.data_dir))
    best = RerankTrainer(config, args.out).train(index, docs_store(coll),
                                                 coll.queries(args.split), coll.qrels(args.split),
                                                 resume=not args.no_resume)
    write_manifest(args.out, {args.kind: raw, "data": args.data, "split": args.split}, seed=config.seed)
    if is_main():
        print(best)
    return 0


@collective
def cmd_rerank(args) -> int:
    """Under ``torchrun`` each rank re-ranks a contiguous share of the run's queries (its own checkpoint); rank 0
    writes the whole run."""
    out = check_not_input(args.output, [args.run], data=args.data)
    if args.tag:
        check_token(args.tag, "run tag")
    check_writable(out)
    run = Run.read(args.run, args.duplicates)
    kind = reranker_kind(kind_of(args.model))
    model = kind.load(args.model)
    coll = load_collection(args.data)
    agree_on_inputs(coll, [args.split], files=[args.run])  # under torchrun: every rank re-ranks the same run
    queries = coll.queries(args.split)
    docs = docs_store(coll)  # by id: a query's top documents at a time
    order = [Query(q, "") for q in run.ranking]
    mine = Run({q.query_id: run.ranking[q.query_id] for q in split(order)}, run.tag)
    tag = args.tag or f"{run.tag}-{kind.name}"
    # a killed re-ranking's scores so far, beside its run file (-o -: in the working folder, named by its tag)
    folder, name = (Path("."), tag) if is_stdout(out) else (out.parent, out.name)
    partial = folder / rank_file(f".{name}.partial.jsonl")
    reranked = gather_runs({tag: kind.rerank_run(model, mine, queries, docs, args.depth, tag,
                                                 batch_size=args.batch_size, checkpoint=partial)},
                           order)[tag]  # a killed re-ranking resumes (irglow's kinds)
    reranked.write(out)
    write_run_manifest(out, {"rerank": {k: v for k, v in vars(args).items() if k != "func"}})
    if is_main():
        say_written(f"{len(reranked)} queries re-ranked (top {args.depth})", out)
    return 0


def cmd_explain(args) -> int:
    model = load_reranker(args.model)
    docs = docs_store(load_collection(args.data))
    missing = [d for d in args.doc if d not in docs]
    if missing:
        raise KeyError(f"document(s) {missing} are not in {args.data}")
    print(explain_table(model, args.query, [docs[d] for d in args.doc]))
    return 0
