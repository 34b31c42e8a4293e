"""``irglow glow train | search | explain``."""

from __future__ import annotations

import argparse

from irglow.defaults import DEPTH
from irglow.settings import positive_int
from irglow.data.collection import agree_on_inputs, load_collection
from irglow.utils.distributed import collective
from irglow.data.docstore import docs_store
from irglow.models.cli import add_train_parser


def add_glow_command(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser("glow", help="GLOW/BISON BM25-weighted attention encoders: train, search, explain")
    g = p.add_subparsers(dest="glow_command", required=True)

    add_train_parser(g, "train a Siamese encoder (variant: bert, glow, glow-idf, glow-tw, glow-us, glow-wt)", cmd_train,
                     config="configs/glow.toml", config_help="TOML/YAML with a [glow] section",
                     example="model.variant=glow-idf")

    s = g.add_parser("search", help="encode the corpus (embeddings on disk), faiss search → TREC run")
    s.add_argument("data", help="'demo', a BEIR folder or an ir_datasets id")
    s.add_argument("--split", default="test", help="the queries searched (default: test)")
    s.add_argument("--model", required=True, help="a trained GLOW/BERT model folder (irglow glow train)")
    s.add_argument("--depth", type=positive_int, default=DEPTH, help=f"documents per query (default: {DEPTH})")
    s.add_argument("--faiss", choices=["flat", "hnsw", "ivf", "ivfpq"], default="flat",
                   help="flat: exact; hnsw; ivf (clusters, nprobe 128); ivfpq (1/16 of flat's memory, for corpora whose "
                        "flat index would not fit; recall against flat in BENCHMARKS.md; default: flat)")
    s.add_argument("--shard-rows", type=positive_int, default=None,
                   help="search an index of this many vectors at a time and merge the tops (a corpus whose one index "
                        "does not fit in memory)")
    s.add_argument("--field-tokens", action="append", default=[], metavar="FIELD=N",
                   help="a field's token budget at search time (repeatable; default: the model's own), e.g. "
                        "text=256; '*=N' sets the fields not named (the title's default)")
    s.add_argument("--read-all-fields", action="store_true",
                   help="a one-field model reads every field of the collection in its segment (title + text), as "
                        "models the pipeline trains on a one-field collection do")
    s.add_argument("-o", "--output", required=True, help="the run file to write")
    s.add_argument("--data-dir", help="where indexes are cached (default: $IRGLOW_DATA or ./data)")
    s.set_defaults(func=cmd_search)

    e = g.add_parser("explain", help="top attended words of a document per field, models side by side")
    e.add_argument("data", help="'demo', a BEIR folder or an ir_datasets id")
    e.add_argument("--doc", required=True, help="document id")
    e.add_argument("--model", action="append", required=True, metavar="NAME=DIR",
                   help="a model to explain, named (repeat it to compare models side by side)")
    e.add_argument("--top", type=int, default=5, help="words shown per field (default: 5)")
    e.add_argument("--data-dir", help="where indexes are cached (default: $IRGLOW_DATA or ./data)")
    e.set_defaults(func=cmd_explain)


def _load(args):
    """Collection, index and statistics; under ``torchrun`` rank 0 builds them while the others wait."""
    from irglow.index.lucene_index import build_index
    from irglow.index.stats import CollectionStats
    from irglow.utils.distributed import main_first

    coll = load_collection(args.data)
    if getattr(args, "split", None):  # under torchrun: the same corpus, queries and judgments on every rank
        agree_on_inputs(coll, [args.split])

    def load():
        index = build_index(coll, root=args.data_dir)
        return index, CollectionStats.load(index)

    return (coll, *main_first(load))


@collective
def cmd_train(args) -> int:
    from irglow.config import apply_override, load_config, write_manifest
    from irglow.models.glow.train import GlowTrainConfig, GlowTrainer
    from irglow.utils.distributed import join

    cfg = load_config(args.config).get("glow", {})  # a shipped configs/… file is found from any folder
    for item in args.set:
        apply_override(cfg, item)
    cfg.pop("enabled", None)
    cfg.pop("variants", None)
    w = join()
    coll, index, stats = _load(args)
    cfg.setdefault("model", {}).setdefault("fields", list(index.fields))
    config = GlowTrainConfig.from_dict(cfg)
    best = GlowTrainer(config, args.out).train(index, stats, docs_store(coll),
                                               coll.queries(args.split), coll.qrels(args.split),
                                               resume=not args.no_resume)
    if w.main:  # one writer
        from irglow.models.fields import resolve_auto_budgets

        write_manifest(args.out, {"glow": cfg, "data": args.data, "split": args.split}, seed=config.seed,
                       token_budget=resolve_auto_budgets(cfg["model"], config.device)[1])
        print(best)
    return 0


def parse_field_tokens(items: list[str]) -> dict[str, int]:
    """``["text=256", "*=32"]`` → ``{"text": 256, "*": 32}``, with the item named when one is malformed."""
    from irglow.settings import field_values

    def tokens(value: str) -> int:
        if not value.strip().isdigit() or int(value) < 1:
            raise ValueError
        return int(value)

    return field_values(items, tokens, "--field-tokens {item}: expected FIELD=N with N a positive number of tokens")


@collective
def cmd_search(args) -> int:
    from pathlib import Path

    from irglow.config import write_run_manifest
    from irglow.models.glow.model import GlowEncoder
    from irglow.models.glow.runner import glow_run
    from irglow.utils.distributed import join

    w = join()
    coll, index, stats = _load(args)
    out = Path(args.output)
    model = GlowEncoder.load(args.model)
    model.config.read_all_fields = model.config.read_all_fields or args.read_all_fields
    if args.field_tokens:
        budgets = parse_field_tokens(args.field_tokens)
        model.with_token_budgets({f: n for f, n in budgets.items() if f != "*"}, budgets.get("*"))
    run, info = glow_run(model, index, stats, docs_store(coll).sequence(), coll.queries(args.split),
                         out.parent, out.stem, args.depth, faiss_kind=args.faiss,
                         shard_rows=args.shard_rows)
    if not w.main:  # its shard is encoded; rank 0 searched and writes
        return 0
    run.write(out)
    write_run_manifest(out, {"glow_search": {k: v for k, v in vars(args).items() if k != "func"}},
                       **info)
    print(f"{len(run)} queries → {out} ({info['docs_per_s']:.1f} docs/s encoding)")
    return 0


def cmd_explain(args) -> int:
    from irglow.models.glow.explain import explain_table
    from irglow.models.glow.model import GlowEncoder
    from irglow.models.glow.runner import featurizer_for

    coll, index, stats = _load(args)
    doc = docs_store(coll)[args.doc]  # a missing id: one line naming it and the collection
    models = {}
    for item in args.model:
        name, _, path = item.partition("=")
        m = GlowEncoder.load(path or name)
        models[name] = (m, featurizer_for(m, index, stats))
    print(explain_table(models, doc, args.top))
    return 0
