"""One measure across collections: a row per system, a column per collection, the mean over the
collections and how many of them a system beats the baseline on — the zero-shot table.

Significance marks come from each collection's own :class:`~irglow.eval.compare.Comparison`
(its paired test against the baseline, corrected within that collection); queries of different
collections are never pooled into one test.  What *is* pooled is the effect: each system's
per-collection mean difference to the baseline (with its variance, var(d)/n) enters a random-effects
meta-analysis (DerSimonian–Laird), which gives one Δ with a 95% CI and I², the share of the spread
across collections that is heterogeneity rather than chance — "is it the same effect everywhere?".
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Mapping

import numpy as np
import pandas as pd

from irglow.eval import significance as sig
from irglow.eval.compare import Comparison, latex_caption, latex_escape, latex_table


@dataclass
class CrossCollection:
    values: pd.DataFrame  # system × collection, NaN where the system has no run there
    marks: pd.DataFrame  # system × collection: "▲", "▼" or ""
    measure: str
    baseline: str | None
    queries: dict[str, int]  # collection → judged queries
    notes: list[str] = field(default_factory=list)
    # system → collection → (Δ to the baseline, its variance var(d)/n), from the per-query values
    effects: dict[str, dict[str, tuple[float, float]]] = field(default_factory=dict)
    in_domain: set[str] = field(default_factory=set)  # collections the models trained on: shown, never pooled

    @classmethod
    def from_comparisons(cls, comparisons: Mapping[str, Comparison], measure: str,
                         notes: list[str] | None = None, in_domain=()) -> CrossCollection:
        systems = list(dict.fromkeys(s for c in comparisons.values() for s in c.means.index))
        values = pd.DataFrame(np.nan, index=systems, columns=list(comparisons), dtype=float)
        marks = pd.DataFrame("", index=systems, columns=list(comparisons), dtype=object)
        baselines = {c.baseline for c in comparisons.values()}
        for name, cmp in comparisons.items():
            if measure not in cmp.means.columns:
                raise KeyError(f"{measure} is not among the measures of {name}: {list(cmp.means.columns)}")
            for system in cmp.means.index:
                values.loc[system, name] = cmp.means.loc[system, measure]
                if cmp.significant(system, measure):
                    marks.loc[system, name] = "▲" if cmp.deltas.loc[system, measure] > 0 else "▼"
        baseline = baselines.pop() if len(baselines) == 1 else None
        effects: dict[str, dict[str, tuple[float, float]]] = {}
        for name, cmp in comparisons.items():
            if baseline is None or not cmp.values_per_query or baseline not in cmp.values_per_query:
                continue
            base = cmp.values_per_query[baseline][measure]
            for system in cmp.means.index:
                if system == baseline:
                    continue
                d = np.array([cmp.values_per_query[system][measure][q] - v for q, v in base.items()])
                if len(d) > 1:
                    effects.setdefault(system, {})[name] = (float(d.mean()), float(d.var(ddof=1) / len(d)))
        return cls(values, marks, measure, baseline, {n: c.n_queries for n, c in comparisons.items()},
                   list(notes or []), effects, set(in_domain))

    def against_checkpoints(self, starts: Mapping[str, str]) -> list[str]:
        """Notes on fine-tuned models against the checkpoint each started from (``{model run: checkpoint run}``) on
        the collections they never trained on: where fine-tuning lost what the checkpoint knew, the table says so."""
        out = []
        for model, start in starts.items():
            if model not in self.values.index or start not in self.values.index:
                continue
            cols = [c for c in self.values.columns if c not in self.in_domain
                    and self.values.loc[model, c] == self.values.loc[model, c]
                    and self.values.loc[start, c] == self.values.loc[start, c]]
            below = [c for c in cols if self.values.loc[model, c] < self.values.loc[start, c]]
            if below:
                out.append(f"{model} (fine-tuned) is below its starting checkpoint {start} on " + ", ".join(
                    f"{c} ({self.values.loc[model, c]:.4f} vs {self.values.loc[start, c]:.4f})" for c in below)
                           + f" — fine-tuning lost what the checkpoint knew there ({self.measure})")
            elif cols:
                out.append(f"{model} (fine-tuned) is at or above its starting checkpoint {start} on every unseen "
                           f"collection ({', '.join(cols)}; {self.measure})")
        return out

    def against_parts(self, parts: Mapping[str, Mapping[str, list[str]]]) -> list[str]:
        """Notes where a fused run is below one of the runs it fuses (``{collection: {fused run: its parts}}``),
        naming its best part and the gap: a reader is not told that a fusion is best where one of its parts alone
        does better."""
        out = []
        for column, fused in parts.items():
            if column not in self.values.columns:
                continue
            for tag, members in fused.items():
                mine = self.values.loc[tag, column] if tag in self.values.index else float("nan")
                held = [(self.values.loc[m, column], m) for m in members if m in self.values.index
                        and self.values.loc[m, column] == self.values.loc[m, column]]
                if mine != mine or not held:
                    continue
                best, name = max(held)
                if best > mine:
                    out.append(f"On {column}, {tag} ({mine:.4f}) is below its own part {name} ({best:.4f}) by "
                               f"{best - mine:.4f} {self.measure}: the fusion diluted its strongest run there")
        return out

    def unseen(self, system: str) -> dict[str, tuple[float, float]]:
        """A system's per-collection effects on the collections its models never trained on."""
        return {c: ev for c, ev in self.effects.get(system, {}).items() if c not in self.in_domain}

    def pooled(self) -> dict[str, "sig.Pooled"]:
        """System → random-effects pooled Δ to the baseline over the unseen collections it ran on (two or more
        with within-collection variance; a collection where it equals the baseline on every query is left
        out and counted in ``excluded``)."""
        out = {}
        for s in self.effects:
            per = self.unseen(s)
            if len(per) >= 2:
                p = sig.dersimonian_laird([e for e, _ in per.values()], [v for _, v in per.values()])
                if p.k >= 2:
                    out[s] = p
        return out

    def not_pooled(self) -> dict[str, str]:
        """System → why it has no pooled effect (a pooled effect needs two unseen collections with variance)."""
        pooled, out = self.pooled(), {}
        for s in self.effects:
            if s in pooled:
                continue
            per = self.unseen(s)
            varied = [c for c, (_, v) in per.items() if v > 0]
            out[s] = (f"it ran on {len(per)} unseen collection{'s' if len(per) != 1 else ''}" if len(per) < 2 else
                      f"it equals the baseline on every query of {len(per) - len(varied)} of its {len(per)} unseen "
                      f"collections")
        return out

    def identical(self) -> dict[str, list[str]]:
        """System → the unseen collections where its per-query values equal the baseline's (no variance)."""
        return {s: ids for s in self.effects if (ids := [c for c, (_, v) in self.unseen(s).items() if v == 0])}

    def intervals(self, level: float = 0.95) -> dict[str, dict[str, tuple[float, float, float]]]:
        """System → collection → (Δ, CI low, CI high): each collection's effect with its normal interval."""
        from scipy import stats

        z = float(stats.norm.ppf(0.5 + level / 2))
        return {s: {c: (e, e - z * v ** 0.5, e + z * v ** 0.5) for c, (e, v) in per.items()}
                for s, per in self.effects.items()}

    def pooled_table(self, digits: int = 4) -> pd.DataFrame | None:
        pooled = self.pooled()
        if not pooled:
            return None
        rows = {s: {f"Δ vs {self.baseline}": f"{p.effect:+.{digits}f}",
                    "95% CI": f"[{p.ci_low:+.{digits}f}, {p.ci_high:+.{digits}f}]",
                    "I²": f"{p.i2:.0%}", "τ²": f"{p.tau2:.2e}",
                    "collections": str(p.k) + (f" (+{p.excluded} identical)" if p.excluded else ""),
                    "": "▲" if p.ci_low > 0 else "▼" if p.ci_high < 0 else ""} for s, p in pooled.items()}
        return pd.DataFrame.from_dict(rows, orient="index")

    def summary(self) -> pd.DataFrame:
        """``mean`` over the collections a system ran on, and ``> baseline``: on how many of those its
        mean is higher than the baseline's (``k/n``)."""
        out = pd.DataFrame(index=self.values.index)
        ran = self.values.notna().sum(axis=1)
        out["mean"] = self.values.mean(axis=1, skipna=True)
        if self.baseline in self.values.index:
            base = self.values.loc[self.baseline]
            wins = (self.values.gt(base, axis=1) & self.values.notna()).sum(axis=1)
            significant = (self.marks == "▲").sum(axis=1)
            out[f"> {self.baseline}"] = [f"{w}/{n} ({k} ▲)" if s != self.baseline else "–"
                                         for s, w, n, k in zip(self.values.index, wins, ran, significant)]
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
            text += (f" ▲/▼: significantly better/worse than `{self.baseline}` on that collection (each collection's "
                     f"own paired test, corrected within the collection); `> {self.baseline}`: on how many "
                     f"collections the mean is higher, and on how many of those significantly.")
        return text + "".join(f"\n\n- {n}" for n in self.notes)

    def pooled_caption(self) -> str:
        text = (f"Pooled effect against `{self.baseline}` across the unseen collections ({self.measure}; "
                f"random-effects meta-analysis, DerSimonian–Laird, of each collection's paired mean difference; ▲/▼: "
                f"the 95% CI excludes 0; I²: share of the between-collection spread due to heterogeneity).")
        if self.in_domain:
            text += f" Not pooled, as in-domain: {', '.join(sorted(self.in_domain))}."
        same = self.identical()
        if same:
            text += (" Left out of a system's weights where it equals the baseline on every query (no variance, an "
                     "infinite weight): " + "; ".join(f"`{s}` on {', '.join(c)}" for s, c in same.items()) + ".")
        text += self.not_pooled_note()
        return text

    def not_pooled_note(self) -> str:
        missing = self.not_pooled()
        return (" No pooled effect (two unseen collections with variance are needed) for " + "; ".join(
            f"`{s}`: {why}" for s, why in missing.items()) + ".") if missing else ""

    def to_markdown(self) -> str:
        text = self.marked().to_markdown(disable_numparse=True) + "\n\n" + self.caption() + "\n"
        pooled = self.pooled_table()
        if pooled is not None:
            text += f"\n{self.pooled_caption()}\n\n" + pooled.to_markdown(disable_numparse=True) + "\n"
        elif self.effects:  # say why there is no pooled table rather than leave it out silently
            text += f"\n{self.not_pooled_note().strip()}\n"
        return text

    def to_csv(self) -> str:
        frame = self.values.copy()
        frame["mean"] = self.summary()["mean"]
        return frame.to_csv()

    def to_latex(self) -> str:
        marked = self.marked().map(lambda s: s.replace(" ▲", r"$^{\blacktriangle}$")
                                   .replace(" ▼", r"$^{\blacktriangledown}$").replace("–", "--"))
        marked.index = [latex_escape(str(i)) for i in marked.index]
        marked.columns = [latex_escape(str(c)) for c in marked.columns]
        text = latex_table(marked.to_latex(escape=False, column_format="l" + "r" * len(marked.columns)),
                           self.caption())
        pooled = self.pooled_table()
        if pooled is not None:
            pooled = pooled.map(lambda v: latex_caption(str(v)))
            pooled.index = [latex_escape(str(i)) for i in pooled.index]
            pooled.columns = [latex_caption(str(c)) for c in pooled.columns]
            text += "\n" + latex_table(pooled.to_latex(escape=False, column_format="l" + "r" * len(pooled.columns)),
                                       self.pooled_caption())
        return text
