"""irglow's rankers as PyTerrier transformers, so they compose in the notebook standard of the field.  The rankers
an experiment ran become the pipelines of what that run built, trained and tuned (after ``make run``)::

    import pyterrier as pt
    from irglow import Dense, Lexical, TWBert
    from irglow.pyterrier import transformer

    systems = [Lexical("bm25"), TWBert(), Lexical("bm25f") + Dense("glow"), "monobert"]
    pt.Experiment([transformer(r, "runs/demo") for r in systems], topics, qrels, ["nDCG@10", "RR@10"])

or are built by hand from an index and trained model folders (``Lexical(index, "bm25") % 100 >>
CrossEncoder(model_dir, collection)``; docs/python.md).

``pip install irglow[pyterrier]`` (PyPI's ``pyterrier`` core).  Nothing here starts Terrier: irglow's own Lucene
index (through Pyserini) does the retrieval, so no Terrier jar is fetched and everything runs offline — PyTerrier
is used for its data frames, its operators (``>>``, ``%``, ``+``) and ``pt.Experiment``.

Frames follow PyTerrier's conventions: a query frame has ``qid`` and ``query``; a result frame adds ``docno``,
``score`` and ``rank`` (0 first).  Each transformer computes exactly what irglow's own command computes
(``irglow search``, TW-BERT's weighted Lucene queries, ``irglow rerank``, the fusion of ``irglow fuse``), so a
result frame written as a run equals the run file irglow writes (a test checks both that and the metrics).
"""

from __future__ import annotations

import json
from functools import cached_property
from pathlib import Path
from typing import Any

from irglow.index.lucene_index import LuceneIndex
from irglow.lexical.pt import QL, Lexical
from irglow.models.glow.pt import Dense, Glow
from irglow.models.rerank.pt import CrossEncoder
from irglow.models.twbert.pt import TWBert
from irglow.runs.frames import LazyDocuments, frame_to_run, run_to_frame
from irglow.runs.pt import Fusion, pt
from irglow.plan import bind_plan, ranker
from irglow.stage import unit_name
from irglow.stages import stage

__all__ = ["Lexical", "QL", "TWBert", "Dense", "Glow", "CrossEncoder", "Fusion", "transformer",
           "RunFolder", "run_to_frame", "frame_to_run"]

# -- the rankers an irglow experiment ran, as PyTerrier pipelines -------------------------------------------
def transformer(ranker, run_dir: str | Path) -> pt.Transformer:
    """``ranker`` — the object an :class:`~irglow.experiment.Experiment` ran (:mod:`irglow.rankers`) or the name of
    its run — as a PyTerrier pipeline over what that run built, trained and tuned (``run_dir``: its output folder;
    the index, BM25's settings and field weights, QL's μ, the trained models, the re-ranking depth and each
    fusion's method and weights, read from its manifest and each unit's typed result there).  The stage that made
    the run builds its transformer (:meth:`irglow.stage.Stage.transformer`, a plugin's too), its parts through
    :meth:`RunFolder.build`.  Its frames rank as the run files the pipeline wrote (a re-ranking: its re-ranked
    block)."""
    folder = RunFolder(Path(run_dir))
    return folder.build(folder.ranker(ranker))


class RunFolder:
    """One pipeline run's folder, read once: its recorded configuration bound again by the pipeline's own binding
    (:func:`irglow.plan.bind_plan`: the same graph of rankers, the same bound settings), its index and field
    weights, each unit's result, the collection's documents — what the stages build transformers from.

    Args:
        out: The run folder (``irglow run``'s ``output.dir``, an ``Experiment``'s ``out``): its ``manifest.json`` is
            read.
    """

    def __init__(self, out: str | Path):
        out = Path(out)
        manifest = json.loads((out / "manifest.json").read_text())
        self.out, self.config = out, manifest["config"]
        self.index = LuceneIndex.open(manifest["index"])
        self.field_weights = manifest.get("field_weights", {})
        self._docs: LazyDocuments | None = None
        self._results = None
        self._bound: dict[str, Any] = {}

    @cached_property
    def plan(self):
        """The recorded configuration bound (once asked: a ranker object needs only its parts' results)."""
        return bind_plan(self.config, list(self.index.fields))

    @property
    def lexical(self):
        """``[lexical]`` bound as the plan binds it (BM25's k1 and b, the depth, μ, threads)."""
        return self.bound("lexical")

    def ranker(self, spec) -> Any:
        """A ranker, or a run's name: the node of the folder's bound graph that made it (a name it made none of is
        read as a configuration would read it, and has no result here).

        Args:
            spec: A ranker (``Lexical("bm25f") + Dense("glow")``) or a run's name (``"bm25f+glow"``).
        """
        if isinstance(spec, str) and spec in self.plan.graph:
            return self.plan.graph[spec]
        return ranker(spec, self.config)

    def bound(self, section: str) -> Any:
        """The settings of the stage ``section`` bound from the recorded configuration, as the plan binds them
        (its settings class's ``from_config``): one section, without binding the rest."""
        if section not in self._bound:
            self._bound[section] = stage(section).settings_class.from_config(self.config)
        return self._bound[section]

    def result(self, node, checked: bool = True):
        """What the unit that made ``node``'s run did (:class:`~irglow.stage.Result`: the model it trained, the
        fusion's weights …), or ``None``; ``node`` a ranker of the folder's graph (its unit is named by its stage and
        run: :func:`~irglow.stage.unit_name`), or a unit's name, as its manifest records it.  A ranker named as
        a run the folder made but another ranker is refused (``checked=False``: the caller compares them itself)."""
        if self._results is None:
            from irglow.outputs import read_results

            self._results = read_results(self.out)
        if isinstance(node, str):
            return self._results.get(node)
        made = self.plan.graph[node.tag] if node.tag in self.plan.graph else None
        if checked and made is not None and made != node:  # by node: a tag alone could name another ranker's run
            raise ValueError(f"{self.out} made no {node!r}: its run {node.tag!r} is {made!r}; build that one, or run "
                             f"an experiment with this ranker")
        # the unit that made its node (an older folder's: its stage's one unit, which made all its runs)
        unit = next((u for u in (unit_name(node.stage, node.tag), node.stage) if u in self._results), None)
        return self._results.get(unit) if unit is not None else None

    @property
    def docs(self):
        if self._docs is None:
            from irglow.data.collection import load_collection

            self._docs = LazyDocuments(load_collection(self.config["collection"]["name"]))
        return self._docs.get()

    def build(self, ranker) -> pt.Transformer:
        """``ranker``'s transformer, built by the stage that made its run."""
        return stage(ranker.stage).transformer(ranker, self)
