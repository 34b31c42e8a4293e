"""Comparison tables: one row per run, one column per measure, rendered to markdown, CSV or LaTeX.

Against a baseline every cell carries a paired significance test (``randomization`` by default,
or ``t``, ``bootstrap``, ``wilcoxon``; see :mod:`irglow.eval.significance`), corrected over the
compared runs per measure (``holm``, ``bonferroni``, ``bh``, ``none``), the difference Δ with its
95% CI, and wins/ties/losses over queries.  Every table also shows ``Judged@10`` (unjudged documents
count as non-relevant and penalise exactly the new systems), optionally the condensed-list view
(``judged_only``: unjudged documents removed before scoring, Sakai SIGIR 2007), URisk/TRisk against
the baseline, and with ``pairs="all"`` a randomized Tukey HSD over every pair with letter groups.
"""

from __future__ import annotations

import logging
from dataclasses import dataclass, field
from typing import Mapping, Sequence

import numpy as np
import pandas as pd

from irglow.data.records import Qrel
from irglow.data.sources import readable
from irglow.eval import significance as sig, vectorized
from irglow.eval.measures import computable, parse_measures, per_query, summary, summed
from irglow.runs.columns import RankedRun, read_ranked
from irglow.runs.trec import Run
from irglow.settings import DECLARED
from irglow.utils.forked import forked_map

log = logging.getLogger(__name__)

JUDGED_AT = 10
JUDGED = f"Judged@{JUDGED_AT}"
JUDGED_SHARE = 0.75  # a run whose Judged@10 is below this share of the baseline's gets a caption warning
TEST_NAMES = {"randomization": "paired randomization test", "t": "paired t-test", "bootstrap": "paired bootstrap test",
              "wilcoxon": "Wilcoxon signed-rank test"}
CORRECTION_NAMES = {"holm": "Holm-corrected", "bonferroni": "Bonferroni-corrected",
                    "bh": "Benjamini–Hochberg (FDR) adjusted", "none": "uncorrected"}


def holm(pvalues: Sequence[float]) -> list[float]:
    """Holm–Bonferroni adjusted p-values (step-down, monotone, capped at 1).

    Args:
        pvalues: The raw p-values of one family (one measure's comparisons).
    """
    return sig.adjust(pvalues, "holm")


_LATEX_SPECIAL = {"\\": r"\textbackslash{}", "&": r"\&", "%": r"\%", "$": r"\$", "#": r"\#", "_": r"\_",
                  "{": r"\{", "}": r"\}", "~": r"\textasciitilde{}", "^": r"\textasciicircum{}"}


def latex_escape(text: str) -> str:
    """Run and measure names as LaTeX text (``bm25_title`` would otherwise start a subscript).

    Args:
        text: Plain text (a run's name, a note).
    """
    return "".join(_LATEX_SPECIAL.get(c, c) for c in text)


def latex_caption(text: str) -> str:
    """A markdown caption as LaTeX text: escaped, `code` as \\texttt, the marks and symbols as math.

    Args:
        text: The caption in markdown (``**bold**``, ``code``).
    """
    import re

    out = latex_escape(" ".join(text.split()))
    out = re.sub(r"`([^`]*)`", r"\\texttt{\1}", out)
    for plain, tex in (("▲", r"$^{\blacktriangle}$"), ("▼", r"$^{\blacktriangledown}$"), ("Δ", r"$\Delta$"),
                       ("≥", r"$\geq$"), ("≤", r"$\leq$"), ("−", "-"), ("–", "--"), ("α", r"$\alpha$"),
                       ("τ²", r"$\tau^2$"), ("I²", r"$I^2$"), ("·", r"$\cdot$"), ("ⁿ", r"$^n$"), ("→", r"$\to$")):
        out = out.replace(plain, tex)
    return out


def latex_table(tabular: str, caption: str) -> str:
    """A ``table`` float: the tabular and its caption (the legend of every mark), so a compiled table
    explains itself; needs ``amssymb`` for the marks.

    Args:
        tabular: The table's ``tabular`` environment.
        caption: Its caption, in LaTeX.
    """
    return ("% needs \\usepackage{amssymb} (the marks) and \\usepackage{booktabs}\n\\begin{table}\n\\centering\n"
            + tabular + f"\\caption{{{latex_caption(caption)}}}\n\\end{{table}}\n")


