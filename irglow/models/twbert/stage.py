"""TW-BERT as a pipeline stage: train on the training source, write ``bm25-ngram``, ``twbert`` (and
``twbert-rm3``) runs.  BM25's k1 and b are ``[lexical]``'s unless ``[twbert.model]`` sets its own (the
table's caption then names them); torch is imported only when the stage works."""

from __future__ import annotations

import logging
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any

from irglow import settings as declared
from irglow.config import as_names
from irglow.rankers import TWBERT_RUNS
from irglow.stage import ModelsResult, Produced, Stage, Unit, unit_name
from irglow.data.collection import load_collection
from irglow.lexical.stage import LexicalSettings
from irglow.models.checkpoints import read_training
from irglow.models.source import keyed_train_dir
from irglow.utils.atomic import output_lock
from irglow.runs.keys import QuerySet, held_out
from irglow.runs.trec import Run, gather_runs
from irglow.utils.distributed import split

log = logging.getLogger(__name__)


@dataclass(frozen=True)
class TWBertSettings:
    """``[twbert]`` bound: its training settings (a :class:`~irglow.models.twbert.train.TrainConfig` table, the
    model's k1 and b ``[lexical]``'s unless it sets its own), whether it adds the RM3 run, a trained model to
    reuse, and the experiment's seed."""

    train: Any  # irglow.models.twbert.train.TrainConfig, bound once here
    rm3: bool
    model_dir: str | None
    seed: int | None
    runs: tuple[str, ...] = ("bm25-ngram", "twbert")  # its runs besides twbert-rm3 (which rm3 adds)

    @classmethod
    def from_config(cls, config) -> "TWBertSettings":
        from irglow.models.twbert.train import TrainConfig

        # the model's k1 and b default to [lexical]'s, so `--set lexical.k1=…` reaches bm25-ngram and twbert
        tcfg = dict(config.get("twbert", {}))
        declared.check_table("twbert", tcfg)
        tcfg.pop("enabled", None)
        lexical = LexicalSettings.from_config(config)
        model = tcfg["model"] = dict(tcfg.get("model", {}))
        model.setdefault("k1", lexical.k1)
        model.setdefault("b", lexical.b)
        rm3, model_dir = declared.take(tcfg, "twbert", "rm3"), declared.take(tcfg, "twbert", "model_dir")
        runs = as_names(declared.take(tcfg, "twbert", "runs"))
        unknown = [r for r in runs if r not in TWBERT_RUNS]
        if unknown:
            raise ValueError(f"twbert.runs: {unknown} are not TW-BERT's runs ({', '.join(TWBERT_RUNS)})")
        return cls(TrainConfig.from_dict(tcfg), rm3, model_dir, config.get("seed"), tuple(runs))


