"""``irglow run``, ``zero-shot`` and ``regressions``: the pipeline from a configuration, one training
evaluated on many collections, the reproduction matrix."""

from __future__ import annotations

import sys
from pathlib import Path

from irglow.config import SealedConfig, load_config
from irglow.grid import run_grid
from irglow.pipeline import run_pipeline
from irglow.plan import bind_sealed
from irglow.regressions import run_matrix
from irglow.utils.atomic import atomic_write_text
from irglow.utils.distributed import collective
from irglow.zero_shot import NoCollectionError, run_zero_shot


@collective
def cmd_run(args) -> int:
    # bound once into the plan, then sealed: a setting read from the dictionary after binding is an error
    config = SealedConfig(load_config(args.config, args.set))
    if args.grid:
        run_grid(config, args.grid, args.select_on)
    elif args.select_on:
        raise SystemExit("--select-on needs --grid KEY=V1,V2 (the settings to choose between)")
    else:
        run_pipeline(bind_sealed(config))
    return 0


@collective
def cmd_zero_shot(args) -> int:
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
    matrix = run_matrix(args.config, args.output, [t for t in (args.tags or "").split(",") if t] or None,
                        args.data_dir)
    text = matrix.to_markdown()
    atomic_write_text(Path(args.output) / "regressions.md", text)
    atomic_write_text(Path(args.output) / "regressions.html", matrix.to_html())
    print("\n## Reproduction matrix\n")
    print(text)
    print(f"matrix in {args.output}/regressions.md and .html")
    return 1 if matrix.failed else 0
