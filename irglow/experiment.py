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
each switches on the stage that writes it.  ``config`` starts from a configuration file or dict (a stage's
own settings, e.g. ``configs/demo.toml``), ``settings`` overrides dotted keys as ``--set`` does.
"""

from __future__ import annotations

import copy
from pathlib import Path
from typing import Any, Sequence

from irglow import settings as declared

LEXICAL = ("bm25", "bm25-mf", "bm25f", "tfidf")
TWBERT_RUNS = ("twbert", "twbert-rm3", "bm25-ngram")
RERANKERS = ("monobert", "nrmf")


def _glow_names() -> tuple[tuple[str, ...], tuple[str, ...]]:
    from irglow.models.glow.stage import UNTRAINED

    variants = ("bert", "glow", "glow-idf", "glow-tw", "glow-us", "glow-wt")
    return variants, UNTRAINED


class Experiment:
    """One experiment: a collection, the systems to compare, the measures and the baseline (see the module)."""

    def __init__(self, collection: str, systems: Sequence[str] = ("bm25",), measures: str | Sequence[str] | None = None,
                 baseline: str | None = None, *, train: str | Sequence[str] | None = None, train_split: str = "train",
                 test_split: str = "test", config: str | Path | dict | None = None,
                 settings: dict[str, Any] | None = None, out: str | Path | None = None, seed: int = 13):
        from irglow.config import apply_override, load_config

        base = copy.deepcopy(config) if isinstance(config, dict) else load_config(config) if config else {}
        systems = [s.replace("+rm3", "-rm3") if s.split("+")[0] in LEXICAL and s.endswith("+rm3") else s
                   for s in systems]
        if not systems:
            raise ValueError("Experiment: name at least one system, e.g. systems=['bm25', 'bm25f']")
        self.systems = list(systems)
        self.baseline = baseline or self.systems[0]
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
        for name in dict.fromkeys([self.baseline, *self.systems]):
            self._switch_on(cfg, name)
        if not isinstance(settings or {}, dict) or not all(isinstance(k, str) for k in (settings or {})):
            raise TypeError(f"Experiment(settings=…) takes a dict of dotted keys, e.g. {{'lexical.k1': 1.2}}, "
                            f"not {settings!r}")
        for key, value in (settings or {}).items():
            apply_override(cfg, f"{key}={value!r}" if not isinstance(value, str) else f"{key}={value}")
        self.config = cfg

    def _switch_on(self, cfg: dict[str, Any], name: str) -> None:
        """Enable the stage that writes run ``name`` (and, for a hybrid, its parts and the fusion)."""
        lexical = cfg.setdefault("lexical", {})
        systems = lexical.setdefault("systems", [])
        variants, untrained = _glow_names()
        if name in LEXICAL or (name.endswith("-rm3") and name[:-4] in LEXICAL):
            spec = name.replace("-rm3", "+rm3")
            if spec not in systems:
                systems.append(spec)
        elif name == "ql":
            cfg.setdefault("ql", {})["enabled"] = True
        elif name in TWBERT_RUNS:
            section = cfg.setdefault("twbert", {})
            section["enabled"] = True
            if name == "twbert-rm3":
                section["rm3"] = True
            else:
                section.setdefault("rm3", False)
        elif name in variants or name in untrained:
            section = cfg.setdefault("glow", {})
            section["enabled"] = True
            key = "variants" if name in variants else "untrained"
            names = list(section.get(key, []))
            if name not in names:
                section[key] = names + [name]
        elif name in RERANKERS:
            section = cfg.setdefault("rerank", {})
            section["enabled"] = True
            models = list(section.get("models", []))
            if name not in models:
                section["models"] = models + [name]
            if "bm25" not in systems:  # what they re-rank
                systems.append("bm25")
        elif "+" in name:
            fusion = cfg.setdefault("fusion", {})
            fusion["enabled"] = True
            entries = list(fusion.get("runs", []))
            if name not in ["+".join(e) if isinstance(e, list) else e for e in entries]:
                fusion["runs"] = entries + [name]
            for part in name.split("+"):
                self._switch_on(cfg, part)
        else:
            raise ValueError(f"Experiment: {name!r} is not a run irglow can make; systems are lexical "
                             f"({', '.join(LEXICAL)}, each +rm3), ql, {', '.join(TWBERT_RUNS)}, GLOW's "
                             f"({', '.join(variants + tuple(untrained))}), {', '.join(RERANKERS)}, or a hybrid a+b")
        if not systems:
            lexical.pop("systems")

    def check(self) -> list[str]:
        """Every setting checked (as ``irglow run`` does before any work); the runs it will produce."""
        from irglow.pipeline import check_config

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
