"""``irglow report``: a results browser in one HTML file — overview, query list, side-by-side rankings
(:mod:`irglow.eval.report` draws it)."""

from __future__ import annotations

from irglow.commands.evaluate import _comparison, _qrels
from irglow.data.collection import load_collection
from irglow.data.records import Query
from irglow.data.trec import read_topics
from irglow.eval.contrast import CONTRAST_DEPTH
from irglow.eval.report import report_data, write_report
from irglow.index.lucene_index import build_index
from irglow.index.stats import CollectionStats
from irglow.models.explain import report_analysis, twbert_weights
from irglow.runs.columns import read_ranked
from irglow.utils.atomic import check_not_input, check_writable, say_written


def cmd_report(args) -> int:
    """One HTML page: overview, query list, query view (irglow/eval/report.py)."""
    output = check_not_input(args.output or "report.html", [*args.runs, args.qrels, args.topics], data=args.data)
    check_writable(output)
    data = report_from_files(args)
    write_report(output, data)
    say_written(f"{len(data['runs'])} runs, {len(data['queries'])} queries", output)
    return 0


def report_from_files(args) -> dict:
    """The report's data from the command line's runs, qrels and options (what the page shows)."""
    collection = load_collection(args.data) if args.data else None
    qrels = _qrels(args)
    cmp = _comparison(args, qrels)
    names = list(cmp.means.index)
    # the shown depth, and the ranks RBO and τ_AP compare and a moved document's real rank is found in
    keep = max(args.depth, CONTRAST_DEPTH)
    tops = {name: read_ranked(path, args.duplicates).top(keep) for name, path in zip(names, args.runs)}
    if args.topics:
        queries = {q.query_id: q.text for q in read_topics(args.topics)}
    elif collection is not None:
        queries = {q.query_id: q.text for q in collection.queries(args.split)}
    else:
        queries = {}
    weights, index, stats = {}, None, None
    if collection is not None and not args.no_analysis:  # the cached index `irglow search` builds
        index = build_index(collection, root=args.data_dir)
        stats = CollectionStats.load(index)
    for item in args.twbert or []:
        run, eq, model_dir = item.partition("=")
        if not eq or run not in names or collection is None:
            raise SystemExit(f"--twbert {item!r}: give RUN=MODEL_DIR for one of the runs {names}, with --data")
        weights[run] = twbert_weights(model_dir, index or build_index(collection, root=args.data_dir),
                                      [Query(q, t) for q, t in queries.items()])
    judged = {q.query_id for q in qrels}
    extras = report_analysis(index, stats, {q: t for q, t in queries.items() if q in judged}, clusters=args.clusters,
                             k1=args.k1, b=args.b, encoder=args.encoder)
    return report_data(cmp, tops, qrels, queries, collection, depth=args.depth, term_weights=weights,
                       title=args.title or f"irglow: {', '.join(names)}", **extras)