@dataclass
class Comparison:
    """Means, tests, effect sizes and per-query values of a set of runs (what :func:`compare` returns).

    Args:
        means: Each run's mean of each measure (run × measure).
        pvalues: Each run's p-value against the baseline, corrected (run × measure; NaN for the baseline).
        deltas: Each run's mean minus the baseline's (run × measure).
        baseline: The run every other is tested against (``None``: no tests).
        alpha: The level a corrected p-value is significant at.
        n_queries: The judged queries evaluated.
        missing: Judged queries each run has no ranking for (scored 0).
        values_per_query: Each run's value of each measure on each query (run → measure → query → value).
        notes: Warnings worth a reader's eye (runs sharing few query ids with the judgments …).
        test: The significance test (``randomization``, ``t``, ``bootstrap``, ``wilcoxon``).
        correction: The multiple-comparison correction (``holm``, ``bonferroni``, ``bh``, ``none``).
        permutations: The randomization test's sign flips (or bootstrap samples).
        raw_pvalues: The p-values before correction (run × measure).
        ci_low: The lower end of each difference's 95 % confidence interval (run × measure).
        ci_high: The upper end of each difference's 95 % confidence interval (run × measure).
        wtl: Each run's queries won, tied and lost against the baseline (run → measure → (wins, ties, losses)).
        judged: Each run's Judged@10 (the share of its top 10 that is judged).
        risk: URisk and TRisk against the baseline on the first measure (run × column).
        risk_p: The p-values of the TRisk statistics.
        pair_p: Every pair of runs' Tukey HSD adjusted p on the first measure (run × run).
        groups: Each run's letters: runs sharing a letter cannot be told apart.
        show_ci: Whether the table shows Δ [CI] beside each mean.
        condensed: The columns scored on judged documents only (condensed lists, ``'`` after the measure).
        tested: Whether there were enough queries for any test (``False``: no p-values, no marks).
        totals: The count columns (``NumRet`` …), summed over the queries as trec_eval does.
    """

    means: pd.DataFrame  # run × measure
    pvalues: pd.DataFrame  # run × measure, corrected, NaN for the baseline
    deltas: pd.DataFrame  # run × measure, mean − baseline mean
    baseline: str | None
    alpha: float
    n_queries: int
    missing: dict[str, int] | None = None  # run → judged queries it has no ranking for (scored 0)
    values_per_query: dict[str, dict[str, dict[str, float]]] | None = None  # run → measure → query → value
    notes: list[str] | None = None  # warnings worth a reader's eye (runs sharing few query ids with the qrels)
    test: str = "t"
    correction: str = "holm"
    permutations: int = sig.DEFAULT_PERMUTATIONS
    raw_pvalues: pd.DataFrame | None = None  # run × measure, before correction
    ci_low: pd.DataFrame | None = None  # run × measure, 95% CI of Δ
    ci_high: pd.DataFrame | None = None
    wtl: dict[str, dict[str, tuple[int, int, int]]] | None = None  # run → measure → (wins, ties, losses)
    judged: pd.Series | None = None  # run → Judged@10
    risk: pd.DataFrame | None = None  # run × URisk/TRisk columns, first measure
    risk_p: pd.DataFrame | None = None
    pair_p: pd.DataFrame | None = None  # run × run: Tukey HSD adjusted p (first measure)
    groups: dict[str, str] | None = None  # run → letters; runs sharing a letter cannot be told apart
    show_ci: bool = False
    condensed: list[str] = field(default_factory=list)  # columns scored on judged documents only
    tested: bool = True  # False: too few queries for any test (no p-values, no marks)
    totals: list[str] = field(default_factory=list)  # count columns: summed over the queries, as trec_eval does

    # -- cells -----------------------------------------------------------------------------------
    def significant(self, run: str, measure: str) -> bool:
        """Whether ``run`` differs from the baseline on ``measure`` at the table's corrected level."""
        p = self.pvalues.loc[run, measure]
        return bool(p == p and p < self.alpha)

    def marked(self, digits: int = 4, ci: bool = True) -> pd.DataFrame:
        """Means as strings, ▲/▼ where the difference to the baseline is significant, Δ [CI] with ``show_ci``
        (``ci=False``: left to :meth:`ci_cells`), then Judged@10 and the Tukey groups where computed.

        Args:
            digits: Decimals shown.
            ci: Whether Δ [CI] is shown beside the means (with ``show_ci``).
        """
        out = pd.DataFrame({m: [f"{v:.0f}" if m in self.totals and v == v else f"{v:.{digits}f}"
                                for v in self.means[m]] for m in self.means.columns}, index=self.means.index)
        if self.baseline is not None:
            for run in self.means.index:
                for m in self.means.columns:
                    if self.significant(run, m):
                        out.loc[run, m] += " ▲" if self.deltas.loc[run, m] > 0 else " ▼"
                    cell = self.ci_cell(run, m, digits) if ci else ""
                    out.loc[run, m] += f" ({cell})" if cell else ""
        if self.judged is not None:
            out[JUDGED] = [f"{self.judged[r]:.3f}" for r in out.index]
        if self.groups:
            out["group"] = [self.groups.get(r, "") for r in out.index]
        return out

    def ci_cell(self, run: str, measure: str, digits: int = 4) -> str:
        """``Δ [low, high]`` of ``run`` against the baseline on ``measure`` (empty where none is shown).

        Args:
            run: A run of the table.
            measure: A measure of the table.
            digits: Decimals shown.
        """
        if not (self.show_ci and self.tested and run != self.baseline and self.ci_low is not None):
            return ""
        return (f"{self.deltas.loc[run, measure]:+.{digits - 1}f} [{self.ci_low.loc[run, measure]:+.{digits - 1}f}, "
                f"{self.ci_high.loc[run, measure]:+.{digits - 1}f}]")

    def to_terminal(self, width: int) -> str:
        """The markdown a terminal of ``width`` columns shows whole: Δ [CI] stacked in a row under each run's
        values (as the results page does), tables split into blocks of columns that fit, prose wrapped."""
        table = self.marked(ci=False)
        if self.show_ci and self.tested and self.ci_low is not None:
            rows = []
            for run in table.index:
                rows.append((run, table.loc[run]))
                cells = {m: self.ci_cell(run, m) for m in self.means.columns}
                if any(cells.values()):
                    rows.append(("  Δ [CI]", pd.Series({c: cells.get(c, "") for c in table.columns})))
            table = pd.DataFrame([r for _, r in rows], index=[i for i, _ in rows], columns=table.columns)
        parts = [fit_markdown(table, width), wrap(self.caption(), width)]
        risk, pairs = self.risk_table(), self.pairs_table()
        if risk is not None:
            parts.append(wrap(self.risk_intro(), width) + "\n\n" + fit_markdown(risk, width))
        if pairs is not None:
            parts.append(wrap(self.pairs_intro(), width) + "\n\n" + fit_markdown(pairs, width))
        return "\n\n".join(parts) + "\n"

    def judged_warnings(self) -> list[str]:
        """One warning naming every run whose Judged@10 is well below the baseline's."""
        if self.judged is None or self.baseline is None:
            return []
        base = self.judged[self.baseline]
        # relative: on sparse qrels (SciFact: the baseline's Judged@10 is 0.088) an absolute gap never fires
        low = [r for r, v in self.judged.items() if r != self.baseline and v < JUDGED_SHARE * base]
        unjudged, missed = [], []
        for r in low:
            n_missed = (self.missing or {}).get(r, 0)
            answered = self.n_queries - n_missed
            # a query the run misses counts 0 here too: over the queries it answers the rate may be the baseline's
            on_answered = self.judged[r] * self.n_queries / answered if answered else 0.0
            if n_missed and on_answered >= JUDGED_SHARE * base:
                missed.append(f"`{r}` {self.judged[r]:.3f} ({on_answered:.3f} over the {answered} queries it answers; "
                              f"it misses {n_missed})")
            else:
                unjudged.append(f"`{r}` {self.judged[r]:.3f}")
        out = []
        if unjudged:
            out.append(f"{JUDGED} below {JUDGED_SHARE:.0%} of the baseline's {base:.3f} for {', '.join(unjudged)}: "
                       f"unjudged documents count as non-relevant, so these scores are likely underestimated"
                       + ("" if self.condensed else " (see the condensed view, --judged-only)"))
        if missed:
            out.append(f"{JUDGED} below {JUDGED_SHARE:.0%} of the baseline's {base:.3f} for {', '.join(missed)}: "
                       f"because of the queries it misses, which score 0 on every measure, not because of "
                       f"unjudged documents")
        return out

    def test_description(self) -> str:
        """The test as a reader needs it: name, draws (every sign vector enumerated, or how many sampled),
        sidedness, correction and the threshold."""
        n = self.n_queries
        if self.test == "randomization":
            draws = (f"exact: all {2 ** n:,} sign vectors" if n <= 20 and 2 ** n <= self.permutations
                     else f"{self.permutations:,} random sign flips")
        elif self.test == "bootstrap":
            draws = f"{self.permutations:,} resamples, shift method"
        elif self.test == "wilcoxon":
            draws = "zero differences dropped (Wilcoxon's method), normal approximation above 50 queries"
        else:
            draws = "Student's t with n − 1 degrees of freedom"
        others = len(self.means) - 1
        corrected = ("one comparison per measure (nothing to correct)" if others == 1 else
                     f"{CORRECTION_NAMES[self.correction]} over {others} comparisons per measure")
        return f"{TEST_NAMES[self.test]} ({draws}), two-sided, {corrected}, p < {self.alpha}"

    def ci_description(self) -> str:
        """How the confidence intervals were made, as the caption says it."""
        if self.test == "t":
            return "95% CI: Student's t interval, not adjusted for multiple comparisons"
        return (f"95% CI: paired bootstrap percentile interval ({self.permutations:,} resamples), not adjusted "
                f"for multiple comparisons, so it can exclude 0 where the corrected test gives no mark")

    def caption(self) -> str:
        """The table's caption: the queries, what the marks mean (test, correction, level), and every warning (queries
        missing from a run, few judged documents)."""
        missed = {r: n for r, n in (self.missing or {}).items() if n}
        note = ("" if not missed else " Judged queries missing from a run score 0 (as `trec_eval -c`): "
                + ", ".join(f"`{r}` misses {n}" for r, n in missed.items()) + ".")
        note += "".join(f" Warning: {w}." for w in [*(self.notes or []), *self.judged_warnings()])
        if self.condensed:
            note += " Columns marked ' are scored on judged documents only (condensed lists)."
        if self.totals:
            note += (f" {', '.join(self.totals)}: totals over the queries (as trec_eval sums them; NumQ counts "
                     "every judged query, as `trec_eval -c`).")
        if self.groups:
            note += (f" `group`: runs sharing a letter cannot be told apart on {self.means.columns[0]} (randomized "
                     f"Tukey HSD over all pairs, {self.permutations:,} permutations, p ≥ {self.alpha}).")
        queries = f"{self.n_queries} quer{'y' if self.n_queries == 1 else 'ies'}."
        if self.baseline is None or len(self.means) < 2:  # one run: nothing was compared, nothing to say of tests
            return f"{queries}{note}"
        if not self.tested:
            return (f"{queries} No significance marks: fewer than {sig.min_queries(self.alpha)} queries, the fewest "
                    f"on which an exact paired test can reach p < {self.alpha}.{note}")
        ci = f" Δ [{self.ci_description()}] to the baseline in brackets." if self.show_ci else ""
        return (f"{queries} ▲/▼: significantly better/worse than `{self.baseline}` ({self.test_description()})."
                f"{ci}{note}")

    # -- extra tables ----------------------------------------------------------------------------
    def risk_table(self, digits: int = 4) -> pd.DataFrame | None:
        """URisk and TRisk against the baseline as strings (``*`` where TRisk is significant), or ``None`` when not
        computed.

        Args:
            digits: Decimals shown.
        """
        if self.risk is None or self.risk.empty:
            return None
        out = self.risk.map(lambda v: "–" if v != v else "∞" if v == float("inf") else "−∞" if v == float("-inf")
                            else f"{v:.{digits}f}")
        for c in self.risk.columns:
            if c.startswith("TRisk"):
                for r in self.risk.index:
                    p = self.risk_p.loc[r, c]
                    if p == p and p < self.alpha:
                        out.loc[r, c] += " *"
        return out

    def pairs_table(self) -> pd.DataFrame | None:
        """Every pair's randomized Tukey HSD adjusted p-value as strings, or ``None`` when not computed."""
        if self.pair_p is None:
            return None
        return self.pair_p.map(lambda p: "–" if p != p else f"{p:.3f}")

    def risk_intro(self) -> str:
        """The sentence that introduces the risk table."""
        return (f"Risk against `{self.baseline}` on {self.means.columns[0]} (URisk: mean of per-query gains minus "
                f"(1+α)·losses; TRisk: its t statistic, * where |TRisk| is significant at p < {self.alpha}; Dinçer "
                f"et al., SIGIR 2014):")

    def pairs_intro(self) -> str:
        """The sentence that introduces the pairs table."""
        return (f"All pairs on {self.means.columns[0]}: randomized Tukey HSD adjusted p-values "
                f"({self.permutations:,} permutations):")

    def extras_markdown(self) -> str:
        """The risk and pairs tables, each with its introduction, in markdown (empty when neither was computed)."""
        parts = []
        risk = self.risk_table()
        if risk is not None:
            parts.append(self.risk_intro() + "\n\n" + risk.to_markdown(disable_numparse=True))
        pairs = self.pairs_table()
        if pairs is not None:
            parts.append(self.pairs_intro() + "\n\n" + pairs.to_markdown(disable_numparse=True))
        return "".join("\n" + p + "\n" for p in parts)

    # -- for notebooks: the objects behind the rendered table ---------------------------------------
    def table(self) -> pd.DataFrame:
        """The table as ``irglow compare`` prints it (means with marks, Judged@10); ``caption()`` is its legend."""
        return self.marked()

    def per_query(self, measure: str | None = None) -> pd.DataFrame:
        """Query × run values of ``measure`` (default: the first), the numbers every test is computed on."""
        measure = str(measure or self.means.columns[0])
        if measure not in self.means.columns:
            raise KeyError(f"{measure} is not a measure of this comparison: {list(self.means.columns)}")
        return pd.DataFrame({run: values[measure] for run, values in (self.values_per_query or {}).items()})

    def pairs(self, measure: str | None = None) -> pd.DataFrame:
        """Run × run Tukey HSD adjusted p-values on ``measure`` (default: the first): the all-pairs view, computed
        here when the comparison was made without ``pairs="all"``."""
        measure = str(measure or self.means.columns[0])
        if self.pair_p is not None and measure == str(self.means.columns[0]):
            return self.pair_p
        frame = self.per_query(measure)
        if len(frame) < sig.min_queries(self.alpha):
            return pd.DataFrame(np.nan, index=frame.columns, columns=frame.columns)
        p = pd.DataFrame(sig.tukey_hsd(frame.to_numpy(), self.permutations), index=frame.columns, columns=frame.columns)
        for i in range(len(p)):
            p.iloc[i, i] = np.nan
        return p

    # -- renderings ------------------------------------------------------------------------------
    def to_markdown(self) -> str:
        """The table in markdown (means, ▲/▼ marks, Δ [CI] with ``show_ci``), its caption and the extra tables:
        ``results.md``."""
        return self.marked().to_markdown(disable_numparse=True) + "\n\n" + self.caption() + "\n" + \
            self.extras_markdown()

    def to_csv(self) -> str:
        """Always every number: mean, Δ, CI, raw and adjusted p, wins/ties/losses per measure."""
        index = self.means.index
        # every column gathered, then one frame (a column inserted at a time fragments it: pandas warned per column)
        columns: dict = {m: self.means[m] for m in self.means.columns}
        for m in self.means.columns:
            columns[f"{m} delta"] = self.deltas[m]
            if self.ci_low is not None:
                columns[f"{m} ci_low"] = self.ci_low[m]
                columns[f"{m} ci_high"] = self.ci_high[m]
            if self.raw_pvalues is not None:
                columns[f"{m} p"] = self.raw_pvalues[m]
            columns[f"{m} p({self.correction})"] = self.pvalues[m]
            if self.wtl:
                for i, what in enumerate(("wins", "ties", "losses")):
                    columns[f"{m} {what}"] = pd.Series([self.wtl.get(r, {}).get(m, (np.nan,) * 3)[i] for r in index],
                                                       index=index)
        if self.judged is not None:
            columns[JUDGED] = self.judged
        if self.risk is not None:
            for c in self.risk.columns:
                columns[c] = self.risk[c]
                if c.startswith("TRisk"):
                    columns[f"{c} p"] = self.risk_p[c]
        if self.groups:
            columns["group"] = pd.Series(self.groups)
        frame = pd.DataFrame({k: (v.reindex(index) if isinstance(v, pd.Series) else v) for k, v in columns.items()},
                             index=index)
        return frame.to_csv()

    def to_latex(self) -> str:
        """The table as a LaTeX ``table`` (booktabs; ▲/▼ as math triangles, names escaped) with its caption:
        ``results.tex``."""
        marked = self.marked().map(lambda s: s.replace(" ▲", r"$^{\blacktriangle}$").replace(" ▼", r"$^{\blacktriangledown}$"))
        marked.index = [latex_escape(str(i)) for i in marked.index]
        marked.columns = [latex_escape(str(c)) for c in marked.columns]
        body = marked.to_latex(escape=False, column_format="l" + "r" * len(marked.columns))
        return latex_table(body, self.caption())

    def render(self, fmt: str) -> str:
        """The table in ``fmt``: ``markdown`` (or ``md``), ``csv`` or ``latex``."""
        return {"markdown": self.to_markdown, "md": self.to_markdown, "csv": self.to_csv, "latex": self.to_latex}[fmt]()