class TWBertStage(Stage):
    name = "twbert"
    settings_class = TWBertSettings
    trains = True
    collective = True  # under torchrun: data-parallel training, the queries' weights and searches split

    def tags(self, s: TWBertSettings) -> list[str]:
        return [t for t in ("bm25-ngram", "twbert", "twbert-rm3") if t in s.runs or t == "twbert-rm3" and s.rm3]

    def with_nodes(self, s: TWBertSettings, nodes) -> TWBertSettings:
        """With RM3 where its nodes have ``twbert-rm3``."""
        from dataclasses import replace

        tags = [n.tag for n in nodes]
        return replace(s, rm3="twbert-rm3" in tags, runs=tuple(tags))

    def bm25_parameters(self, s: TWBertSettings) -> dict[str, float]:
        """The k1 and b its runs score with (``[lexical]``'s unless ``[twbert.model]`` overrides them)."""
        return {"k1": s.train.model.k1, "b": s.train.model.b}

    def check_plan(self, s: TWBertSettings, plan) -> None:
        """A fusion tunes twbert's weight on the training queries TW-BERT held out; a reused ``model_dir`` holds
        out queries of the collection it was trained on, which may not be this one's (the fusion used to fail
        after every stage had run, on tuning runs sharing no query)."""
        tuned = [t for t in ("twbert", "bm25-ngram") if plan.graph.reads_held_out(t)]
        if not s.model_dir or not tuned or (plan.zero_shot is not None and plan.zero_shot.train):
            return

        held_out = set(read_training(s.model_dir).get("val_query_ids") or [])
        c = plan.collection
        train = c.train or c.name
        ours = {q.query_id for name in ([train] if isinstance(train, str) else train)
                for q in load_collection(name).queries(c.train_split)}
        if not held_out & ours:
            why = ("its training.json names no held-out query" if not held_out else
                   f"none of its {len(held_out)} held-out queries is among {train}'s {c.train_split} queries")
            raise ValueError(f"twbert.model_dir = {s.model_dir!r} reuses a trained model and fusion.runs tunes "
                             f"{' and '.join(tuned)}'s weight on the queries its training held out, but {why}: "
                             f"nothing to tune on. Train TW-BERT here (drop twbert.model_dir) or leave it out of "
                             f"fusion.runs")

    def run_of(self, ctx, tag, query_set):
        """Its run of every training query, for a re-ranker that re-ranks it and learns from its mistakes: the
        trained model's weights (the n-gram prior's for ``bm25-ngram``) searched on the training index, made when
        that re-ranker trains.  Its held-out queries' runs are the ones its unit writes (out of fold)."""
        if query_set is not QuerySet.TRAINING or tag not in ("twbert", "bm25-ngram"):
            return None

        def make(queries):
            from irglow.models.twbert.model import TWBert
            from irglow.models.twbert.search import prior_queries, twbert_search, weigh_queries

            model = TWBert.load(self.trained(ctx.settings, ctx.source, ctx.train_root))
            index = ctx.source.index
            weighted = weigh_queries(model, index, queries) if tag == "twbert" else \
                prior_queries(index, queries, model.config)
            return twbert_search(model if tag == "twbert" else None, index, queries, depth=ctx.lexical.depth, tag=tag,
                                 weighted=weighted, config=model.config)
        return make

    def transformer(self, ranker, folder):
        """``twbert``: its weighted queries in Lucene, with the model the run used."""
        from irglow.models.twbert.pt import TWBert

        if ranker.tag != "twbert":
            return super().transformer(ranker, folder)
        return TWBert(folder.result(ranker).models["twbert"], folder.index, folder.lexical.depth,
                      folder.lexical.threads)

    def node(self, tag, s: TWBertSettings, node_of):
        from irglow.rankers import TWBert

        return TWBert(tag)

    def resolved(self, s: TWBertSettings):
        return {"train": asdict(s.train), "rm3": s.rm3, "model_dir": s.model_dir}

    def reused_models(self, s: TWBertSettings) -> dict[str, Path]:
        return {"twbert": Path(s.model_dir)} if s.model_dir else {}

    def train(self, s: TWBertSettings, source, train_root: Path, bm25=None, nodes=()) -> dict[str, Path]:
        """Train (or find trained, or reuse ``model_dir``) the stage's model: ``{"twbert": model directory}``.  Its
        candidates are scored with its own declared ``[twbert.model]`` k1 and b (the differentiable BM25 it learns
        through equals Lucene's with those), not ``bm25``'s."""
        if s.model_dir:
            return {"twbert": Path(s.model_dir)}
        trainer = self._trainer(s, source, train_root)
        with output_lock(trainer.out):  # shared by every output folder: one trains it, another then finds it
            return {"twbert": trainer.train(source.index, source.stats, source.queries(), source.qrels())}

    @staticmethod
    def _trainer(s: TWBertSettings, source, train_root: Path):
        from irglow.models.twbert.train import Trainer

        train_dir = keyed_train_dir(Path(train_root) / "twbert-train",
                                    {"settings": asdict(s.train), "seed": s.seed, "source": source.digest})
        return Trainer(s.train, train_dir)

    def trained(self, s: TWBertSettings, source, train_root: Path) -> Path:
        """The model :meth:`train` gave, without training again (the first of its runs' units trained it); trained
        where it is not there yet."""
        if s.model_dir:
            return Path(s.model_dir)
        kept = self._trainer(s, source, train_root).kept()
        if (kept / "twbert.json").is_file():
            log.info("twbert: found trained in %s; nothing to train", kept)
            return kept
        return self.train(s, source, train_root)["twbert"]

    def units(self, node, ctx) -> list[Unit]:
        """One unit per run: the model trained once (kept by content, found again by the other runs' units), its
        queries weighted and searched for this run, and the run of its held-out training queries where a fusion
        tunes on it."""
        tag = node.tag
        return [Unit(unit_name(self.name, tag), self.resolved(ctx.settings), {}, lambda: self.run(ctx, tag), (tag,),
                     collective=self.collective)]

    def run(self, ctx, tag: str = "twbert") -> Produced:
        """The run ``tag`` (``twbert``, ``twbert-rm3`` or ``bm25-ngram``) of the test queries."""
        from irglow.models.twbert.model import budget_summary

        with budget_summary(f"TW-BERT stage ({tag})"):  # one line for every query cut to the token budget
            return self._run(ctx, tag)

    def _run(self, ctx, tag: str) -> Produced:
        from irglow.models.twbert.model import TWBert
        from irglow.models.twbert.search import prior_queries, twbert_search, weigh_queries

        source, index, queries, depth = ctx.source, ctx.index, ctx.test_queries, ctx.lexical.depth
        model_dir = self.trained(ctx.settings, source, ctx.train_root)  # trained once: the first run's unit trains it
        model = TWBert.load(model_dir)
        mine = split(queries)  # under torchrun: this rank's share of the queries, gathered below
        if tag == "bm25-ngram":
            run = twbert_search(None, index, mine, depth=depth, tag=tag, weighted=prior_queries(index, mine, model.config),
                                config=model.config)
        else:
            run = twbert_search(model, index, mine, depth=depth, tag=tag, weighted=weigh_queries(model, index, mine),
                                **({"expansion": "rm3"} if tag == "twbert-rm3" else {}))
        runs = gather_runs({tag: run}, queries)
        runs[tag].write(ctx.out / f"{tag}.run")

        def on_training_index(qs: list, by=None):
            """``tag``'s run of training queries on the training index (TW-BERT's weights — ``by``'s, else the
            stage's model — or the n-gram prior)."""
            mine, weigher = split(qs), by or model
            weighted = weigh_queries(weigher, source.index, mine) if tag == "twbert" else \
                prior_queries(source.index, mine, model.config)
            return gather_runs({tag: twbert_search(weigher if tag == "twbert" else None, source.index, mine,
                                                   depth=depth, tag=tag, weighted=weighted, config=model.config)},
                               qs)[tag]

        def out_of_fold(folds: list[dict]):
            """A cross-validated model's tuning run: each training query scored by the fold's model that held it
            out (so a fusion is tuned on runs of queries their model never trained on)."""
            ranking = {}
            for f in folds:
                held = set(f["held_out"])
                part = on_training_index([q for q in source.queries() if q.query_id in held],
                                         TWBert.load(Path(model_dir).parent / f["model"]))
                ranking.update(part.ranking)
            return Run(ranking, "twbert")

        # the held-out training queries, for the pipeline's fusion (zero-shot too: the weights tuned there are
        # carried over)
        info = read_training(model_dir)
        ids = set(info.get("val_query_ids", []))
        folds = info.get("cross_validation", {}).get("fold_models")
        tune_q = [q for q in source.queries() if q.query_id in ids]
        if tag in ("twbert", "bm25-ngram") and ctx.reads_held_out(tag) and tune_q:
            run = out_of_fold(folds) if tag == "twbert" and folds else on_training_index(tune_q)
            runs.update([held_out(tag).write(ctx.out, run)])
        return Produced(runs, ModelsResult({"twbert": str(model_dir)}))
