"""The declarations of the settings read as tables: each key once, with its type, default, range and meaning.

A setting used to be read where it was used (``fs.get("method", "wsum")``), so a string where a boolean belongs
(``twbert.rm3 = "false"``: true to Python), a misspelt key (``fusion.mehtod``) or a negative depth passed
unseen.  Here each is declared once; :func:`check` stops on any of them before work with one error naming the
full key, the value and what is allowed, readers take defaults from :func:`value`, and ``irglow settings``
and the docs' settings reference are printed from the same list.  The settings held in dataclasses (the trainers' and
models' sections ``[twbert]``, ``[glow]``, ``[rerank.<kind>]``, ``[index]``, ``[lexical]``) declare each field
through :func:`setting` — the same type, range, default and meaning — and :func:`declared_fields` turns them into
the same :class:`Setting` objects, checked by the same code; their stage-level keys are declared here.

Leaf module: it imports nothing of irglow, so every layer may read a declaration.
"""

from __future__ import annotations

import dataclasses
import math
from dataclasses import dataclass
from functools import lru_cache
from typing import Any, Callable

from irglow.defaults import (BASELINE, CORRECTIONS, FUSION_MEASURE, FUSION_METHOD, FUSION_NORM, FUSION_STEP,
                             MAX_PERMUTATIONS, MEASURES, PERMUTATIONS, SIGNIFICANCE_TESTS)

ZERO_SHOT_FUSION = ("carried", "rrf")  # weights carried from the training collection | equal-weight RRF
FUSION_NORMS = ("min-max", "z-score", "none")
FAISS_KINDS = ("flat", "hnsw", "ivf", "ivfpq")  # irglow.dense.encode.faiss_index


@dataclass(frozen=True)
class Setting:
    """One key of one section.  ``kind``: bool | int | number | str | names (a list of strings, or one
    comma-separated string as ``--set`` and make pass it) | list | table | counts (split = integer) | any.

    Args:
        section: Its section (``lexical``, ``rerank.monobert``).
        name: Its key.
        kind: What it takes: ``bool``, ``int``, ``number``, ``str``, ``names``, ``list``, ``table``, ``counts`` or
            ``any``.
        default: Its value where a configuration does not set it.
        doc: What it means, in a few words (the settings reference prints it).
        low: The least value allowed (inclusive).
        high: The largest value allowed (inclusive).
        above: A value it must exceed.
        below: A value it must stay under.
        choices: The values allowed (empty: any of its kind).
        optional: Whether it may be unset (``None``).
        selects: Whether it chooses which runs are made (an ``Experiment``'s systems say that instead).
    """

    section: str
    name: str
    kind: str
    default: Any
    doc: str
    low: float | None = None  # inclusive bound
    high: float | None = None  # inclusive bound
    above: float | None = None  # exclusive lower bound
    below: float | None = None  # exclusive upper bound
    choices: tuple[Any, ...] = ()
    optional: bool = False  # may be unset (None)
    selects: bool = False  # it chooses which runs are made (an Experiment's systems say that: irglow.experiment)

    @property
    def key(self) -> str:
        return f"{self.section}.{self.name}"

    def allowed(self) -> str:
        """What the setting accepts, in words (the error and the reference say the same)."""
        if self.choices:
            return "one of " + ", ".join(repr(c) for c in self.choices)
        words = {"bool": "true or false", "int": "an integer", "number": "a number", "str": "a string",
                 "names": "a list of names (or one comma-separated string)", "list": "a list",
                 "numbers": "a list of numbers",
                 "table": "a table of settings", "counts": "a table of split = integer",
                 "any": "see the description"}[self.kind]
        bounds = []
        for sign, bound in ((">", self.above), (">=", self.low), ("<=", self.high), ("<", self.below)):
            if bound is not None:  # a whole bound in digits (1,000,000, not 1e+06)
                bounds.append(f"{sign} {int(bound):,}" if float(bound).is_integer() and abs(bound) >= 1e4 else
                              f"{sign} {bound:g}")
        return words + (" " + " and ".join(bounds) if bounds else "")

    def check(self, value: Any, key: str | None = None) -> None:
        """Stop on a value this setting does not accept, naming it as ``key`` (default: ``section.name``).

        Args:
            value: A value a configuration gives it.
            key: Its key as the error names it (unset: ``section.name``).
        """
        if value is None and self.optional:
            return
        if not self._fits(value):
            raise ValueError(f"{key or self.key} = {value!r} must be {self.allowed()}")

    def _in_range(self, value: float) -> bool:
        return ((self.low is None or value >= self.low) and (self.high is None or value <= self.high)
                and (self.above is None or value > self.above) and (self.below is None or value < self.below))

    def _fits(self, value: Any) -> bool:
        if self.choices:
            return isinstance(value, type(self.choices[0])) and value in self.choices
        kind = self.kind
        if kind == "bool":
            return isinstance(value, bool)
        if kind == "counts":
            return isinstance(value, dict) and all(isinstance(k, str) and Setting(
                self.section, self.name, "int", None, "", low=self.low)._fits(v) for k, v in value.items())
        if kind in ("int", "number"):
            if isinstance(value, bool) or not isinstance(value, int if kind == "int" else (int, float)):
                return False
            if not math.isfinite(value):
                return False
            return self._in_range(value)
        if kind == "numbers":
            return isinstance(value, (list, tuple)) and all(
                not isinstance(v, bool) and isinstance(v, (int, float)) and math.isfinite(v) and self._in_range(v)
                for v in value)
        if kind == "str":
            return isinstance(value, str)
        if kind == "names":
            return isinstance(value, str) or (isinstance(value, list) and all(isinstance(v, str) for v in value))
        if kind == "list":
            return isinstance(value, (list, tuple))
        if kind == "table":
            return isinstance(value, dict)
        return True