@dataclass
class EvaluatedRun:
    """A run reduced to what a comparison needs: per-query values (measure → query → value; condensed-list
    measures marked ') and the query ids it answered.  Lets many large runs be evaluated in parallel
    processes (:func:`evaluate_files`) and only these values travel back.

    Args:
        values: Its per-query values (measure → query → value; condensed-list measures marked ``'``).
        answered: The query ids it has a ranking for.
    """

    values: dict[str, dict[str, float]]
    answered: set[str]


def evaluate_run(run, qrels: list[Qrel], measures: Sequence, judged: bool = True, judged_only: bool = False,
                 parallel: bool = True) -> EvaluatedRun:
    """``parallel``: a long run's queries on every core (``False`` inside a pool that gives each core a run).

    Args:
        run: The run.
        qrels: The judgments.
        measures: Measure objects (:func:`~irglow.eval.measures.parse_measures`).
        judged: Whether to add Judged@10.
        judged_only: Whether to add each measure on condensed lists.
        parallel: Whether large runs are evaluated in worker processes.
    """
    measures = parse_measures(measures)
    wanted = list(measures)
    if judged:
        judged_measure = parse_measures([JUDGED])[0]
        wanted += [] if judged_measure in measures else [judged_measure]
    values = per_query(wanted, qrels, run, parallel)
    if judged_only:
        # trec_eval -J: a measure trec_eval computes with the flag (outside the vectorized ones, which agree on the
        # condensed run) is computed so, on the run itself — a query left with no judged document is then scored
        # as trec_eval scores it (IPrec: NaN), not as a query the run missed
        flagged = {m: m(judged_only=True) for m in measures
                   if not vectorized.supports(m) and "judged_only" in getattr(m, "SUPPORTED_PARAMS", {})}
        flagged = {m: f for m, f in flagged.items() if computable(f)}
        by_flagged = per_query(list(dict.fromkeys(flagged.values())), qrels, run, parallel) if flagged else {}
        for m, f in flagged.items():
            values[f"{m}'"] = by_flagged[str(f)]
        rest = [m for m in measures if m not in flagged]
        for m, v in per_query(rest, qrels, condensed(run, qrels)).items() if rest else ():
            values[f"{m}'"] = v
    return EvaluatedRun(values, _queries_with_documents(run))


