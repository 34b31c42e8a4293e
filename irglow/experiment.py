"""An experiment a notebook or script can call: the same pipeline as ``irglow run``, its configuration built
from a few arguments, its result the comparison object ``irglow compare`` renders — not a folder.

    from irglow import Experiment
    exp = Experiment("../shared/data/scifact", systems=["bm25", "bm25f", "twbert"], measures="nDCG@10 R@100",
                     baseline="bm25")
    cmp = exp.run()          # cached by content exactly like `irglow run`
    cmp.table(); cmp.per_query("nDCG@10"); cmp.pairs()

``systems`` names runs: lexical systems (``bm25``, ``bm25+rm3``, ``bm25-mf``, ``bm25f``, ``tfidf``), ``ql``,
TW-BERT's (``twbert``, ``twbert-rm3``, ``bm25-ngram``), GLOW's (``bert``, ``glow``, ablations, the untrained
``minilm`` …), re-rankers (``monobert``, ``nrmf``) and hybrids (``bm25f+glow``, ``twbert+glow+monobert``);
each switches on the stage that writes it.  A system may also be an object of the plan: ``Hybrid(["bm25",
"glow"], method="rrf")`` or ``Hybrid([...], weights=[0.3, 0.7])`` (a fusion with its own method or fixed weights),
``Reranked("monobert", first_stage="twbert")`` (a re-ranker over a given first stage).  ``config`` starts from a configuration file or dict (a stage's
own settings, e.g. ``configs/demo.toml``), ``settings`` overrides dotted keys as ``--set`` does.
"""

from __future__ import annotations

import copy
from pathlib import Path
from typing import Any, Sequence

from irglow import settings as declared
from irglow.defaults import SEED

class Experiment:
    """One experiment: a collection, the systems to compare, the measures and the baseline (see the module)."""

    def __init__(self, collection: str, systems: Sequence[str] = ("bm25",), measures: str | Sequence[str] | None = None,
                 baseline: str | None = None, *, train: str | Sequence[str] | None = None, train_split: str = "train",
                 test_split: str = "test", config: str | Path | dict | None = None,
                 settings: dict[str, Any] | None = None, out: str | Path | None = None, seed: int = SEED):
        from irglow.config import apply_override, load_config

        base = copy.deepcopy(config) if isinstance(config, dict) else load_config(config) if config else {}
        systems = [s[:-4] + "-rm3" if isinstance(s, str) and s.endswith("+rm3") and s.count("+") == 1 else s
                   for s in systems]
        if not systems:
            raise ValueError("Experiment: name at least one system, e.g. systems=['bm25', 'bm25f']")
        self.systems = [getattr(s, "tag", s) for s in systems]  # a Hybrid or Reranked object: its run's tag
        self.baseline = getattr(baseline, "tag", baseline) or self.systems[0]
        cfg = base
        cfg["seed"] = cfg.get("seed", seed)
        cfg["collection"] = {**cfg.get("collection", {}), "name": str(collection), "train_split": train_split,
                             "test_split": test_split}
        if train is not None:
            cfg["collection"]["train"] = train if isinstance(train, str) else list(train)
        cfg["output"] = {"dir": str(out or Path("runs") / "experiments" / _label(str(collection)))}
        ev = cfg.setdefault("eval", {})
        if measures is not None:
            ev["measures"] = measures.split() if isinstance(measures, str) else list(measures)
        ev["baseline"] = self.baseline
        ev["runs"] = [s for s in dict.fromkeys(self.systems) if s != self.baseline]
        for run in [baseline or systems[0], *systems]:
            self._switch_on(cfg, run)
        if not isinstance(settings or {}, dict) or not all(isinstance(k, str) for k in (settings or {})):
            raise TypeError(f"Experiment(settings=…) takes a dict of dotted keys, e.g. {{'lexical.k1': 1.2}}, "
                            f"not {settings!r}")
        for key, value in (settings or {}).items():
            apply_override(cfg, f"{key}={value!r}" if not isinstance(value, str) else f"{key}={value}")
        self.config = cfg

    def _switch_on(self, cfg: dict[str, Any], name) -> None:
        """Enable the stage that writes run ``name`` and the runs it is made from (a re-ranker's first stage, a
        hybrid's parts): each stage knows its own runs (:meth:`irglow.stage.Stage.switch_on`), so a new stage
        needs nothing here."""
        from irglow.stages import STAGES

        for stage in STAGES:
            if stage.switch_on(cfg, name):
                for part in stage.needs(cfg, name):
                    self._switch_on(cfg, part)
                return
        raise ValueError(f"Experiment: {name!r} is not a run irglow can make; systems are "
                         f"{', '.join(n for s in STAGES for n in s.run_names())}")

    def check(self) -> list[str]:
        """Every setting checked (as ``irglow run`` does before any work); the runs it will produce."""
        from irglow.plan import check_config

        return check_config(copy.deepcopy(self.config))

    def run(self):
        """Run it (every stage cached by content, as ``irglow run``) and return the comparison of the test split
        (``.table()``, ``.per_query(measure)``, ``.pairs()``, ``.to_markdown()`` …)."""
        from irglow.pipeline import run_pipeline

        return run_pipeline(copy.deepcopy(self.config)).comparison

    def save(self, path: str | Path) -> Path:
        """The experiment as a configuration file (``irglow run --config`` runs it; :meth:`load` reads it)."""
        import yaml

        from irglow.utils.atomic import atomic_write_text

        path = Path(path)
        return atomic_write_text(path, yaml.safe_dump(self.config, sort_keys=False))

    @classmethod
    def load(cls, path: str | Path) -> "Experiment":
        from irglow.config import load_config

        config = load_config(path)
        ev = config.get("eval", {})
        baseline = ev.get("baseline", "bm25")
        c = config.get("collection", {})
        name, train_split, test_split = (declared.value(config, "collection", k)
                                         for k in ("name", "train_split", "test_split"))
        return cls(name, [baseline, *ev.get("runs", [])], baseline=baseline, config=config, train=c.get("train"),
                   train_split=train_split, test_split=test_split, out=config.get("output", {}).get("dir"))

    def __repr__(self) -> str:
        return (f"Experiment({self.config['collection']['name']!r}, systems={self.systems!r}, "
                f"baseline={self.baseline!r}, out={self.config['output']['dir']!r})")


def _label(collection: str) -> str:
    import re

    base = collection.rstrip("/").split("/")[-1] if not collection.startswith("demo") else collection
    return re.sub(r"[^A-Za-z0-9.=,_-]+", "-", base).strip("-") or "collection"
