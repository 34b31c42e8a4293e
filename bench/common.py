"""Arguments and configuration shared by the train → test benchmarks (bench/glow.py, bench/rerank.py)."""

from __future__ import annotations

import argparse
from pathlib import Path

from irglow.config import apply_override, load_config


def train_test_parser(doc: str, model_help: str, config: str) -> argparse.ArgumentParser:
    ap = argparse.ArgumentParser(description=doc, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--train", required=True, help="BEIR folder or ir_datasets id")
    ap.add_argument("--train-split", required=True)
    ap.add_argument("--test", required=True, help="BEIR folder or ir_datasets id (another one: zero-shot)")
    ap.add_argument("--test-split", required=True)
    ap.add_argument("--out", required=True)
    ap.add_argument("--model", help=model_help)
    ap.add_argument("--config", default=config)
    ap.add_argument("--set", action="append", default=[], metavar="KEY=VALUE")
    ap.add_argument("--depth", type=int, default=1000)
    ap.add_argument("--data-dir")
    return ap


def section(path: str, name: str, overrides: list[str], drop: tuple[str, ...] = ()) -> dict:
    """The ``[name]`` section of a config file (if it exists) with ``--set`` overrides applied."""
    cfg = load_config(path).get(name, {}) if Path(path).is_file() else {}
    for item in overrides:
        apply_override(cfg, item)
    for key in ("enabled", *drop):
        cfg.pop(key, None)
    return cfg
