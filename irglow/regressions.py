"""The reproduction matrix: Pyserini's two-click reproductions, done with irglow's own pipeline.

``configs/regressions.yaml`` lists experiments: a collection and split, a pipeline configuration (or
just the lexical systems), and the figures each system must reproduce within a tolerance.  Every
experiment runs through :func:`irglow.pipeline.run_pipeline` (so its stage cache and manifests apply),
and the result is a ✓/✗ matrix in markdown and HTML; any drift is a non-zero exit.  An experiment
whose collection is not on this machine is *skipped* and said so, never counted as passing silently.
"""

from __future__ import annotations

import html
import logging
import math
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any
from irglow.config import config_path, load_config
from irglow.data.collection import load_collection
from irglow.lexical.systems import lexical_systems
from irglow.pipeline import run_pipeline

log = logging.getLogger(__name__)

ENTRY_KEYS = {"name", "collection", "folder", "about", "train", "train_folder", "train_split", "test_split", "config",
              "set", "tags", "tolerance", "expect", "optional", "published"}
# published figures an experiment reproduces: Pyserini's two-click reproductions (2CR), read from the installed package
PUBLISHED_SOURCES = {"pyserini-2cr-beir": ("2cr", "beir.yaml")}


@dataclass
class Cell:
    experiment: str
    system: str
    measure: str
    expected: float
    tolerance: float
    actual: float | None = None
    skipped: str | None = None
    failed: str | None = None  # why the experiment could not run (a required collection that is missing)

    @property
    def ok(self) -> bool:
        return self.actual is not None and math.isfinite(self.actual) and \
            abs(self.actual - self.expected) <= self.tolerance + 1e-12

    def text(self) -> str:
        if self.skipped:
            return "– skipped"
        if self.failed:
            return f"✗ {self.failed}"
        if self.actual is None:
            return f"✗ missing (expected {self.expected:.4f})"
        if self.ok:
            return f"✓ {self.actual:.4f}"
        return f"✗ {self.actual:.4f} (expected {self.expected:.4f} ± {self.tolerance:g}, Δ {self.actual - self.expected:+.4f})"


@dataclass
class Matrix:
    cells: list[Cell] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)

    @property
    def failed(self) -> list[Cell]:
        return [c for c in self.cells if not c.skipped and not c.ok]

    def frame(self):
        import pandas as pd

        rows: dict[tuple[str, str], dict[str, str]] = {}
        for c in self.cells:
            rows.setdefault((c.experiment, c.system), {})[c.measure] = c.text()
        frame = pd.DataFrame.from_dict(rows, orient="index").fillna("")
        frame.index = [f"{e} / {s}" for e, s in frame.index]
        return frame

    def summary(self) -> str:
        checked = [c for c in self.cells if not c.skipped]
        return (f"{len(checked) - len(self.failed)} of {len(checked)} figures reproduced"
                + (f", {len(self.cells) - len(checked)} skipped" if len(checked) < len(self.cells) else "")
                + (f"; {len(self.failed)} drifted" if self.failed else ""))

    def to_markdown(self) -> str:
        text = self.frame().to_markdown(disable_numparse=True) + "\n\n" + self.summary() + ".\n"
        return text + "".join(f"\n- {n}" for n in self.notes) + ("\n" if self.notes else "")

    def to_html(self) -> str:
        frame = self.frame()
        head = "".join(f"<th>{html.escape(str(c))}</th>" for c in frame.columns)
        body = []
        for idx, row in frame.iterrows():
            cells = "".join(f'<td class="{"ok" if v.startswith("✓") else "bad" if v.startswith("✗") else "skip"}">'
                            f"{html.escape(v)}</td>" for v in row)
            body.append(f"<tr><th>{html.escape(str(idx))}</th>{cells}</tr>")
        notes = "".join(f"<li>{html.escape(n)}</li>" for n in self.notes)
        return ("<!doctype html><meta charset='utf-8'><title>irglow regressions</title><style>"
                "td,th{padding:4px 8px;border:1px solid #ccc;font-family:monospace}.ok{background:#e6f4ea}"
                ".bad{background:#fce8e6}.skip{color:#888}</style>"
                f"<table><tr><th></th>{head}</tr>{''.join(body)}</table><p>{html.escape(self.summary())}.</p>"
                f"<ul>{notes}</ul>")


