"""``irglow run``, ``zero-shot`` and ``regressions``: the pipeline from a configuration, one training
evaluated on many collections, the reproduction matrix."""

from __future__ import annotations

import sys
from pathlib import Path

from irglow.utils.distributed import collective


@collective
def cmd_run(args) -> int:
    from irglow.config import SealedConfig, load_config
    from irglow.pipeline import run_pipeline
    from irglow.plan import bind_plan

    # bound once into the plan, then sealed: a setting read from the dictionary after binding is an error
    config = SealedConfig(load_config(args.config, args.set))
    if args.grid:
        from irglow.grid import run_grid

        run_grid(config, args.grid, args.select_on)
    elif args.select_on:
        raise SystemExit("--select-on needs --grid KEY=V1,V2 (the settings to choose between)")
    else:
        plan = bind_plan(config)
        config.seal()
        run_pipeline(plan)
    return 0


@collective
def cmd_zero_shot(args) -> int:
    from irglow.config import SealedConfig, load_config
    from irglow.zero_shot import NoCollectionError, run_zero_shot

    config = SealedConfig(load_config(args.config, args.set))
    zs = config.setdefault("zero_shot", {})
    if args.train:
        zs["train"] = args.train
    if args.train_split:
        zs["train_split"] = args.train_split
    if args.collections:
        zs["collections"] = [c for c in args.collections.split(",") if c]
    if args.output:
        config.setdefault("output", {})["dir"] = args.output
    try:
        run_zero_shot(config)
    except NoCollectionError as e:
        print(f"irglow zero-shot: {e}", file=sys.stderr)
        return 2
    return 0


def cmd_regressions(args) -> int:
    from irglow.regressions import run_matrix
    from irglow.utils.atomic import atomic_write_text

    matrix = run_matrix(args.config, args.output, [t for t in (args.tags or "").split(",") if t] or None,
                        args.data_dir)
    text = matrix.to_markdown()
    atomic_write_text(Path(args.output) / "regressions.md", text)
    atomic_write_text(Path(args.output) / "regressions.html", matrix.to_html())
    print("\n## Reproduction matrix\n")
    print(text)
    print(f"matrix in {args.output}/regressions.md and .html")
    return 1 if matrix.failed else 0


def register(sub) -> None:
    """Add this module's commands to ``irglow``'s sub-commands."""
    p = sub.add_parser("regressions", help="the reproduction matrix: rerun checked-in experiments, ✓/✗ per figure")
    p.add_argument("--config", default="configs/regressions.yaml",
                   help="the reproduction matrix (default: irglow's configs/regressions.yaml, from any folder)")
    p.add_argument("--tags", help="only experiments with one of these tags, comma-separated (e.g. lexical)")
    p.add_argument("--data-dir", default=None, help="where indexes are cached (default: $IRGLOW_DATA or ./data)")
    p.add_argument("-o", "--output", default="out/regressions", help="where each experiment's runs and the matrix "
                   "page go (default: out/regressions)")
    p.set_defaults(func=cmd_regressions)

    p = sub.add_parser("run", help="the end-to-end pipeline from a configuration file")
    p.add_argument("--config", default="configs/demo.toml", help="the configuration (TOML or YAML; default: irglow's "
                   "configs/demo.toml, found from any folder)")
    p.add_argument("--set", action="append", default=[], metavar="KEY=VALUE", help="override, e.g. lexical.depth=100")
    p.add_argument("--grid", action="append", default=[], metavar="KEY=V1,V2",
                   help="a grid of settings, e.g. glow.model.weight_alpha=0.25,0.5,1 or preset=a,b ([presets.<name>])")
    p.add_argument("--select-on", choices=["validation"],
                   help="train every grid point, keep the best on the validation queries carved from the training "
                        "split, run the pipeline once with it (without: every point is a full run)")
    p.set_defaults(func=cmd_run)

    p = sub.add_parser("zero-shot", help="train once, evaluate every system on a list of collections: one table")
    p.add_argument("--config", default="configs/zero-shot.toml", help="the configuration with a [zero_shot] section "
                   "(default: irglow's configs/zero-shot.toml)")
    p.add_argument("--set", action="append", default=[], metavar="KEY=VALUE", help="override, e.g. twbert.epochs=2")
    p.add_argument("--train", help="the training collection (overrides zero_shot.train)")
    p.add_argument("--train-split", help="its split (overrides zero_shot.train_split)")
    p.add_argument("--collections", help="comma-separated collections, each on its test split or "
                   "name@split (overrides zero_shot.collections)")
    p.add_argument("-o", "--output", help="output folder (overrides output.dir)")
    p.set_defaults(func=cmd_zero_shot)