@dataclass(frozen=True)
class _FileEvaluation:
    """What every run file of :func:`evaluate_files` is evaluated against (reaches forked workers at the fork)."""

    qrels: list
    measures: list
    judged: bool
    judged_only: bool
    in_pool: bool


def _evaluate_file(w: _FileEvaluation, job: tuple[str, str]) -> EvaluatedRun:
    path, duplicates = job
    return evaluate_run(read_ranked(path, duplicates), w.qrels, w.measures, w.judged, w.judged_only,
                        parallel=not w.in_pool)  # in a pool each core scores a run of its own


def evaluate_files(paths: Sequence[str], qrels: list[Qrel], measures: Sequence[str], judged: bool = True,
                   judged_only: bool = False, duplicates: str = "error", workers: int | None = None
                   ) -> list[EvaluatedRun]:
    """Read and evaluate run files, ``workers`` at a time in forked processes (default: one per core, at
    most one per file); the runs themselves never leave their process, so memory stays at one run per
    worker.

    Args:
        paths: Run files.
        qrels: The judgments.
        measures: Measures' names.
        judged: Whether to add Judged@10.
        judged_only: Whether to add each measure on condensed lists.
        duplicates: A repeated (query, document): ``error`` or ``keep-max``.
        workers: Processes evaluating at once (default: one per core, at most one per file).
    """
    import os

    for p in paths:  # "-", a pipe or a FIFO read once, here: the forked workers inherit the copy
        readable(p)
    workers = max(1, min(workers or os.cpu_count() or 1, len(paths)))
    shared = _FileEvaluation(qrels, list(measures), judged, judged_only, workers > 1)
    return list(forked_map(_evaluate_file, shared, [(str(p), duplicates) for p in paths], workers))