def setting(default: Any = None, doc: str = "", *, factory: Callable[[], Any] | None = None,
            low: float | None = None, high: float | None = None, above: float | None = None,
            choices: tuple[Any, ...] = (), optional: bool = False, selects: bool = False) -> Any:
    """A settings dataclass's field, declared as every other setting is: its default (``factory`` for a list or
    a table), its meaning, its range or choices, whether it may be unset, whether it chooses which runs are made.
    Its type is the field's annotation.

    Args:
        default: Its value where a configuration does not set it.
        doc: What it means, in a few words.
        factory: A function giving the default where it is a list or a table.
        low: The least value allowed (inclusive).
        high: The largest value allowed (inclusive).
        above: A value it must exceed.
        choices: The values allowed.
        optional: Whether it may be unset (``None``).
        selects: Whether it chooses which runs are made.
    """
    meta = {"setting": {"doc": doc, "low": low, "high": high, "above": above, "choices": tuple(choices),
                        "optional": optional, "selects": selects}}
    if factory is not None:
        return dataclasses.field(default_factory=factory, metadata=meta)
    return dataclasses.field(default=default, metadata=meta)


_KINDS = {"bool": "bool", "int": "int", "float": "number", "str": "str", "list": "list", "tuple": "list",
          "dict": "table"}


