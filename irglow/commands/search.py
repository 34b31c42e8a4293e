"""``irglow search``: a lexical run (BM25, BM25-MF, BM25F, TF-IDF, QLD, a registered system, ± RM3) through
Pyserini."""

from __future__ import annotations

import argparse
from pathlib import Path

from irglow.defaults import BM25_B, BM25_K1, DEPTH, QLD_MU
from irglow.lexical.systems import BUILT_IN
from irglow.settings import positive_int
from irglow.commands.common import add_data_options, add_index_options, open_index


def _weights(items) -> dict[str, float]:
    from irglow.settings import field_values

    return field_values(items, float, "--field-weight {item} must look like FIELD=NUMBER")


def _system(name: str) -> str:
    """``--system``: irglow's lexical systems and the registered ones (loaded only when a name is not irglow's)."""
    if name in BUILT_IN:
        return name
    from irglow.lexical.systems import lexical_systems

    known = lexical_systems()
    if name not in known:
        raise argparse.ArgumentTypeError(f"{name!r} is not a lexical system; choose from {', '.join(known)}")
    return name


def cmd_search(args) -> int:
    from irglow.data.collection import load_collection
    from irglow.data.records import Query
    from irglow.data.trec import read_topics
    from irglow.lexical.searchers import LexicalConfig, LexicalSearcher

    if args.query is not None and not args.query.strip():
        raise SystemExit("--query is empty: give the words to search for")
    if args.tag is not None:
        from irglow.runs.trec import check_token

        try:
            check_token(args.tag, "--tag")
        except ValueError as e:
            raise SystemExit(str(e)) from None
    # an ad-hoc --query prints its ranking, and writes it too when -o names a file
    output = Path(args.output) if args.output else (None if args.query else Path(f"runs/{args.tag or args.system}.run"))
    if output is not None:
        from irglow.utils.atomic import check_not_input, check_writable

        check_writable(check_not_input(output, [args.topics], data=args.data))
    index = open_index(args)
    if args.query:
        queries = [Query("q", args.query)]
    elif args.topics:
        queries = read_topics(args.topics)
    else:
        queries = load_collection(args.data).queries(args.split)
    from irglow.index.lucene_index import available_cores

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
    from irglow.config import write_run_manifest

    write_run_manifest(output, {"search": vars(args)})
    print(f"{len(run)} queries → {output}")
    return 0


def register(sub) -> None:
    """Add this module's commands to ``irglow``'s sub-commands."""
    p = sub.add_parser("search", help="lexical run: bm25, bm25-mf, bm25f, tfidf, qld or a registered system "
                                        "(+ --rm3)")
    add_data_options(p)
    add_index_options(p)
    p.add_argument("--system", default="bm25", type=_system,
                   help=f"the lexical system: {', '.join(BUILT_IN)} or one another package registers "
                        f"(irglow.lexical entry points) (default: bm25)")
    p.add_argument("--k1", type=float, default=BM25_K1, help=f"BM25's k1 (default: {BM25_K1})")
    p.add_argument("--b", type=float, default=BM25_B, help=f"BM25's b (default: {BM25_B})")
    p.add_argument("--mu", type=float, default=QLD_MU, help="qld's Dirichlet prior μ (default: %(default)s)")
    p.add_argument("--depth", type=positive_int, default=DEPTH,
                   help=f"documents retrieved per query (default: {DEPTH})")
    p.add_argument("--field-weight", action="append", metavar="FIELD=W", help="bm25-mf/bm25f field weight")
    p.add_argument("--rm3", action="store_true",
                   help="expand each query by RM3 (bm25 and bm25-mf; the run <system>-rm3)")
    p.add_argument("--topics", help="TREC/TSV/BEIR topics file instead of the collection's queries")
    p.add_argument("--query", help="search one query and print the top hits")
    p.add_argument("--show", type=positive_int, default=10, help="with --query: the hits printed (default: 10)")
    p.add_argument("--tag", default=None, help="the run's tag and file name (default: the system's name)")
    p.add_argument("-o", "--output", help="run file (default runs/<tag>.run)")
    p.set_defaults(func=cmd_search)
