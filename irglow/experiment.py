"""An experiment a notebook or script can call: the same pipeline as ``irglow run``, its configuration built
from a few arguments, its result the comparison object ``irglow compare`` renders — not a folder.

    from irglow import Experiment, Lexical, Dense, Fusion, MonoBERT, Rerank, TWBert
    hybrid = Lexical("bm25f") + Dense("glow")
    exp = Experiment("beir/scifact", systems=[Lexical("bm25"), TWBert(), hybrid, hybrid >> MonoBERT()],
                     measures="nDCG@10 R@100")
    cmp = exp.run()          # cached by content exactly like `irglow run`
    cmp.table(); cmp.per_query("nDCG@10"); cmp.pairs()

``systems`` are rankers (:mod:`irglow.rankers`: objects that compose and nest) or the names of their runs, read
the same way: ``bm25``, ``bm25-rm3``, ``bm25f``, ``ql``, ``twbert``, ``glow``, ``minilm``, ``monobert`` (over BM25),
``monobert(twbert)`` (over another run), ``bm25f+glow`` (a fusion), ``bm25+monobert(bm25f+glow)``; each switches on
what makes it, and nothing else runs: the systems, their parts, what trains them and the baseline.  The baseline is
the first system unless named.  ``config`` supplies settings (a configuration file or dict, e.g.
``configs/demo.toml``: its ``[…] enabled`` switches and run lists say what ``irglow run`` compares, and are not
read here), ``settings`` overrides dotted keys as ``--set`` does.
"""

from __future__ import annotations

import copy
from pathlib import Path
from typing import Any, Sequence

from irglow.defaults import BASELINE, SEED
from irglow.config import apply_override, include_sections, load_config
from irglow.pipeline import run_pipeline
from irglow.plan import bind_sealed, parsed, settings_only
from irglow.rankers import Ranker, written
from irglow.utils.atomic import atomic_write_text