@lru_cache(maxsize=None)
def declared_fields(section: str, cls: type) -> dict[str, Setting]:
    """A settings dataclass's fields as :class:`Setting` objects (nested settings classes are sections of their
    own and left out).  A field not declared through :func:`setting` is an error: nothing goes unchecked.

    Args:
        section: The section the class binds (its errors name keys under it).
        cls: A settings dataclass.
    """
    out = {}
    for f in dataclasses.fields(cls):
        annotation = f.type if isinstance(f.type, str) else getattr(f.type, "__name__", str(f.type))
        parts = [p.strip() for p in annotation.split("|")]
        base = next((p for p in parts if p != "None"), "None").split("[")[0]
        if base not in _KINDS and f.default_factory is not dataclasses.MISSING and \
                dataclasses.is_dataclass(f.default_factory()):
            continue  # a nested section ([twbert.model], [glow.model])
        if "setting" not in f.metadata:
            raise TypeError(f"{cls.__name__}.{f.name} is not declared through irglow.settings.setting()")
        meta = f.metadata["setting"]
        default = f.default if f.default is not dataclasses.MISSING else f.default_factory()
        out[f.name] = Setting(section, f.name, _KINDS.get(base, "any"), default, meta["doc"], low=meta["low"],
                              high=meta["high"], above=meta["above"], choices=meta["choices"],
                              optional=meta["optional"] or "None" in parts, selects=meta.get("selects", False))
    return out


def check_fields(obj: Any, section: str) -> Any:
    """Every field of a settings dataclass against its declaration (nested settings classes as ``section.name``),
    before any work; returns ``obj``.

    Args:
        obj: A settings dataclass's object.
        section: The section it was bound from.
    """
    declared = declared_fields(section, type(obj))
    for f in dataclasses.fields(obj):
        value = getattr(obj, f.name)
        if f.name in declared:
            declared[f.name].check(value)
        elif dataclasses.is_dataclass(value):
            check_fields(value, f"{section}.{f.name}")
    return obj


def _section(name: str, *settings: tuple) -> dict[str, Setting]:
    return {s[0]: Setting(name, *s[:3], doc=s[3], **(s[4] if len(s) > 4 else {})) for s in settings}