def condensed(run, qrels: list[Qrel]):
    """The run with every unjudged document removed (Sakai's condensed lists), as ``trec_eval -J`` removes them:
    a document with a negative label ("in the pool, not judged") goes too.

    Args:
        run: The run.
        qrels: The judgments: documents they do not judge are removed.
    """
    if isinstance(run, RankedRun) and run.columnar:  # masked in its columns: no dict of the whole run
        return RankedRun(None, run.tag, run.columns.kept(vectorized.judged_lines(
            run.columns, vectorized.Judgments.of(qrels), labelled=True)))
    judged: dict[str, set[str]] = {}
    for q in qrels:
        if q.relevance >= 0:
            judged.setdefault(q.query_id, set()).add(q.doc_id)
    if isinstance(run, RankedRun):
        return RankedRun({qid: {d: v for d, v in docs.items() if d in judged.get(qid, ())}
                          for qid, docs in run.ranked.items()}, run.tag)
    return Run({qid: [(d, s) for d, s in docs if d in judged.get(qid, ())] for qid, docs in run.ranking.items()},
               run.tag)


def _queries_with_documents(run) -> set[str]:
    if isinstance(run, RankedRun):
        return run.query_ids()
    return {q for q, docs in run.ranking.items() if docs}


# the comparison settings: ``compare``'s arguments and a pipeline's [eval] keys, declared once in irglow.settings
COMPARISON_SETTINGS = ("test", "correction", "permutations", "seed", "ci", "judged_only", "risk_alphas", "pairs",
                       "alpha")


