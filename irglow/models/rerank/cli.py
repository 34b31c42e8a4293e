"""``irglow rerank RUN --model DIR …`` and ``irglow monobert|nrmf train|explain``."""

from __future__ import annotations

import argparse

from irglow import settings as declared
from irglow.data.collection import agree_on_inputs, load_collection
from irglow.utils.distributed import collective
from irglow.data.docstore import docs_store
from irglow.models.cli import add_duplicates_option, add_train_parser


def add_rerank_commands(sub: argparse._SubParsersAction) -> None:
    r = sub.add_parser("rerank", help="re-rank the top k of a run with a monoBERT or NRM-F model")
    r.add_argument("run", help="TREC run file to re-rank")
    r.add_argument("--model", required=True, help="a trained monoBERT or NRM-F directory")
    r.add_argument("--data", required=True, help="the run's collection: 'demo', a BEIR folder, or an ir_datasets id")
    r.add_argument("--split", default="test", help="the split whose query texts the run ranks (default: test)")
    r.add_argument("--depth", **declared.option("rerank", "depth"))
    r.add_argument("--batch-size", type=int, default=64, help="query-document pairs scored at once (default: 64)")
    r.add_argument("--tag", default=None, help="the re-ranked run's tag (default: <run tag>-<kind>)")
    r.add_argument("-o", "--output", required=True, help="the re-ranked run file to write")
    add_duplicates_option(r)
    r.set_defaults(func=cmd_rerank)
    for kind, title in (("monobert", "monoBERT cross-encoder"), ("nrmf", "NRM-F multi-field ranker")):
        p = sub.add_parser(kind, help=f"{title}: train, explain")
        g = p.add_subparsers(dest=f"{kind}_command", required=True)
        t = add_train_parser(g, f"train a {title} on a collection's judged queries", cmd_train,
                             config="configs/rerank.toml", config_help=f"its [{kind}] section",
                             example="epochs=2, model.dim=128")
        t.set_defaults(kind=kind)
        e = g.add_parser("explain", help="a query's documents: score, and its change without each field")
        e.add_argument("data", help="'demo', a BEIR folder or an ir_datasets id")
        e.add_argument("--model", required=True, help="a trained model folder")
        e.add_argument("--query", required=True, help="query text")
        e.add_argument("--doc", action="append", required=True, help="document id (repeatable)")
        e.set_defaults(func=cmd_explain)


def train_config(kind: str, config_path: str, overrides: list[str]):
    from irglow.config import apply_override, load_config
    from irglow.models.rerank.train import RerankTrainConfig

    cfg = load_config(config_path).get(kind, {})  # a shipped configs/… file is found from any folder
    for item in overrides:
        apply_override(cfg, item)
    cfg.pop("enabled", None)
    return RerankTrainConfig.from_dict({**cfg, "kind": kind}), cfg


@collective
def cmd_train(args) -> int:
    from irglow.config import write_manifest
    from irglow.index.lucene_index import build_index
    from irglow.models.rerank.train import RerankTrainer
    from irglow.utils.distributed import is_main, main_first

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

    from irglow.config import write_run_manifest
    from irglow.data.records import Query
    from irglow.models.rerank.rerank import load_reranker, rerank
    from irglow.runs.trec import Run, check_token, gather_runs
    from irglow.utils.atomic import check_not_input, check_writable
    from irglow.utils.distributed import is_main, rank_file, split

    out = check_not_input(args.output, [args.run], data=args.data)
    if args.tag:
        check_token(args.tag, "run tag")
    check_writable(out)
    run = Run.read(args.run, args.duplicates)
    model = load_reranker(args.model)
    coll = load_collection(args.data)
    agree_on_inputs(coll, [args.split], files=[args.run])  # under torchrun: every rank re-ranks the same run
    queries = coll.queries(args.split)
    docs = docs_store(coll)  # by id: a query's top documents at a time
    order = [Query(q, "") for q in run.ranking]
    mine = Run({q.query_id: run.ranking[q.query_id] for q in split(order)}, run.tag)
    tag = args.tag or f"{run.tag}-{model.kind}"
    reranked = gather_runs({tag: rerank(model, mine, queries, docs, args.depth, args.batch_size, tag=tag,
                                        checkpoint=out.with_name(rank_file(f".{out.name}.partial.jsonl")))},
                           order)[tag]  # a killed re-ranking resumes
    reranked.write(out)
    write_run_manifest(out, {"rerank": {k: v for k, v in vars(args).items() if k != "func"}})
    if is_main():
        print(f"{len(reranked)} queries re-ranked (top {args.depth}) → {out}")
    return 0


def cmd_explain(args) -> int:
    from irglow.models.rerank.explain import explain_table
    from irglow.models.rerank.rerank import load_reranker

    model = load_reranker(args.model)
    docs = docs_store(load_collection(args.data))
    missing = [d for d in args.doc if d not in docs]
    if missing:
        raise KeyError(f"document(s) {missing} are not in {args.data}")
    print(explain_table(model, args.query, [docs[d] for d in args.doc]))
    return 0
