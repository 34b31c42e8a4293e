"""Zero-shot evaluation (``irglow zero-shot``, ``make zero-shot``): models trained once on one
collection, then every system of the configuration run on a list of collections it never saw.

The configuration is the pipeline's (lexical systems, enabled neural stages, measures) plus::

    [zero_shot]
    train = "beir/scifact"          # what the models (and tuned BM25F weights) learn from
    train_split = "train"
    measure = "nDCG@10"             # the cross-collection table's measure
    collections = ["beir/nfcorpus", { name = "disks45/nocr/trec-robust-2004", split = "" }]

A collection given as a string is evaluated on its ``test`` split (``"name@dev"``: on ``dev``);
``split = ""`` takes the id's own queries and qrels.  Each collection gets the pipeline's folder (runs, table, per-query plot,
manifest) under ``<out>/<collection>/``; ``<out>/zero-shot.{md,csv,tex,png}`` hold one table.
A collection that cannot be loaded (no network, licence-gated, a missing folder) is named in the
table's notes with what was wanted, and the others still run.  Nothing is tuned on an evaluated
collection: BM25F weights come from the training collection, a hybrid's weights are tuned on the training
collection's held-out queries and carried over (``[fusion] zero_shot``), and the evaluated judgments are read
only after every run is written.
"""

from __future__ import annotations

import dataclasses
import logging
import re
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pandas as pd

from irglow.config import write_manifest
from irglow.data.collection import load_collection
from irglow.eval.cross import CrossCollection
from irglow.eval.plots import grouped_bars, plot_forest
from irglow.hybrid import FusionResult
from irglow.outputs import read_results
from irglow.pipeline import evaluate_split
from irglow.preparation import Prepared, index_and_stats, models_root, training_side
from irglow.plan import CollectionSettings, bind_plan
from irglow.utils.atomic import atomic_write_text
from irglow.utils.distributed import barrier, check_shared_folder, is_main
from irglow.data.irds import DatasetUnavailableError, UnknownDatasetError
from irglow.eval.report import add_images

log = logging.getLogger(__name__)



def fused_parts(folder: Path) -> dict[str, list[str]]:
    """Each hybrid a collection's pipeline wrote, with the runs it fused (``all``: every run there), from the
    results its manifest records."""
    return {r.tag: list(r.parts) for r in read_results(folder).values() if isinstance(r, FusionResult) and r.parts}


class NoCollectionError(RuntimeError):
    """Not one listed collection could be loaded: the notes say why for each."""


def label(name: str, split: str) -> str:
    """A short column name and folder name: ``beir/nfcorpus`` + ``test`` → ``nfcorpus-test``,
    ``beir/webis-touche2020/v2`` → ``webis-touche2020-v2-test``, a folder → its name."""
    if name.startswith("beir/"):  # the BEIR name, sub-versions kept: beir/webis-touche2020/v2
        base = name[len("beir/"):].replace("/", "-")
    else:
        base = name.rstrip("/").split("/")[-1] if not name.startswith("demo") else name
    base = re.sub(r"[^A-Za-z0-9.=,_-]+", "-", base).strip("-")
    return f"{base}-{split}" if split else base


def _load(name: str, split: str, plan, notes: list[str], column: str):
    """(collection, index, statistics), or ``None`` with a note saying why it could not be loaded: no
    network or a licence (what ir_datasets wanted, and where), an unknown id, a missing folder, or
    files a loader cannot read — one such collection must not lose the others."""
    try:
        collection = load_collection(name)
        if not collection.qrels(split):  # before the index is built: a collection without judgments is skipped
            raise ValueError(f"no judgments for split {split!r}")
        index, stats = index_and_stats(collection, plan.setup, {})
        return collection, index, stats
    except (DatasetUnavailableError, UnknownDatasetError, FileNotFoundError) as e:
        reason = str(e)
    except KeyError as e:  # a split without a qrels file
        reason = str(e.args[0]) if e.args else str(e)
    except Exception as e:  # noqa: BLE001 — a loader failing on a collection's files
        log.debug("%s (%s) could not be loaded", name, split, exc_info=True)  # one line below, no traceback
        reason = f"it could not be loaded ({type(e).__name__}: {e})"
    log.warning("%s (%s): not evaluated: %s", name, split, reason)
    notes.append(f"{column} not evaluated: {reason}")
    return None