def load_matrix_spec(path: str | Path) -> list[dict[str, Any]]:
    import yaml

    path = config_path(path)  # configs/regressions.yaml: irglow's own, from any folder
    try:
        spec = yaml.safe_load(path.read_text(encoding="utf-8"))
    except yaml.YAMLError as e:
        raise ValueError(f"{path}: not valid YAML: {e}") from None
    entries = spec.get("experiments") if isinstance(spec, dict) else None
    if not isinstance(entries, list):
        raise ValueError(f"{path}: expected 'experiments:' with a list of experiments")
    default_tolerance = float(spec.get("tolerance", 1e-4))
    for i, e in enumerate(entries):
        where = f"{path}: experiments[{i}]"
        if not isinstance(e, dict) or not {"name", "collection", "expect"} <= set(e):
            raise ValueError(f"{where} needs name, collection and expect")
        unknown = set(e) - ENTRY_KEYS
        if unknown:
            raise ValueError(f"{where} ({e['name']}): unknown key(s) {sorted(unknown)}; known: {sorted(ENTRY_KEYS)}")
        e.setdefault("tolerance", default_tolerance)
        e.setdefault("tags", [])
        if not isinstance(e.get("optional", False), bool):
            raise ValueError(f"{where} ({e['name']}): optional = {e['optional']!r} must be true or false")
        if e.get("config"):
            e["config"] = str((path.parent / e["config"]) if (path.parent / e["config"]).exists() else e["config"])
        e["id"] = str(e["collection"])  # what the pages name (an ir_datasets id where there is one)
        folder = resolve_collection(str(e["folder"]), path.parent) if e.get("folder") else None
        # the same collection as a local BEIR folder, where this machine has one (no download)
        e["collection"] = folder if folder and (Path(folder) / "corpus.jsonl").is_file() else \
            resolve_collection(str(e["collection"]), path.parent)
        if e.get("train"):  # zero-shot: the models train on another collection (the same local-folder rule)
            e["train_id"] = str(e["train"])
            train_folder = resolve_collection(str(e["train_folder"]), path.parent) if e.get("train_folder") else None
            e["train"] = train_folder if train_folder and (Path(train_folder) / "corpus.jsonl").is_file() else \
                resolve_collection(str(e["train"]), path.parent)
        if e.get("published") is not None:
            published_figures(e["published"], f"{where} ({e['name']})")  # a wrong reference named before any run
        for system, values in e["expect"].items():
            for measure, value in values.items():
                if not isinstance(value, (int, float)):
                    raise ValueError(f"{where} ({e['name']}): expect.{system}.{measure} = {value!r} is not a number")
    return entries


def published_figures(published: dict[str, Any], where: str = "published") -> dict[str, dict[str, float]]:
    """The published figures an experiment's runs reproduce, by run and measure: ``published`` names a source
    (:data:`PUBLISHED_SOURCES`), its ``dataset`` and, per run, the source's condition (``{bm25: bm25-flat}``).  Read
    from the installed package's own file (Pyserini's ``2cr/beir.yaml``), so no figure is copied by hand."""
    import importlib.util

    import yaml

    source, dataset, runs = published.get("source"), published.get("dataset"), published.get("runs")
    if source not in PUBLISHED_SOURCES or not isinstance(dataset, str) or not isinstance(runs, dict):
        raise ValueError(f"{where}: published needs source (one of {sorted(PUBLISHED_SOURCES)}), dataset and runs "
                         f"({{run: condition}}), not {published!r}")
    package = importlib.util.find_spec("pyserini")  # its folder, without importing it (and the JVM with it)
    if package is None or not package.submodule_search_locations:
        raise ValueError(f"{where}: {source} needs pyserini installed (its 2CR files hold the published figures)")
    table = yaml.safe_load(Path(package.submodule_search_locations[0], *PUBLISHED_SOURCES[source]).read_text())
    conditions = {c["name"]: {d["dataset"]: d["scores"][0] for d in c["datasets"]} for c in table["conditions"]}
    out = {}
    for run, condition in runs.items():
        if dataset not in conditions.get(condition, {}):
            raise ValueError(f"{where}: {source} has no {condition!r} figures for {dataset!r}")
        out[run] = {m: float(v) for m, v in conditions[condition][dataset].items()}
    return out


