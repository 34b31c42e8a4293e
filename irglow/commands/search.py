"""``irglow search``: a lexical run (BM25, BM25-MF, BM25F, TF-IDF, QLD, a registered system, ± RM3) through
Pyserini."""

from __future__ import annotations

from pathlib import Path

from irglow.commands.common import open_index
from irglow.config import write_run_manifest
from irglow.data.collection import load_collection
from irglow.data.records import Query
from irglow.data.trec import read_topics
from irglow.index.lucene_index import available_cores
from irglow.lexical.searchers import LexicalConfig, LexicalSearcher
from irglow.runs.trec import check_token
from irglow.settings import field_values
from irglow.utils.atomic import check_not_input, check_writable, say_written


SHORT = 100  # queries: up to this many, a short command's JVM (C1 alone is faster at 100 on a million documents)


def _weights(items) -> dict[str, float]:
    return field_values(items, float, "--field-weight {item} must look like FIELD=NUMBER")


def cmd_search(args) -> int:
    if args.query is not None and not args.query.strip():
        raise SystemExit("--query is empty: give the words to search for")
    if args.tag is not None:
        try:
            check_token(args.tag, "--tag")
        except ValueError as e:
            raise SystemExit(str(e)) from None
    # an ad-hoc --query prints its ranking, and writes it too when -o names a file
    output = Path(args.output) if args.output else (None if args.query else Path(f"runs/{args.tag or args.system}.run"))
    if output is not None:
        check_writable(check_not_input(output, [args.topics], data=args.data))
    if args.query:
        queries = [Query("q", args.query)]
    elif args.topics:
        queries = read_topics(args.topics)
    else:
        queries = load_collection(args.data).queries(args.split)
    index = open_index(args, short=len(queries) <= SHORT)  # read before the JVM starts: a few, a short command
    threads = args.threads or available_cores()  # --threads 0 (the default): every core this process may use
    cfg = LexicalConfig(system=args.system, k1=args.k1, b=args.b, depth=args.depth, threads=threads, mu=args.mu,
                        field_weights=_weights(args.field_weight), rm3=args.rm3).check()
    run = LexicalSearcher(index, cfg).search(queries, tag=args.tag or args.system + ("-rm3" if args.rm3 else ""))
    if args.query:
        for rank, (doc_id, score) in enumerate(run.ranking["q"][:args.show], 1):
            print(f"{rank:>3} {doc_id:<20} {score:.4f}")
        if output is None:
            return 0
    output = Path(args.output or f"runs/{run.tag}.run")
    run.write(output)
    write_run_manifest(output, {"search": vars(args)})
    say_written(f"{len(run)} queries", output)
    return 0