# section → {key: Setting}
DECLARED: dict[str, dict[str, Setting]] = {
    "collection": _section(
        "collection",
        ("name", "str", "demo", "the evaluated collection: a BEIR folder, an ir_datasets id or a demo spec"),
        ("train", "names", None, "where models train, when not the evaluated collection (several: a union)",
         {"optional": True}),
        ("train_split", "str", "train", "the split models train on"),
        ("test_split", "names", "test", "the split evaluated (several: one table each)"),
        ("max_docs", "int", None, "index only the first N documents", {"low": 1, "optional": True}),
        ("max_queries", "counts", None, "a seeded sample of N judged queries per split: {train = 5000, dev = 500}",
         {"low": 1, "optional": True})),
    "eval": _section(
        "eval",
        ("measures", "names", list(MEASURES), "the tables' measures: any ir_measures name, and NCG@k"),
        ("baseline", "str", BASELINE, "the run every other is compared with"),
        ("runs", "names", None, "the runs in the tables (unset: every run)", {"optional": True}),
        ("test", "str", SIGNIFICANCE_TESTS[0], "the paired significance test", {"choices": SIGNIFICANCE_TESTS}),
        ("correction", "str", "holm", "the multiple-comparison correction", {"choices": CORRECTIONS}),
        ("permutations", "int", PERMUTATIONS, "the randomization test's sign flips (bootstrap: resamples); a "
         "million give p to ±0.0005", {"low": 1, "high": MAX_PERMUTATIONS}),
        ("seed", "int", 0, "the significance tests' seed"),
        ("ci", "bool", False, "95% confidence intervals of each difference"),
        ("judged_only", "bool", False, "also the condensed lists: unjudged documents removed (trec_eval -J)"),
        ("risk_alphas", "numbers", [1.0, 5.0], "URisk's α values (risk-sensitive differences)", {"low": 0}),
        ("pairs", "str", None, "all: every pair of runs tested (Tukey's HSD), not only against the baseline",
         {"choices": ("all", ""), "optional": True}),
        ("alpha", "number", 0.05, "the significance level", {"above": 0, "below": 1})),
    "output": _section(
        "output", ("dir", "str", "runs/demo",
                   "where runs, tables, plots and the manifest are written (`irglow zero-shot`: runs/zero-shot)"),
        ("clusters", "int", None, "topic clusters of the test queries' embeddings in the results page's breakdown "
         "(unset: about one per 25 queries; 0: none)", {"low": 0, "optional": True}),
        ("page", "bool", True, "write the results page (report.html: per-query views, each ranked document's term "
         "contributions); the tables, plots and manifest are written either way")),
    "fusion": _section(
        "fusion",
        ("enabled", "bool", False, "fuse runs into hybrids", {"selects": True}),
        ("runs", "any", [], "the hybrids: ['a+b', ['a', 'b', 'c'], 'all'] or one 'a+b,a+b+c' string",
         {"selects": True}),
        ("method", "str", FUSION_METHOD, "a registered fusion method (irglow.runs.fusion.fusion_method): wsum, the "
         "weighted sum of normalised scores (weights tuned on held-out training queries); rrf, reciprocal-rank fusion "
         "(nothing tuned)"),
        ("norm", "str", FUSION_NORM, "score normalisation before a weighted sum", {"choices": FUSION_NORMS}),
        ("step", "number", FUSION_STEP, "the convex weight grid's step", {"above": 0, "high": 0.5}),
        ("measure", "str", FUSION_MEASURE, "what the weights maximise on the tuning queries"),
        ("optional", "bool", False, "leave out (with a warning) a hybrid naming a run not produced"),
        ("zero_shot", "str", "carried", "models trained on another collection: carried: the weights tuned on the "
         "training collection's held-out queries, used unchanged (nothing of the evaluated collection's judgments "
         "is read); rrf: reciprocal-rank fusion with equal weights", {"choices": ZERO_SHOT_FUSION})),
    "ql": _section(
        "ql",
        ("enabled", "bool", False, "query likelihood with Dirichlet smoothing (the new-stage example), with "
         "[lexical] mu: one μ per experiment, shared with the qld system", {"selects": True})),
    "validation": _section(
        "validation",
        ("also", "names", [], "other collection@split sources a checkpoint is also chosen on"),
        ("queries", "int", 100, "judged queries drawn from each source (seeded)", {"low": 1}),
        ("stages", "names", None, "the stages whose trainers use them (unset: every stage that can)",
         {"optional": True})),
    "zero_shot": _section(
        "zero_shot",
        ("train", "str", None, "the collection the models are trained on", {"optional": True}),
        ("train_split", "str", "train", "its split"),
        ("collections", "list", [], "collections evaluated: names, or {name, split} tables"),
        ("measure", "str", "nDCG@10", "the measure of the cross-collection table")),
    # the model stages' own keys (their training settings are the trainers' dataclasses)
    "twbert": _section(
        "twbert",
        ("enabled", "bool", False, "train TW-BERT and write bm25-ngram and twbert", {"selects": True}),
        ("config", "str", None, "a file whose [twbert] this section starts from", {"optional": True}),
        ("rm3", "bool", True, "also write twbert-rm3 (the weighted query expanded by RM3)", {"selects": True}),
        ("runs", "names", ["bm25-ngram", "twbert"], "its runs besides twbert-rm3: twbert (learned weights) and "
         "bm25-ngram (the same uni- and bi-gram query, unweighted: what the weights add)", {"selects": True}),
        ("model_dir", "str", None, "a trained model to reuse instead of training", {"optional": True})),
    "glow": _section(
        "glow",
        ("enabled", "bool", False, "train GLOW/BERT dense encoders and search them with faiss", {"selects": True}),
        ("config", "str", None, "a file whose [glow] this section starts from", {"optional": True}),
        ("variants", "names", ["glow"], "glow (BM25-weighted attention) and/or bert (plain)", {"selects": True}),
        ("untrained", "names", [], "untrained reference runs: minilm, minilm-fields, minilm-glow", {"selects": True}),
        ("zero_shot_tokens", "int", 256, "the untrained MiniLM run's token budget", {"low": 1}),
        ("precision", "str", "fp32", "int8: corpus and queries encoded through ONNX Runtime with int8 weights on "
         "the CPU, kept where its nDCG@10 over held-out training queries' BM25 pools is within 0.002 of fp32's "
         "(else fp32, said once; needs irglow[int8])", {"choices": ("fp32", "int8")}),
        ("model_dir", "str", None, "a folder of trained models to reuse", {"optional": True}),
        ("faiss", "str", "flat", "the faiss index the corpus encoding is searched with: flat (exact), hnsw (a graph, "
         "~1.3x flat's memory), ivf (clusters), ivfpq (product-quantised: 1/16 of flat's memory, for corpora whose "
         "flat index would not fit)", {"choices": FAISS_KINDS})),
    "rerank": _section(
        "rerank",
        ("enabled", "bool", False, "train re-rankers and re-rank a first-stage run", {"selects": True}),
        ("models", "names", ["monobert", "nrmf"],
         "kinds (monobert, nrmf), a kind re-ranking a run (monobert(twbert)) or [rerank.variants] names",
         {"selects": True}),
        ("depth", "int", 100, "documents re-ranked per query", {"low": 1}),
        ("rerank_also", "names", [], "other runs the trained models re-rank", {"selects": True}),
        ("model_dir", "str", None, "a folder of trained models to reuse", {"optional": True}),
        ("variants", "table", {}, "named variants: kind, first_stage, model_of and training settings"),
        ("first_stage", "str", "bm25", "the run re-ranked (and trained on)", {"selects": True}),
        ("precision", "str", "fp32", "int8: monoBERT re-ranks through ONNX Runtime with int8 weights on the CPU, "
         "kept where its nDCG@10 on the held-out training queries is within 0.002 of fp32's (else fp32, said once; "
         "needs irglow[int8])", {"choices": ("fp32", "int8")}),
        ("monobert", "table", {}, "monoBERT's training settings (and [rerank.monobert.model])"),
        ("nrmf", "table", {}, "NRM-F's training settings (and [rerank.nrmf.model])")),
}
# keys that were renamed or moved: one line naming the new place, not "unknown key"
_INCLUDED = ("is laid when the configuration is loaded (irglow.config.load_config: binding reads no file); a "
             "configuration built in Python lays it with irglow.config.include_sections(config)")