def check_comparison_settings(prefix: str = "", **values) -> None:
    """Stop on a comparison setting of the wrong type or value, naming it (``prefix``: e.g. ``eval.``), by its
    ``[eval]`` declaration.

    Args:
        prefix: What the errors put before a key (``eval.``).
        **values: The settings by key (``test="t"``, ``permutations=1000``).
    """
    for key, value in values.items():
        DECLARED["eval"][key].check(value, prefix + key)


def compare(runs: Mapping[str, Run], qrels: list[Qrel], measures: Sequence | str,
            baseline: str | None = None, alpha: float = 0.05, test: str = sig.DEFAULT_TEST,
            correction: str = "holm", permutations: int = sig.DEFAULT_PERMUTATIONS, seed: int = 0,
            ci: bool = False, judged: bool = True, judged_only: bool = False,
            risk_alphas: Sequence[float] = (1.0, 5.0), pairs: str | None = None) -> Comparison:
    """Evaluate ``runs`` on ``qrels``; tests, effect sizes and risk of each run against ``baseline``.

    Args:
        runs: The runs by name, in the table's order (a :class:`~irglow.runs.trec.Run` or an already
            :class:`EvaluatedRun`).
        qrels: The judgments; every judged query is evaluated (a run without a ranking for one scores 0 there).
        measures: ir_measures names, as a list or one string (``"nDCG@10 R@100"``); ``NCG@k`` too.
        baseline: The run every other is tested against (``None``: means only).
        alpha: The significance level, after correction.
        test: The paired test: ``randomization`` (the default), ``t``, ``bootstrap`` or ``wilcoxon``.
        correction: Over the runs compared on one measure: ``holm``, ``bonferroni``, ``bh`` (Benjamini-Hochberg) or
            ``none``.
        permutations: The randomization test's sign flips (all of them where fewer exist) or bootstrap samples.
        seed: The seed of the randomization and bootstrap draws.
        ci: Whether the table shows each difference's 95 % confidence interval.
        judged: Whether to add Judged@10 (the share of each run's top 10 that is judged).
        judged_only: Whether to add each measure on condensed lists (unjudged documents removed; ``nDCG@10'``).
        risk_alphas: The α of URisk/TRisk against the baseline (Dinçer et al., SIGIR 2014).
        pairs: ``"all"``: every pair of runs tested (Tukey HSD on the first measure); ``None``: only against the
            baseline.

    Returns:
        The :class:`Comparison`: ``.table()``, ``.per_query(measure)``, ``.pairs()``, ``.to_markdown()`` ….
    """
    check_comparison_settings(test=test, correction=correction, permutations=permutations, seed=seed, ci=ci,
                              judged_only=judged_only, risk_alphas=risk_alphas, pairs=pairs, alpha=alpha)
    measures = parse_measures(measures)
    if not measures:
        raise ValueError("no measures to compute: name at least one, e.g. -m 'nDCG@10 AP'")
    if not qrels:
        raise ValueError("the qrels hold no judgments: there is nothing to evaluate the runs against")
    names = list(runs)
    if baseline is not None and baseline not in runs:
        raise KeyError(f"baseline {baseline!r} is not among the runs {names}")
    evaluated = {name: run if isinstance(run, EvaluatedRun) else evaluate_run(run, qrels, measures, judged, judged_only)
                 for name, run in runs.items()}
    values = {name: e.values for name, e in evaluated.items()}
    cols = [str(m) for m in measures]
    condensed_cols = [f"{m}'" for m in cols] if judged_only else []
    cols = cols + condensed_cols
    qids = sorted({q.query_id for q in qrels})
    matrix = {c: np.array([[values[n][c][q] for q in qids] for n in names]) for c in cols}  # run × query
    by_col = {**{str(m): m for m in measures}, **{f"{m}'": m for m in measures}}
    means = pd.DataFrame({c: [summary(by_col[c], row) for row in matrix[c]] if qids else np.full(len(names), np.nan)
                          for c in cols}, index=names)
    pvals = pd.DataFrame(np.nan, index=names, columns=cols)
    raw, low, high = pvals.copy(), pvals.copy(), pvals.copy()
    wtl: dict[str, dict[str, tuple[int, int, int]]] = {n: {} for n in names}
    deltas = means - means.loc[baseline] if baseline is not None else means * 0
    risk = risk_p = None
    can_test = len(qids) >= sig.min_queries(alpha)  # below: no test can mean anything (no p, CI or mark)
    if baseline is not None and can_test:
        _test_against_baseline(matrix, names, baseline, cols, qids, test, permutations, seed, correction,
                               (raw, pvals, low, high), wtl)
    if baseline is not None and risk_alphas and qids:  # descriptive; its p only where a test can mean anything
        risk, risk_p = _risk(matrix[cols[0]], names, baseline, risk_alphas, can_test)
    pair_p = groups = None
    if pairs == "all" and len(names) > 1 and can_test:
        first = cols[0]
        hsd = sig.tukey_hsd(matrix[first].T, permutations, seed)
        pair_p = pd.DataFrame(hsd, index=names, columns=names)
        for i in range(len(names)):
            pair_p.iloc[i, i] = np.nan
        groups = sig.groups(names, list(means[first]), hsd, alpha)
    judged_values = None
    if judged:
        judged_values = pd.Series({n: float(np.mean([values[n][JUDGED][q] for q in qids])) if qids else float("nan")
                                   for n in names})
    answered = {n: evaluated[n].answered for n in names}
    missing = {n: len(set(qids) - answered[n]) for n in names}
    notes = _coverage_notes(answered, set(qids), judged_only, qrels)
    per_query_values = {n: {c: values[n][c] for c in cols} for n in names}
    return Comparison(means, pvals, deltas, baseline, alpha, len(qids), missing, per_query_values, notes, test,
                      correction, permutations, raw, low, high, wtl, judged_values, risk, risk_p, pair_p, groups, ci,
                      condensed_cols, can_test, [c for c in cols if summed(by_col[c])])


