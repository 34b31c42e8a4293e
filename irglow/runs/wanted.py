"""Which extra runs the stages write for the ones after them: a fusion's tuning runs (the held-out training
queries of each model it names) and a re-ranker's training runs.  Read from ``[fusion]`` alone, so the stage
interface and every model stage can ask without importing the fusion stage (no import circle)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from irglow.config import as_names, flag
from irglow.runs.trec import Run

TUNING = "tuning/"  # run tags under this prefix are runs of the tuning (held-out training) queries
ALL = "all"  # fusion.runs = ["all"]: every run of the experiment that can be tuned, fused at the end


def components(config: dict[str, Any]) -> list[list[str]]:
    """The configured hybrids, each as its list of run tags (``["all"]`` for the all-runs fusion)."""
    fs = config.get("fusion", {})
    if not flag(config, "fusion"):
        return []
    out = []
    for entry in _entries(fs):
        parts = entry.split("+") if isinstance(entry, str) else list(entry)
        out.append([str(p) for p in parts])
    return out


def _entries(fs: dict[str, Any]):
    """``fusion.runs`` as written: a list, or one ``"a+b,a+b+c"`` string (``--set``, ``FUSE=``)."""
    entries = fs.get("runs", [])
    return as_names(entries) if isinstance(entries, str) else entries


def fused_tags(config: dict[str, Any]) -> list[str]:
    return ["+".join(parts) for parts in components(config)]


def wants_tuning(config: dict[str, Any], tag: str) -> bool:
    """Whether a stage should also write ``tag``'s run of its held-out training queries (a fusion uses it)."""
    return any(tag in parts or parts == [ALL] for parts in components(config))


TRAINING = "training/"  # runs of every training query, written for a re-ranker that re-ranks that run


def write_tuning_run(out: Path, tag: str, run: Run, prefix: str = TUNING) -> tuple[str, Run]:
    """``<out>/tuning/<tag>.run`` (or ``training/``), returned under the tag the stage cache and the later
    stages know it by."""
    (Path(out) / prefix).mkdir(parents=True, exist_ok=True)
    run.write(Path(out) / f"{prefix}{tag}.run")
    return prefix + tag, run
