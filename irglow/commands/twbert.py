"""``irglow twbert train | search | explain``."""

from __future__ import annotations

from irglow.commands.common import writes_folder
from irglow.config import apply_override, load_config, write_manifest, write_run_manifest
from irglow.data.collection import agree_on_inputs, load_collection
from irglow.index.lucene_index import build_index
from irglow.index.stats import CollectionStats
from irglow.models.twbert.model import TWBert, TWBertConfig
from irglow.models.twbert.search import twbert_search
from irglow.models.twbert.terms import extract_terms
from irglow.models.twbert.train import TrainConfig, Trainer
from irglow.utils.atomic import say_written
from irglow.utils.distributed import collective, is_main, main_first


def _index(args):
    return build_index(load_collection(args.data), root=args.data_dir)


@collective
@writes_folder("out")
def cmd_train(args) -> int:
    cfg = load_config(args.config).get("twbert", {}) if args.config else {}
    for item in args.set:
        apply_override(cfg, item)
    config = TrainConfig.from_dict({k: v for k, v in cfg.items() if k != "enabled"})
    collection = load_collection(args.data)
    agree_on_inputs(collection, [args.split])  # under torchrun: the same corpus, queries and judgments on every rank

    def index_and_stats():  # under torchrun rank 0 builds them, the others open them
        index = _index(args)
        return index, CollectionStats.load(index)

    index, stats = main_first(index_and_stats)
    best = Trainer(config, args.out).train(index, stats, collection.queries(args.split),
                                           collection.qrels(args.split), resume=not args.no_resume)
    write_manifest(args.out, {"twbert": cfg, "data": args.data, "split": args.split}, seed=config.seed)
    if is_main():
        print(best)
    return 0


def cmd_search(args) -> int:
    model = TWBert.load(args.model)
    run = twbert_search(model, _index(args), load_collection(args.data).queries(args.split), depth=args.depth,
                        tag="twbert-rm3" if args.rm3 else "twbert", expansion="rm3" if args.rm3 else None)
    run.write(args.output)

    write_run_manifest(args.output, {"twbert_search": vars(args) | {"func": None}})
    say_written(f"{len(run)} queries", args.output)
    return 0


def cmd_explain(args) -> int:
    model = TWBert.load(args.model) if args.model else TWBert.from_pretrained_bert(TWBertConfig())
    if not args.model:
        print("(no --model: an untrained head, weights are meaningless until trained)")
    index = _index(args)
    terms = model.fit_budget(extract_terms(index, "q", args.query, model.config.bigrams))
    if not terms.n_terms:
        print("no searchable term: every word is a stopword or empty after analysis")
        return 0
    weights = model.predict([terms])[0]
    width = max(len(s) for s in terms.surfaces()) + 2
    print(f"{'n-gram (surface)':<{width}} {'lucene term(s)':<28} weight")
    for surface, label, w in zip(terms.surfaces(), terms.labels(), weights):
        print(f"{surface:<{width}} {label:<28} {w:.3f}")
    return 0