def _test_against_baseline(matrix, names, baseline, cols, qids, test, permutations, seed, correction, tables,
                           wtl) -> None:
    """Each run's per-query differences to the baseline tested, for every measure, into ``tables`` (raw p,
    corrected p, CI low and high) and ``wtl`` (wins, ties, losses).  Every (measure, run) difference in one call:
    the draws are shared; corrections stay per measure."""
    raw, pvals, low, high = tables
    b = names.index(baseline)
    others = [n for n in names if n != baseline]
    pairs_tested = [(c, n) for c in cols for n in others]
    diffs = np.stack([matrix[c][names.index(n)] - matrix[c][b] for c, n in pairs_tested], axis=1) \
        if pairs_tested and qids else np.zeros((len(qids), 0))
    results = dict(zip(pairs_tested, sig.test_differences(diffs, test, permutations, seed)))
    for c in cols:
        tested = [results[(c, n)] for n in others if (c, n) in results]
        adjusted = sig.adjust([r.p for r in tested], correction)
        for n, r, p in zip(others, tested, adjusted):
            raw.loc[n, c], pvals.loc[n, c], low.loc[n, c], high.loc[n, c] = r.p, p, r.ci_low, r.ci_high
            wtl[n][c] = (r.wins, r.ties, r.losses)