class Experiment:
    """One experiment: a collection, the systems to compare, the measures and the baseline (see the module).

    Args:
        collection: What to evaluate on: an ir_datasets id (``beir/scifact``), a BEIR folder, a TREC collection
            folder or ``demo`` (the embedded collection); its ``test_split`` is evaluated.
        systems: The rankers to compare (``Lexical("bm25")``, ``TWBert()``, ``Lexical("bm25f") + Dense("glow")``,
            ``first >> MonoBERT()`` …) or their run names (``"bm25"``, ``"monobert(twbert)"``); each switches on
            the stages that make it.
        measures: ir_measures names, as a list or one string (``"nDCG@10 R@100"``); unset: the configuration's
            ``[eval] measures``, else irglow's defaults.
        baseline: The ranker the others are tested against (significance marks, risk); unset: the first system.
        train: The collection(s) trained models learn from; unset: ``collection`` itself (its ``train_split``).
        train_split: The split of the training collection the models learn from.
        test_split: The split evaluated.
        config: A configuration file (``configs/demo.toml``, any path, or a shipped ``configs/<name>``) or a
            dict to start from: each stage's own settings; the arguments here are laid on it.  Its switches and
            lists of runs (``enabled``, ``lexical.systems``, ``glow.variants``, ``rerank.models``, ``fusion.runs`` …)
            are left out: only ``systems`` say what runs.
        settings: Dotted overrides, as ``--set`` gives them: ``{"lexical.k1": 1.2, "glow.epochs": 2}``.
        out: The output folder (runs, tables, report, manifest); unset: ``runs/experiments/<collection>``.
        seed: The experiment's seed (sampling, the shared held-out queries); unset: the file's, else 13.

    Attributes:
        config: The configuration the arguments were written into (what :meth:`save` writes).
        plan: That configuration bound, once, when the experiment was made (:class:`~irglow.plan.Plan`): what
            :meth:`run` runs. A change to ``config`` afterwards is not seen: make another experiment.
        rankers: The runs compared, as the plan's graph's nodes (equal to the rankers given).

    Raises:
        ValueError: A setting that is misspelt, out of range or contradicted by another ranker, named with its key,
            before any work.
    """

    def __init__(self, collection: str, systems: Sequence[Any] = ("bm25",), measures: str | Sequence[str] | None = None,
                 baseline: Any = None, *, train: str | Sequence[str] | None = None, train_split: str = "train",
                 test_split: str = "test", config: str | Path | dict | None = None,
                 settings: dict[str, Any] | None = None, out: str | Path | None = None, seed: int | None = None):
        base = copy.deepcopy(config) if isinstance(config, dict) else load_config(config) if config else {}
        if not systems:
            raise ValueError("Experiment: name at least one system, e.g. systems=['bm25', 'bm25f']")
        # a name read once, here (an object is taken as it is); the nodes come from binding
        rankers = [s if isinstance(s, Ranker) else parsed(s, base) for s in systems]
        first = rankers[0] if baseline is None else baseline if isinstance(baseline, Ranker) else parsed(baseline, base)
        self.baseline = first.tag
        cfg = settings_only(base)  # the file's settings; which runs are made is the systems' to say
        cfg["seed"] = seed if seed is not None else cfg.get("seed", SEED)  # an argument given wins over the file
        cfg["collection"] = {**cfg.get("collection", {}), "name": str(collection), "train_split": train_split,
                             "test_split": test_split}
        if train is not None:
            cfg["collection"]["train"] = train if isinstance(train, str) else list(train)
        # the file's [output] kept (page, clusters …); the folder is out= (an experiment's own, not the file's)
        _section_of(cfg, "output")["dir"] = str(out or Path("runs") / "experiments" / _label(str(collection)))
        ev = cfg.setdefault("eval", {})
        if measures is not None:
            ev["measures"] = measures.split() if isinstance(measures, str) else list(measures)
        systems_given: list = []  # the baseline first: the runs compared (one ranker given twice, once)
        for r in [first, *rankers]:
            if all(r is not g for g in systems_given):
                systems_given.append(r)
        for r in systems_given:  # what a ranker sets for a whole section (QL(mu=500): [lexical] mu), never its run
            r.settings_of(cfg)
        if not isinstance(settings or {}, dict) or not all(isinstance(k, str) for k in (settings or {})):
            raise TypeError(f"Experiment(settings=…) takes a dict of dotted keys, e.g. {{'lexical.k1': 1.2}}, "
                            f"not {settings!r}")
        for key, value in (settings or {}).items():
            apply_override(cfg, f"{key}={value!r}" if not isinstance(value, str) else f"{key}={value}")
        self._settings = include_sections(cfg)  # a section's config = "file", as loading a file lays it
        self._systems = tuple(systems_given)
        self._config = None
        # bound once, now, from the rankers as objects: a wrong setting stops here, before any work
        self.plan = bind_sealed(copy.deepcopy(self._settings), rankers=self._systems)
        self.rankers = [self.plan.graph[r.tag] for r in rankers]  # the bound graph's nodes (equal to the rankers given)

    @property
    def config(self) -> dict[str, Any]:
        """The configuration the experiment is: its settings with its rankers written in (:func:`irglow.rankers.written`,
        the one writer), what :meth:`save` writes and ``irglow run --config`` runs."""
        if self._config is None:
            self._config = written(copy.deepcopy(self._settings), self._systems, self.baseline)
        return self._config

    def check(self) -> list[str]:
        """The runs it will produce (every setting was checked when it was built, as ``irglow run`` checks before
        any work)."""
        return list(self.plan.tags)

    def run(self):
        """Run its plan (every stage cached by content, as ``irglow run``) and return the comparison of the test split
        (``.table()``, ``.per_query(measure)``, ``.pairs()``, ``.to_markdown()`` …)."""
        return run_pipeline(self.plan).comparison

    def save(self, path: str | Path) -> Path:
        """The experiment as a configuration file (``irglow run --config`` runs it; :meth:`load` reads it).

        Args:
            path: The file to write (YAML; written atomically).

        Returns:
            The path written.
        """
        import yaml

        path = Path(path)
        return atomic_write_text(path, yaml.safe_dump(self.config, sort_keys=False))

    @classmethod
    def load(cls, path: str | Path) -> "Experiment":
        """A saved experiment as it was saved (the file says every setting; nothing is switched on again).

        Args:
            path: A file :meth:`save` wrote (or any configuration whose ``[eval]`` names its runs).
        """
        config = load_config(path)
        ev = config.get("eval", {})
        exp = cls.__new__(cls)
        exp._config = config
        exp.baseline = ev.get("baseline", BASELINE)
        exp.plan = bind_sealed(copy.deepcopy(config))
        exp.rankers = [exp.plan.graph[s] for s in dict.fromkeys([exp.baseline, *ev.get("runs", [])])]
        return exp

    @property
    def systems(self) -> list[str]:
        """The runs compared: each ranker's tag."""
        return [r.tag for r in self.rankers]

    def __repr__(self) -> str:
        return (f"Experiment({self.config['collection']['name']!r}, systems={self.systems!r}, "
                f"baseline={self.baseline!r}, out={self.config['output']['dir']!r})")


def _section_of(config: dict[str, Any], name: str) -> dict[str, Any]:
    section = config.setdefault(name, {})
    if not isinstance(section, dict):
        raise ValueError(f"[{name}] must be a table of settings, not {section!r}")
    return section


def _label(collection: str) -> str:
    import re

    base = collection.rstrip("/").split("/")[-1] if not collection.startswith("demo") else collection
    return re.sub(r"[^A-Za-z0-9.=,_-]+", "-", base).strip("-") or "collection"
