"""``irglow glow train | search | explain``."""

from __future__ import annotations

from pathlib import Path

from irglow.commands.common import writes_folder
from irglow.config import apply_override, load_config, write_manifest, write_run_manifest
from irglow.data.collection import agree_on_inputs, load_collection
from irglow.data.docstore import docs_store
from irglow.index.lucene_index import build_index
from irglow.index.stats import CollectionStats
from irglow.models.fields import resolve_auto_budgets
from irglow.models.glow.explain import explain_table
from irglow.models.glow.model import GlowEncoder
from irglow.dense.encode import check_faiss_size
from irglow.models.glow.runner import featurizer_for, glow_run
from irglow.models.glow.train import GlowTrainConfig, GlowTrainer
from irglow.settings import field_values
from irglow.utils.atomic import is_stdout, say_written
from irglow.utils.distributed import collective, join, main_first


def _load(args):
    """Collection, index and statistics; under ``torchrun`` rank 0 builds them while the others wait."""
    coll = load_collection(args.data)
    if getattr(args, "split", None):  # under torchrun: the same corpus, queries and judgments on every rank
        agree_on_inputs(coll, [args.split])

    def load():
        index = build_index(coll, root=args.data_dir)
        return index, CollectionStats.load(index)

    return (coll, *main_first(load))


@collective
@writes_folder("out")
def cmd_train(args) -> int:
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
        write_manifest(args.out, {"glow": cfg, "data": args.data, "split": args.split}, seed=config.seed,
                       token_budget=resolve_auto_budgets(cfg["model"], config.device)[1])
        print(best)
    return 0


def parse_field_tokens(items: list[str]) -> dict[str, int]:
    """``["text=256", "*=32"]`` → ``{"text": 256, "*": 32}``, with the item named when one is malformed."""
    def tokens(value: str) -> int:
        if not value.strip().isdigit() or int(value) < 1:
            raise ValueError
        return int(value)

    return field_values(items, tokens, "--field-tokens {item}: expected FIELD=N with N a positive number of tokens")


@collective
def cmd_search(args) -> int:
    w = join()
    coll, index, stats = _load(args)
    check_faiss_size(args.faiss, index.meta.get("documents"))  # before the model loads and the corpus is encoded
    out = Path(args.output)
    model = GlowEncoder.load(args.model)
    model.config.read_all_fields = model.config.read_all_fields or args.read_all_fields
    if args.field_tokens:
        budgets = parse_field_tokens(args.field_tokens)
        model.with_token_budgets({f: n for f, n in budgets.items() if f != "*"}, budgets.get("*"))
    # -o -: the run on standard output, the encodings kept under runs/ as for a run named glow
    folder, name = (Path("runs"), "glow") if is_stdout(out) else (out.parent, out.stem)
    run, info = glow_run(model, index, stats, docs_store(coll).sequence(), coll.queries(args.split),
                         folder, name, args.depth, faiss_kind=args.faiss,
                         shard_rows=args.shard_rows, workers=max(0, args.workers))
    if not w.main:  # its shard is encoded; rank 0 searched and writes
        return 0
    run.write(out)
    write_run_manifest(out, {"glow_search": {k: v for k, v in vars(args).items() if k != "func"}},
                       **info)
    rate = info["docs_per_s"]
    say_written(f"{len(run)} queries", out, f" ({rate:.1f} docs/s encoding)" if rate == rate else
                f" (the corpus encoding in {info['embeddings']} reused)")
    return 0


def cmd_explain(args) -> int:
    coll, index, stats = _load(args)
    doc = docs_store(coll)[args.doc]  # a missing id: one line naming it and the collection
    models = {}
    for item in args.model:
        name, _, path = item.partition("=")
        m = GlowEncoder.load(path or name)
        models[name] = (m, featurizer_for(m, index, stats))
    print(explain_table(models, doc, args.top))
    return 0