def _is_path(collection: str) -> bool:
    """A folder (``./x``, ``../x``, ``/x``, ``~/x``), not a demo spec or an ir_datasets id (``beir/scifact``)."""
    return collection.startswith((".", "/", "~"))


def resolve_collection(collection: str, folder: Path) -> str:
    """A collection folder named in a matrix file, relative to that file (wherever irglow runs from); demo
    specs and ir_datasets ids as they are."""
    if collection.startswith("demo"):
        return collection
    beside = folder / Path(collection).expanduser()
    if _is_path(collection) or beside.exists():
        return str(beside.resolve()) if not Path(collection).expanduser().is_absolute() else \
            str(Path(collection).expanduser())
    return collection


def _available(collection: str, split: str = "test") -> str | None:
    """Why a collection cannot be run here, or ``None``."""
    if collection.startswith("demo"):
        return None
    if not _is_path(collection) and not Path(collection).exists():  # an ir_datasets id: can it be had here?
        try:
            load_collection(collection).queries(split)
        except Exception as e:  # noqa: BLE001 - offline, not downloaded, an unknown id: said in the matrix's notes
            return f"{collection} cannot be loaded here ({type(e).__name__}: {str(e).splitlines()[0][:200] if str(e) else ''})"
        return None
    return None if (Path(collection) / "corpus.jsonl").is_file() else f"{collection} is not on this machine"


def run_matrix(spec_path: str | Path, out: str | Path, tags: list[str] | None = None,
               data_dir: str | None = None) -> Matrix:
    """Run every experiment of ``spec_path`` (those with one of ``tags``, when given) and check its figures."""
    matrix = Matrix()
    out = Path(out)
    for e in load_matrix_spec(spec_path):
        if tags and not set(tags) & set(e["tags"]):
            continue
        cells = [Cell(e["name"], s, m, float(v), float(e["tolerance"])) for s, ms in e["expect"].items()
                 for m, v in ms.items()]
        matrix.cells.extend(cells)
        missing = _available(str(e["collection"]), e.get("test_split", "test")) or \
            (_available(str(e["train"]), e.get("train_split", "train")) if e.get("train") else None)
        if missing:  # skipped only when the matrix says the experiment is optional; else a failure
            for c in cells:
                c.skipped, c.failed = (missing, None) if e.get("optional") else (None, "collection not found")
            matrix.notes.append(f"{e['name']}: {'skipped (optional)' if e.get('optional') else 'FAILED'}, {missing}")
            continue
        config = load_config(e.get("config"), e.get("set", []))
        measures = list(dict.fromkeys(c.measure for c in cells))
        config["collection"] = {**config.get("collection", {}), "name": str(e["collection"]),
                                "train_split": e.get("train_split", "train"), "test_split": e.get("test_split", "test"),
                                **({"train": str(e["train"])} if e.get("train") else {})}
        config.setdefault("eval", {})
        config["eval"].update({"measures": measures, "permutations": 100, "pairs": None})
        if not e.get("config"):
            config["lexical"] = {**config.get("lexical", {}),
                                 "systems": [s for s in e["expect"] if s.removesuffix("-rm3") in lexical_systems()]}
            config["eval"]["baseline"] = config["lexical"]["systems"][0]
        if data_dir:
            config["data_dir"] = data_dir
        config.setdefault("output", {})["dir"] = str(out / e["name"])
        # the matrix checks figures: its experiments write no results page (each ranked document's term
        # contributions, a MiniLM encoding of every query) unless their configuration asks for one
        config["output"].setdefault("page", False)
        means = run_pipeline(config).comparison.means  # the comparison itself, not its CSV read back
        for c in cells:
            if c.system in means.index and c.measure in means.columns:
                c.actual = float(means.loc[c.system, c.measure])
    return matrix
