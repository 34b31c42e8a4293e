"""Comparison tables: one row per run, one column per measure, paired t-tests against a baseline
with Holm correction over the compared runs (per measure), rendered to markdown, CSV or LaTeX."""

from __future__ import annotations

import logging
import warnings
from dataclasses import dataclass
from typing import Mapping, Sequence

import numpy as np
import pandas as pd
from scipy import stats

from irglow.data.records import Qrel
from irglow.eval.measures import parse_measures, per_query
from irglow.runs.trec import Run

log = logging.getLogger(__name__)


def holm(pvalues: Sequence[float]) -> list[float]:
    """Holm–Bonferroni adjusted p-values (step-down, monotone, capped at 1)."""
    p = np.asarray(pvalues, dtype=float)
    order = np.argsort(p)
    m = len(p)
    adjusted = np.empty(m)
    running = 0.0
    for rank, i in enumerate(order):
        running = max(running, min(1.0, (m - rank) * p[i]))
        adjusted[i] = running
    return adjusted.tolist()


_LATEX_SPECIAL = {"\\": r"\textbackslash{}", "&": r"\&", "%": r"\%", "$": r"\$", "#": r"\#", "_": r"\_",
                  "{": r"\{", "}": r"\}", "~": r"\textasciitilde{}", "^": r"\textasciicircum{}"}


def latex_escape(text: str) -> str:
    """Run and measure names as LaTeX text (``bm25_title`` would otherwise start a subscript)."""
    return "".join(_LATEX_SPECIAL.get(c, c) for c in text)


@dataclass
class Comparison:
    """Means, adjusted p-values and per-query values of a set of runs."""

    means: pd.DataFrame  # run × measure
    pvalues: pd.DataFrame  # run × measure, Holm-adjusted, NaN for the baseline
    deltas: pd.DataFrame  # run × measure, mean − baseline mean
    baseline: str | None
    alpha: float
    n_queries: int
    missing: dict[str, int] | None = None  # run → judged queries it has no ranking for (scored 0)
    per_query: dict[str, dict[str, dict[str, float]]] | None = None  # run → measure → query → value
    notes: list[str] | None = None  # warnings worth a reader's eye (runs sharing few query ids with the qrels)

    def marked(self, digits: int = 4) -> pd.DataFrame:
        """Means as strings, with ▲/▼ where the difference to the baseline is significant."""
        out = self.means.map(lambda v: f"{v:.{digits}f}")
        if self.baseline is not None:
            for run in self.means.index:
                for m in self.means.columns:
                    p = self.pvalues.loc[run, m]
                    if not np.isnan(p) and p < self.alpha:
                        out.loc[run, m] += " ▲" if self.deltas.loc[run, m] > 0 else " ▼"
        return out

    def caption(self) -> str:
        missed = {r: n for r, n in (self.missing or {}).items() if n}
        note = ("" if not missed else " Judged queries missing from a run score 0 (as `trec_eval -c`): "
                + ", ".join(f"`{r}` misses {n}" for r, n in missed.items()) + ".")
        note += "".join(f" Warning: {w}." for w in self.notes or [])
        if self.baseline is None:
            return f"{self.n_queries} queries.{note}"
        return (f"{self.n_queries} queries. ▲/▼: significantly better/worse than `{self.baseline}` "
                f"(paired t-test, Holm-corrected over {len(self.means) - 1} comparisons, p < {self.alpha}).{note}")

    def to_markdown(self) -> str:
        return self.marked().to_markdown(disable_numparse=True) + "\n\n" + self.caption() + "\n"

    def to_csv(self) -> str:
        frame = self.means.copy()
        for m in self.means.columns:
            frame[f"{m} p(holm)"] = self.pvalues[m]
        return frame.to_csv()

    def to_latex(self) -> str:
        marked = self.marked().map(lambda s: s.replace(" ▲", r"$^{\blacktriangle}$").replace(" ▼", r"$^{\blacktriangledown}$"))
        marked.index = [latex_escape(str(i)) for i in marked.index]
        marked.columns = [latex_escape(str(c)) for c in marked.columns]
        body = marked.to_latex(escape=False, column_format="l" + "r" * len(marked.columns))
        return body + "% " + " ".join(self.caption().split()) + "\n"

    def render(self, fmt: str) -> str:
        return {"markdown": self.to_markdown, "md": self.to_markdown, "csv": self.to_csv, "latex": self.to_latex}[fmt]()


def compare(runs: Mapping[str, Run], qrels: list[Qrel], measures: Sequence | str,
            baseline: str | None = None, alpha: float = 0.05) -> Comparison:
    """Evaluate ``runs`` on ``qrels``; significance of each run against ``baseline``."""
    measures = parse_measures(measures) if isinstance(measures, str) or isinstance(next(iter(measures)), str) else list(measures)
    names = list(runs)
    if baseline is not None and baseline not in runs:
        raise KeyError(f"baseline {baseline!r} is not among the runs {names}")
    values = {name: per_query(measures, qrels, run) for name, run in runs.items()}
    cols = [str(m) for m in measures]
    means = pd.DataFrame({c: [np.mean(list(values[n][c].values())) for n in names] for c in cols}, index=names)
    pvals = pd.DataFrame(np.nan, index=names, columns=cols)
    deltas = means - means.loc[baseline] if baseline is not None else means * 0
    if baseline is not None:
        others = [n for n in names if n != baseline]
        for c in cols:
            qids = sorted(values[baseline][c])
            base = np.array([values[baseline][c][q] for q in qids])
            raw = []
            for n in others:
                x = np.array([values[n][c][q] for q in qids])
                diff = x - base
                with warnings.catch_warnings():  # a constant difference: scipy warns, the p-value is NaN
                    warnings.simplefilter("ignore", RuntimeWarning)
                    raw.append(1.0 if np.allclose(diff, 0) else float(stats.ttest_rel(x, base).pvalue))
            for n, p in zip(others, holm(raw) if raw else []):
                pvals.loc[n, c] = p
    judged = {q.query_id for q in qrels}
    missing = {n: sum(1 for q in judged if not runs[n].ranking.get(q)) for n in names}
    notes = [w for n in names if (w := query_overlap_warning(n, runs[n], judged))]
    for w in notes:
        log.warning("%s", w)
    return Comparison(means, pvals, deltas, baseline, alpha, len(judged), missing, values, notes)


def query_overlap_warning(name: str, run: Run, judged: set[str]) -> str | None:
    """A warning when a run shares few or none of the judged query ids (it would score ~0 silently),
    naming the likely cause: ids that differ only by leading zeros, or another split's queries."""
    ran = {q for q, docs in run.ranking.items() if docs}
    if not ran or not judged:
        return None
    shared = len(ran & judged)
    if shared >= 0.5 * len(judged) or shared >= 0.5 * len(ran):
        return None
    unpadded = {q.lstrip("0") or "0" for q in judged}
    if len({q.lstrip("0") or "0" for q in ran} & unpadded) > shared:
        cause = ("its query ids differ from the qrels' only by leading zeros (e.g. run "
                 f"{sorted(ran - judged)[0]!r}); write both with the same ids")
    else:
        cause = "is it a run of another split or topic set?"
    return (f"run `{name}` shares {shared} of its {len(ran)} query ids with the {len(judged)} judged queries: "
            f"{cause}")