def training_names(train_coll) -> set[str]:
    """The names of the collections the models learn from: the training collection, or each source of a union."""
    return {train_coll.name, *(c.name for c, _ in getattr(train_coll, "parts", []))}


CONTENT_SAMPLE = 2000  # documents of an evaluated collection looked up among the training side's


def _text_key(text: str) -> int:
    """A document's or query's text, whitespace-normalised and case-folded, as a number (what is shared is the
    content: a copy of a folder under another name, or the same collection through ir_datasets)."""
    import hashlib

    return int.from_bytes(hashlib.blake2b(" ".join(text.split()).casefold().encode(), digest_size=8).digest(), "big")


SHARED_FRACTION = 0.01  # in-domain from this share of the sampled documents or of the queries seen in training
# (below it: pages two corpora share by chance — an empty page, a page of stopwords — not a copy of a corpus)


def _substantial(text: str) -> bool:
    return bool(text.strip())


def doc_sample(collection) -> list[int]:
    """Content keys of ``collection``'s first :data:`CONTENT_SAMPLE` non-empty documents (empty ones share
    nothing)."""
    import itertools

    texts = (t for d in collection.docs_iter() if _substantial(t := d.contents()))
    return [_text_key(t) for t in itertools.islice(texts, CONTENT_SAMPLE)]


def shared_between(samples: dict[str, list[int]]) -> list[str]:
    """Notes for listed collections that share documents with each other (two splits of one corpus, one
    collection under two names): their effects are not independent evidence, which the pooled mean assumes."""
    notes, names = [], list(samples)
    for i, a in enumerate(names):
        for b in names[i + 1:]:
            common = len(set(samples[a]) & set(samples[b]))
            if common:
                notes.append(f"{a} and {b} share documents ({common} of the first {len(samples[a])} and "
                             f"{len(samples[b])}): the pooled effect counts that corpus twice, so it is not "
                             f"independent evidence")
    return notes


@dataclass
class Seen:
    """What chose anything in training (the training collection's documents and queries, every validation
    source's): an evaluated collection sharing either is in-domain, whatever its name."""

    docs: set[int]
    queries: set[int]

    @classmethod
    def of(cls, collections: list[tuple[Any, list]]) -> "Seen":
        docs, queries = set(), set()
        for collection, qs in collections:
            docs.update(_text_key(t) for d in collection.docs_iter() if _substantial(t := d.contents()))
            queries.update(_text_key(q.text) for q in qs if q.text.strip())
        return cls(docs, queries)

    def shared(self, collection, queries) -> str | None:
        """How much of ``collection`` was seen in training, in words; ``None`` when less than
        :data:`SHARED_FRACTION` of its sampled documents and of its queries was (a few pages two corpora share by
        chance do not make a collection a training one)."""
        sample = doc_sample(collection)
        docs = sum(k in self.docs for k in sample)
        qs = [_text_key(q.text) for q in queries if q.text.strip()]
        shared_q = sum(k in self.queries for k in qs)
        if docs < max(1, SHARED_FRACTION * len(sample)) and shared_q < max(1, SHARED_FRACTION * len(qs)):
            return None
        return (f"{docs} of its first {len(sample)} documents and {shared_q} of its {len(qs)} queries occur in the "
                f"collections training or validation chose on")


def _write_table(out: Path, table: CrossCollection, train_name: str, train_split: str, measure: str,
                 folders: dict[str, str]) -> None:
    """The cross-collection table as markdown, CSV and LaTeX, its bar plot, and where effects pool, the forest
    plot (also added to each collection's page) and the pooled effects as CSV."""
    atomic_write_text(out / "zero-shot.md", f"# Zero-shot: trained on {train_name}/{train_split}\n\n"
                      + table.to_markdown())
    atomic_write_text(out / "zero-shot.csv", table.to_csv())
    atomic_write_text(out / "zero-shot.tex", table.to_latex())
    grouped_bars(table.values, table.marks, out / "zero-shot.png",
                 f"{measure}, trained on {train_name}"
                 + (f"; ▲/▼ vs {table.baseline}" if table.baseline else ""))
    pooled = table.pooled()
    if not pooled:
        return

    forest = plot_forest(pooled, table.intervals(), out / "zero-shot-forest.png", measure, table.baseline)
    for folder in folders.values():  # each collection's page shows the pooled picture too
        if (Path(folder) / "report.html").is_file():
            add_images(Path(folder) / "report.html",
                       {"pooled effect over the unseen collections (zero-shot forest plot)": forest.read_bytes()})
    atomic_write_text(out / "zero-shot-pooled.csv", pd.DataFrame(
        {s: {"effect": p.effect, "ci_low": p.ci_low, "ci_high": p.ci_high, "i2": p.i2, "tau2": p.tau2, "q": p.q,
             "collections": p.k, "excluded_identical": p.excluded} for s, p in pooled.items()}).T.to_csv())