MOVED = {
    "rerank.fuse": "moved to the one fusion stage: write [fusion] runs = ['bm25+monobert', 'bm25+nrmf', …] (the "
                   "re-ranked block fused with BM25, weights tuned on held-out queries)",
    "glow.fuse_with": "moved to the one fusion stage: write [fusion] runs = ['bm25f+glow', …] (weights tuned on the "
                      "queries the training held out, reciprocal-rank fusion zero-shot)",
}
# the sections whose other keys are their trainer's settings (declared by its dataclass); the rest are closed
OPEN = {"twbert", "glow"}
CLOSED = set(DECLARED) - OPEN


def value(config: dict[str, Any], section: str, name: str) -> Any:
    """``config[section][name]``, or its declared default: the one place a default is written.

    Args:
        config: A configuration (a plain dict).
        section: A declared section.
        name: A declared key of it.
    """
    node = config.get(section)
    setting = DECLARED[section][name]
    return node.get(name, setting.default) if isinstance(node, dict) else setting.default


def option(section: str, name: str, **more: Any) -> dict[str, Any]:
    """``argparse`` keywords for a command-line option that mirrors a setting: its declared default, its choices
    and its meaning as the help (``irglow fuse --method`` defaults to what ``[fusion] method`` does).

    Args:
        section: A declared section.
        name: A declared key of it.
        **more: Other argparse keywords, which win.
    """
    setting = DECLARED[section][name]
    kwargs: dict[str, Any] = {"default": setting.default, "help": f"{setting.doc} (default {setting.default}; "
                                                                  f"[{section}] {name})"}
    if setting.choices:
        kwargs["choices"] = list(setting.choices)
    if setting.kind == "number":
        kwargs["type"] = float
    elif setting.kind == "int":
        kwargs["type"] = positive_int if (setting.low or 0) >= 1 else int
    if setting.kind in ("int", "number") and setting.high is not None:  # a bound the option keeps as the file does
        kwargs["type"] = _bounded(kwargs["type"], setting)
    return {**kwargs, **more}


