"""``irglow run``, ``zero-shot`` and ``regressions``: their options (:mod:`irglow.commands.experiment` does the
work)."""

from __future__ import annotations

from irglow.cli.options import add_config_options, add_data_dir_option, command


def register(sub) -> None:
    """Add ``irglow run``, ``zero-shot`` and ``regressions`` to ``irglow``'s sub-commands."""
    p = sub.add_parser("regressions", help="the reproduction matrix: rerun checked-in experiments, ✓/✗ per figure")
    p.add_argument("--config", default="configs/regressions.yaml",
                   help="the reproduction matrix (default: irglow's configs/regressions.yaml, from any folder)")
    p.add_argument("--tags", help="only experiments with one of these tags, comma-separated (e.g. lexical)")
    add_data_dir_option(p)
    p.add_argument("-o", "--output", default="out/regressions", help="where each experiment's runs and the matrix "
                   "page go (default: out/regressions)")
    p.set_defaults(func=command("irglow.commands.experiment:cmd_regressions"))

    p = sub.add_parser("run", help="the end-to-end pipeline from a configuration file")
    add_config_options(p, "configs/demo.toml", "the configuration (TOML or YAML; default: irglow's configs/demo.toml, "
                       "found from any folder)", "lexical.depth=100")
    p.add_argument("--grid", action="append", default=[], metavar="KEY=V1,V2",
                   help="a grid of settings, e.g. glow.model.weight_alpha=0.25,0.5,1 or preset=a,b ([presets.<name>])")
    p.add_argument("--select-on", choices=["validation"],
                   help="train every grid point, keep the best on the validation queries carved from the training "
                        "split, run the pipeline once with it (without: every point is a full run)")
    p.set_defaults(func=command("irglow.commands.experiment:cmd_run"))

    p = sub.add_parser("zero-shot", help="train once, evaluate every system on a list of collections: one table")
    add_config_options(p, "configs/zero-shot.toml", "the configuration with a [zero_shot] section (default: irglow's "
                       "configs/zero-shot.toml)", "twbert.epochs=2")
    p.add_argument("--train", help="the training collection (overrides zero_shot.train)")
    p.add_argument("--train-split", help="its split (overrides zero_shot.train_split)")
    p.add_argument("--collections", help="comma-separated collections, each on its test split or "
                   "name@split (overrides zero_shot.collections)")
    p.add_argument("-o", "--output", help="output folder (overrides output.dir)")
    p.set_defaults(func=command("irglow.commands.experiment:cmd_zero_shot"))