def run_zero_shot(config: dict[str, Any]) -> Path:
    plan = bind_plan({**config, "zero_shot": config.get("zero_shot") or {}})  # every setting, before any work
    if hasattr(config, "seal"):  # bound: nothing below reads the configuration (irglow.config.SealedConfig)
        config.seal()
    zs = plan.zero_shot
    if not zs.train:
        raise ValueError("[zero_shot] train is missing: the collection the models are trained on")
    specs, measure = list(zs.collections), zs.measure
    out = zs.output_dir
    out.mkdir(parents=True, exist_ok=True)
    check_shared_folder(out)  # under torchrun: every rank sees what rank 0 writes, or nothing starts

    timings: dict[str, float] = {}
    t = time.perf_counter()
    # the pipeline's own training side: models (and each multi-field system's weights) learn from zs.train
    train_plan = plan.with_setup(collection=CollectionSettings("", zs.train, zs.train_split,
                                                              plan.collection.test_splits))
    source, weights = training_side(train_plan.setup, timings)
    train_coll, train_split = source.collection, source.split
    plan, lexical = plan.with_fields(list(source.index.fields)), plan.lexical
    timings["train_collection_s"] = time.perf_counter() - t

    # by content, not by name: the training collection (each part of a union) and every validation source
    seen = Seen.of([(train_coll, list(source.queries())),
                    *((v.collection, list(v.queries)) for v in getattr(source, "validation", ()))])
    results, notes, folders, in_domain, samples = {}, [], {}, [], {}
    models = models_root()  # the models trained once for every collection, shared with other output folders
    for name, split in specs:
        column = label(name, split)
        while column in folders or any(n.startswith(f"{column} not evaluated") for n in notes):
            column += "'"  # two collections with the same short name keep both columns
        t = time.perf_counter()
        loaded = _load(name, split, plan, notes, column)
        if loaded is not None:  # a collection that loaded is evaluated; a failure there is a bug, and stops
            collection, index, stats = loaded
            # one experiment per collection, the models trained once for every one
            prepared = Prepared.trained_elsewhere(collection, index, stats, source, lexical, weights, split,
                                                  out / column, models)
            results[column] = evaluate_split(plan.evaluating(name, split, train_split), prepared, split, out / column)
            folders[column] = str(out / column)
            shared = seen.shared(collection, collection.queries(split))
            samples[column] = doc_sample(collection)
            if collection.name in training_names(train_coll) or shared:
                in_domain.append(column)
                notes.append(f"{column} is a training collection ({split} split): in-domain, not zero-shot, so it "
                             f"is left out of the pooled effect" + (f" ({shared})." if shared else "."))
        timings[f"{column}_s"] = time.perf_counter() - t

    if not is_main():  # under torchrun the cross-collection table is rank 0's
        barrier()
        return out
    if not results:
        raise NoCollectionError("no collection could be evaluated:\n" + "\n".join(notes))
    notes += shared_between({c: k for c, k in samples.items() if c not in in_domain})
    table = CrossCollection.from_comparisons(results, measure, notes, in_domain)
    table.notes += table.against_checkpoints({m: c for s, bound in plan.stages
                                              for m, c in s.starting_checkpoints(bound).items()})
    table.notes += table.against_parts({column: fused_parts(Path(folder)) for column, folder in folders.items()})
    _write_table(out, table, train_coll.name, train_split, measure, folders)
    write_manifest(out, plan.manifest_config(), seed=plan.seed, trained_on=[train_coll.name, train_split],
                   collections=folders, unavailable=[n for n in notes if "not evaluated" in n],
                   field_weights=weights, timings={k: round(v, 3) for k, v in timings.items()})
    print(f"\n## Zero-shot ({measure}): trained on {train_coll.name}/{train_split}\n")
    print(table.to_markdown())
    print(f"tables, plot and manifest in {out}/")
    barrier()
    return out
