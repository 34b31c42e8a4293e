"""Which queries a run ranks, as a type: the runs a pipeline passes between its stages are keyed by
:class:`RunKey` — a tag and a :class:`QuerySet` — never by a tag with a prefix glued on, so a fusion asks for a
part's held-out run and a re-ranker for its first stage's training run by name, and only :meth:`RunKey.path`
knows where such a run lies on disk."""

from __future__ import annotations

from dataclasses import dataclass
from enum import Enum
from pathlib import Path
from typing import Callable, Iterator, Mapping, Sequence

from irglow.runs.trec import Run, check_run_name


class QuerySet(Enum):
    """The queries a run ranks: the evaluated split's; the training queries a model held out (a fusion tunes its
    weights on them); every training query (a re-ranker learns from its first stage's run of them)."""

    TEST = "test"
    HELD_OUT = "held-out"
    TRAINING = "training"

    @property
    def folder(self) -> str:
        """Its runs' sub-folder of the output folder (the test runs lie in the folder itself)."""
        return {"test": "", "held-out": "tuning", "training": "training"}[self.value]


@dataclass(frozen=True)
class RunKey:
    """One run a stage writes: its tag and the queries it ranks.

    Args:
        tag: The run's name (its file ``<tag>.run``).
        queries: Which queries it ranks: the test queries, the held-out training queries (a fusion tunes on them) or
            the training queries (a re-ranker learns from them).
    """

    tag: str
    queries: QuerySet = QuerySet.TEST

    @classmethod
    def of(cls, key: "str | RunKey") -> "RunKey":
        """A plain tag is its test run.

        Args:
            key: A run's tag (its test run) or a key as it is.
        """
        return key if isinstance(key, RunKey) else cls(key)

    def path(self, out: Path) -> Path:
        """``<out>/<tag>.run`` for a test run, ``<out>/<query set's folder>/<tag>.run`` for the others.

        Args:
            out: The output folder (the test split's).
        """
        folder = Path(out) / self.queries.folder if self.queries.folder else Path(out)
        return folder / f"{check_run_name(self.tag)}.run"

    def record(self) -> list[str]:
        """As a cache record or key stores it: ``[tag, query set]``."""
        return [self.tag, self.queries.value]

    @classmethod
    def from_record(cls, record: list[str]) -> "RunKey":
        """The key a run record wrote (``to_record``'s list), read back.

        Args:
            record: ``[tag, query set]`` as a stage record keeps it.
        """
        return cls(record[0], QuerySet(record[1]))

    def write(self, out: Path, run: Run) -> tuple["RunKey", Run]:
        """Write ``run`` where this key's run lies; returns ``(key, run)`` for a stage's produced runs.

        Args:
            out: The output folder.
            run: The run.
        """
        path = self.path(out)
        path.parent.mkdir(parents=True, exist_ok=True)
        run.write(path)
        return self, run


def held_out(tag: str) -> RunKey:
    """``tag``'s run of the training queries its model held out."""
    return RunKey(tag, QuerySet.HELD_OUT)


def training(tag: str) -> RunKey:
    """``tag``'s run of every training query."""
    return RunKey(tag, QuerySet.TRAINING)


class Runs(Mapping[str, Run]):
    """The runs the stages before produced: as a mapping, the test runs by tag (what a stage, a plugin's too,
    reads as ``ctx.runs["bm25"]``); :meth:`held_out` and :meth:`training` give the runs of the training queries.

    A run's stage may make its runs of training queries on demand (:meth:`irglow.stage.Stage.run_of`, which the
    pipeline hands to :meth:`add_maker`): a ranker that learned nothing from the training queries (a Lucene run)
    searches whichever a later node asks for; otherwise a node reads the run its stage wrote — a trained model's of
    the queries it held out.

    Args:
        runs: The runs already made, by tag (test runs) or by key.
    """

    def __init__(self, runs: Mapping["str | RunKey", Run] | None = None):
        self._by_key: dict[RunKey, Run] = {}
        self._makers: dict[RunKey, Callable[[Sequence], Run]] = {}
        if runs:
            self.update(runs)

    def add_maker(self, key: RunKey, make: Callable[[Sequence], Run]) -> None:
        """``make(queries)``: ``key.tag``'s run of any of ``key.queries``' queries, on the training index."""
        self._makers[key] = make

    def searchable(self, tag: str) -> bool:
        """Whether the run ``tag`` can be searched for any held-out queries (a Lucene system; a trained model gives
        only the runs it wrote)."""
        return held_out(tag) in self._makers

    def of_training_queries(self, tag: str, queries: Sequence) -> Run | None:
        """``tag``'s run of ``queries`` (training queries a fusion tunes on): searched where it ranks any, else its
        held-out run of them where it wrote one (``None``: it has none)."""
        if held_out(tag) in self._makers:
            return self._makers[held_out(tag)](queries)
        run = self.held_out(tag)
        if run is None:
            return None
        wanted = {q.query_id for q in queries}
        return Run({q: d for q, d in run.ranking.items() if q in wanted}, run.tag)

    def update(self, runs: Mapping["str | RunKey", Run]) -> None:  # type: ignore[override]
        """Add ``runs``, keyed by their run keys (a plain tag is the test split's run)."""
        for key, run in runs.items():
            self._by_key[RunKey.of(key)] = run

    def __getitem__(self, key: "str | RunKey") -> Run:
        return self._by_key[RunKey.of(key)]

    def __contains__(self, key: object) -> bool:
        return isinstance(key, (str, RunKey)) and RunKey.of(key) in self._by_key

    def __iter__(self) -> Iterator[str]:
        return (k.tag for k in self._by_key if k.queries is QuerySet.TEST)

    def __len__(self) -> int:
        return sum(1 for k in self._by_key if k.queries is QuerySet.TEST)

    def held_out(self, tag: str) -> Run | None:
        """``tag``'s run of the training queries its model held out (what a fusion is tuned on), if written."""
        return self._by_key.get(held_out(tag))

    def training(self, tag: str, queries: Sequence | None = None) -> Run | None:
        """``tag``'s run of every training query: made by its stage on demand (``queries``: every training query),
        else the one its stage wrote."""
        if training(tag) in self._makers and queries is not None:
            return self._makers[training(tag)](queries)
        return self._by_key.get(training(tag))

    def of(self, keys) -> dict[RunKey, Run]:
        """The runs among ``keys`` that exist (a unit's inputs)."""
        return {RunKey.of(k): self._by_key[RunKey.of(k)] for k in keys if RunKey.of(k) in self._by_key}