def _bounded(convert: Callable[[str], Any], setting: Setting) -> Callable[[str], Any]:
    import argparse

    def checked(text: str):
        value = convert(text)
        try:
            setting.check(value, f"--{setting.name.replace('_', '-')}")
        except ValueError as e:
            raise argparse.ArgumentTypeError(str(e)) from None
        return value

    checked.__name__ = getattr(convert, "__name__", "value")
    return checked


def take(table: dict[str, Any], section: str, name: str) -> Any:
    """Remove and return a stage-level key from ``section``'s merged table, or its declared default.

    Args:
        table: A section's merged table (the key is removed from it).
        section: The declared section.
        name: The key.
    """
    return table.pop(name, DECLARED[section][name].default)


def check(config: dict[str, Any], sections: tuple[str, ...] | None = None) -> None:
    """Stop on a declared section that is not a table, an undeclared key in a closed section, or a value
    of the wrong type, range or choice — one error naming the full key, the value and what is allowed.

    Args:
        config: A configuration.
        sections: The declared sections to check (unset: every one).
    """
    for section, settings in DECLARED.items():
        if sections is not None and section not in sections:
            continue
        if config.get(section) is not None:
            check_table(section, config[section])


def check_table(section: str, node: Any) -> None:
    """:func:`check` for one section's table (a stage's, after its ``config = "…"`` file is merged in).

    Args:
        section: A declared section.
        node: Its table, as the configuration holds it.
    """
    settings = DECLARED[section]
    if not isinstance(node, dict):
        raise ValueError(f"[{section}] must be a table of settings, not {node!r}")
    for name in node:
        if f"{section}.{name}" in MOVED:
            raise ValueError(f"{section}.{name} {MOVED[f'{section}.{name}']}")
    if section in CLOSED:
        check_settings(node, settings, f"[{section}]", ignore=registered_subsections(section))
    for name, setting in settings.items():
        if name in node:
            setting.check(node[name])
    if "config" in settings and "config" in node:  # a file to start from, not laid on: not loaded as a file is
        raise ValueError(f"{section}.config {_INCLUDED}")


# sections whose sub-tables other packages add: [rerank.<kind>] for each re-ranker kind registered under the
# entry-point group (its name is the kind's: irglow.models.rerank.kinds checks it, and the kind checks its table)
REGISTERED_SUBSECTIONS = {"rerank": "irglow.rerankers"}


def registered_subsections(section: str) -> tuple[str, ...]:
    """The sub-tables of ``section`` that registered plugins own (their entry points' names; none loaded here).

    Args:
        section: A section (``rerank``).
    """
    group = REGISTERED_SUBSECTIONS.get(section)
    if group is None:
        return ()
    from irglow.utils.plugins import registered

    return tuple(point.name for point in registered(group))


def check_settings(settings: dict[str, Any], known, what: str, ignore=()) -> None:
    """Stop on a misspelt setting, naming it, its likely meaning and what ``what`` allows (``ignore``: keys taken
    elsewhere) — the one unknown-key check of every section, table or settings class.

    Args:
        settings: A table of settings.
        known: The keys it may hold.
        what: What it is, for the error (``[lexical]``).
        ignore: Keys taken elsewhere (a plugin's sub-tables).
    """
    import difflib

    unknown = sorted(set(settings) - set(known) - set(ignore))
    if unknown:
        close = difflib.get_close_matches(unknown[0], [str(k) for k in known], n=1)
        meant = f" (did you mean {close[0]!r}?)" if close else ""
        raise ValueError(f"unknown {what} setting(s) {unknown}{meant}; known: {', '.join(map(str, known))}")


