"""One measure across collections: a row per system, a column per collection, the mean over the
collections and how many of them a system beats the baseline on — the zero-shot table.

Significance marks come from each collection's own :class:`~irglow.eval.compare.Comparison`
(paired t-test against the baseline, Holm-corrected within that collection); queries of
different collections are never pooled into one test.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Mapping

import numpy as np
import pandas as pd

from irglow.eval.compare import Comparison


@dataclass
class CrossCollection:
    values: pd.DataFrame  # system × collection, NaN where the system has no run there
    marks: pd.DataFrame  # system × collection: "▲", "▼" or ""
    measure: str
    baseline: str | None
    queries: dict[str, int]  # collection → judged queries
    notes: list[str] = field(default_factory=list)

    @classmethod
    def from_comparisons(cls, comparisons: Mapping[str, Comparison], measure: str,
                         notes: list[str] | None = None) -> CrossCollection:
        systems = list(dict.fromkeys(s for c in comparisons.values() for s in c.means.index))
        values = pd.DataFrame(np.nan, index=systems, columns=list(comparisons), dtype=float)
        marks = pd.DataFrame("", index=systems, columns=list(comparisons), dtype=object)
        baselines = {c.baseline for c in comparisons.values()}
        for name, cmp in comparisons.items():
            if measure not in cmp.means.columns:
                raise KeyError(f"{measure} is not among the measures of {name}: {list(cmp.means.columns)}")
            for system in cmp.means.index:
                values.loc[system, name] = cmp.means.loc[system, measure]
                p = cmp.pvalues.loc[system, measure]
                if p == p and p < cmp.alpha:
                    marks.loc[system, name] = "▲" if cmp.deltas.loc[system, measure] > 0 else "▼"
        return cls(values, marks, measure, baselines.pop() if len(baselines) == 1 else None,
                   {n: c.n_queries for n, c in comparisons.items()}, list(notes or []))

    def summary(self) -> pd.DataFrame:
        """``mean`` over the collections a system ran on, and ``> baseline``: on how many of those its
        mean is higher than the baseline's (``k/n``)."""
        out = pd.DataFrame(index=self.values.index)
        ran = self.values.notna().sum(axis=1)
        out["mean"] = self.values.mean(axis=1, skipna=True)
        if self.baseline in self.values.index:
            base = self.values.loc[self.baseline]
            wins = (self.values.gt(base, axis=1) & self.values.notna()).sum(axis=1)
            out[f"> {self.baseline}"] = [f"{w}/{n}" if s != self.baseline else "–"
                                         for s, w, n in zip(self.values.index, wins, ran)]
        out["collections"] = ran
        return out

    def marked(self, digits: int = 4) -> pd.DataFrame:
        table = self.values.map(lambda v: "–" if v != v else f"{v:.{digits}f}") + \
            self.marks.map(lambda m: f" {m}" if m else "")
        table = table.where(self.values.notna(), "–")
        summary = self.summary()
        table["mean"] = [f"{v:.{digits}f}" + ("" if n == len(self.values.columns) else f" ({n})")
                         for v, n in zip(summary["mean"], summary["collections"])]
        if f"> {self.baseline}" in summary:
            table[f"> {self.baseline}"] = summary[f"> {self.baseline}"]
        return table

    def caption(self) -> str:
        sizes = ", ".join(f"{n} {q}" for n, q in self.queries.items())
        text = (f"{self.measure}; judged queries per collection: {sizes}. "
                "`mean`: over the collections a system ran on (their number in brackets when not all).")
        if self.baseline:
            text += (f" ▲/▼: significantly better/worse than `{self.baseline}` on that collection (paired t-test, "
                     f"Holm-corrected within the collection, p < 0.05).")
        return text + "".join(f"\n\n- {n}" for n in self.notes)

    def to_markdown(self) -> str:
        return self.marked().to_markdown(disable_numparse=True) + "\n\n" + self.caption() + "\n"

    def to_csv(self) -> str:
        frame = self.values.copy()
        frame["mean"] = self.summary()["mean"]
        return frame.to_csv()

    def to_latex(self) -> str:
        marked = self.marked().map(lambda s: s.replace(" ▲", r"$^{\blacktriangle}$")
                                   .replace(" ▼", r"$^{\blacktriangledown}$").replace("–", "--"))
        marked.columns = [str(c).replace("_", r"\_") for c in marked.columns]
        body = marked.to_latex(escape=False, column_format="l" + "r" * len(marked.columns))
        return body + "% " + self.caption().replace("\n", "\n% ") + "\n"