def _risk(first: np.ndarray, names: list[str], baseline: str, risk_alphas, can_test: bool):
    """URisk and TRisk of each run against the baseline on the first measure (run × query ``first``), and TRisk's
    p-value where a test can mean anything."""
    b = names.index(baseline)
    others = [n for n in names if n != baseline]
    risk = pd.DataFrame(index=others, dtype=float)
    risk_p = pd.DataFrame(index=others, dtype=float)
    for a in risk_alphas:
        for n in others:
            u, t, p = sig.risk(first[names.index(n)], first[b], a)
            risk.loc[n, f"URisk(α={a:g})"], risk.loc[n, f"TRisk(α={a:g})"] = u, t
            risk_p.loc[n, f"TRisk(α={a:g})"] = p if can_test else float("nan")
    return risk, risk_p


def _coverage_notes(answered: dict[str, set[str]], judged_ids: set[str], judged_only: bool, qrels) -> list[str]:
    """Warnings on what the runs answer: a run answering no judged query is refused (an all-zero row is no
    result), one answering few is named; condensed lists without judged non-relevant documents are named."""
    # an empty run (an empty file, or a split whose every query had no searchable term) answers none either
    strangers = [n for n in answered if not answered[n] & judged_ids]
    if strangers:  # say so, with the likely cause, instead of printing it
        raise ValueError("; ".join(query_overlap_warning(n, answered[n], judged_ids) for n in strangers)
                         + " — nothing to compare")
    notes = [w for n in answered if (w := query_overlap_warning(n, answered[n], judged_ids))]
    if judged_only and not any(q.relevance <= 0 for q in qrels):
        notes.append("the qrels judge no document non-relevant, so condensed lists keep only relevant documents "
                     "and score near 1 for every run: the condensed view needs judged non-relevant documents")
    for w in notes:
        log.warning("%s", w)
    return notes


def query_overlap_warning(name: str, ran: set[str], judged: set[str]) -> str | None:
    """A warning when a run (``ran``: the query ids it has documents for) shares few or none of the judged
    query ids (it would score ~0 silently), naming the likely cause: ids that differ only by leading
    zeros, or another split's queries.

    Args:
        name: The run's name.
        ran: The query ids it ranks.
        judged: The judged query ids.
    """
    if not judged:
        return None
    if not ran:
        return (f"run `{name}` ranks no document for any query (an empty run file, or queries with no searchable "
                f"term after analysis: empty or all stopwords)")
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


def wrap(text: str, width: int) -> str:
    """Prose wrapped at ``width`` columns (code spans and long words are not broken).

    Args:
        text: A line.
        width: The columns it may take.
    """
    import textwrap

    return textwrap.fill(text, width=max(20, width), break_long_words=False, break_on_hyphens=False)


def fit_markdown(frame: pd.DataFrame, width: int) -> str:
    """``frame`` as markdown in blocks of columns, each as wide as ``width`` allows (the row labels repeated in
    every block), so that no line is longer than ``width`` unless one column alone is."""
    text = frame.to_markdown(disable_numparse=True)
    if max(map(len, text.splitlines())) <= width or len(frame.columns) < 2:
        return text
    label = max([len(str(i)) for i in frame.index] + [0]) + 4
    sizes = [max([len(str(c))] + [len(str(v)) for v in frame[c]]) + 3 for c in frame.columns]
    blocks, current, used = [], [], label
    for column, size in zip(frame.columns, sizes):
        if current and used + size > width:
            blocks.append(current)
            current, used = [], label
        current.append(column)
        used += size
    blocks.append(current)
    return "\n\n".join(frame[block].to_markdown(disable_numparse=True) for block in blocks)