# the keys a configuration holds outside any section (the binding, irglow.plan.SECTIONS, accepts these and no other)
TOP_LEVEL: dict[str, str] = {
    "base": "a file this one changes (path relative to this file, or a shipped `configs/<name>`): its settings, "
            "then this file's laid on them table by table",
    "seed": "the seed of the collection's query samples (`[collection] max_queries`), the held-out queries every "
            "trainer shares, and the re-rankers' validation split (unset: 13); each trainer's own draws follow its "
            "section's `seed`",
    "data_dir": "the folder indexes and document stores are built in and reused from (`irglow run --data-dir`; unset: "
                "`$IRGLOW_DATA`, else `./data`)",
}


def reference(sections: list[str] | None = None, classes: dict[str, type] | None = None) -> str:
    """The settings reference as markdown: ``irglow settings`` prints it and the docs' settings page is it (docs/gen_pages.py).  ``classes``:
    the settings dataclasses by section (a section both declares here and in a class — ``[twbert]`` — is one
    table: its stage keys, then its trainer's fields).

    Args:
        sections: The sections shown (``["glow"]``; unset: every one).
        classes: Settings classes to show besides the declared sections (``{"rerank.linear": LinearSettings}``).
    """
    classes = classes or {}
    lines = []
    if sections is None:
        lines += ["### Top level", "", "Keys outside any section; a section's `config = \"file\"` starts that section "
                  "from the file's table of the same name.", "", "| key | meaning |", "|:--|:--|",
                  *(f"| `{k}` | {doc} |" for k, doc in TOP_LEVEL.items()), ""]
    for section in [*DECLARED, *(c for c in classes if c not in DECLARED)]:
        if sections is not None and section not in sections:
            continue
        rows = list(DECLARED.get(section, {}).values())
        cls = classes.get(section)
        nested = []
        if cls is not None:
            declared = declared_fields(section, cls)
            rows += list(declared.values())
            nested = [f.name for f in dataclasses.fields(cls) if f.name not in declared]
        lines += [f"### [{section}]", "", "| key | type and range | default | meaning |", "|:--|:--|:--|:--|"]
        for s in rows:
            default = "unset" if s.default is None else repr(s.default)
            unset = " (or unset)" if s.optional and s.default is not None else ""
            lines.append(f"| `{s.name}` | {s.allowed()}{unset} | `{default}` | {s.doc.replace('|', '/')} |")
        lines += [f"| `{n}` | a table of settings | | [{section}.{n}] |" for n in nested]
        lines.append("")
    return "\n".join(lines)


def field_values(items, convert, error: str) -> dict:
    """``["title=2", "text=0.5"]`` → ``{field: convert(value)}``; an item without a field name or whose value
    ``convert`` refuses (``ValueError``) is the ``error``, its ``{item}`` filled in (repr'd).

    Args:
        items: ``field=value`` strings.
        convert: What turns a value's text into its value (``float``).
        error: The option named in an error.
    """
    out = {}
    for item in items or []:
        name, eq, value = item.partition("=")
        try:
            if not eq or not name.strip():
                raise ValueError
            out[name.strip()] = convert(value)
        except ValueError:
            raise ValueError(error.format(item=repr(item))) from None
    return out


def positive_int(text: str, least: int = 1) -> int:
    """An argparse type for depths, counts and threads: ``--depth -98`` is an error, not "top -98".

    Args:
        text: The option's text.
        least: The least value allowed.
    """
    import argparse

    try:
        value = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"{text!r} is not an integer") from None
    if value < least:
        raise argparse.ArgumentTypeError(f"{value} must be >= {least}")
    return value


def non_negative_int(text: str) -> int:
    """An argparse type for counts where 0 means none (``--clusters 0``).

    Args:
        text: The option's text.
    """
    return positive_int(text, least=0)
