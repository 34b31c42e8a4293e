"""Issue 67: every cache key holds every setting that changes what its unit writes.  The walk changes each declared
setting of each stage, one at a time, binds the configuration, builds every unit of the pipeline over one prepared
collection and asks whether a unit's key moved; a setting that moves none must be listed in
:data:`irglow.stage_cache.NOT_IN_KEY` with the reason.  (Was: ``[glow] faiss`` reused an hnsw run as ivfpq's.)"""

from __future__ import annotations

import copy
import dataclasses

import pytest

from irglow.commands.reference import _settings_classes
from irglow.pipeline import split_context, split_units
from irglow.plan import bind_plan
from irglow.preparation import prepare
from irglow.settings import DECLARED, Setting, declared_fields
from irglow.stage_cache import NOT_IN_KEY, unit_key
from irglow.utils.digest import value_digest
from tests.integration.pipelines import SMALL_DEMO

# a valid other value where the rule of `_other` cannot find one (strings without choices, lists, tables)
OTHER = {
    "lexical.systems": ["bm25", "tfidf"], "lexical.field_weights": {"title": 2.0},
    "glow.variants": ["glow"], "glow.untrained": ["minilm", "minilm-fields"], "rerank.models": ["monobert"],
    "rerank.rerank_also": ["bm25f"], "rerank.variants": {"mono2": {"kind": "monobert"}},
    "rerank.first_stage": "bm25f", "twbert.runs": ["twbert"], "fusion.step": 0.1, "fusion.runs": ["bm25+glow", "bm25+bm25f"], "fusion.measure": "AP",
    "fusion.method": "rrf",  # a registered method (irglow.runs.fusion.fusion_method), no longer a declared choice
    "twbert.loss": "listmle", "twbert.label_scale": "exp", "twbert.scale_by": "uniform", "twbert.folds": 2, "twbert.device": "cpu",
    "twbert.model.base_model": "other", "twbert.model.head": "relu",
    "glow.loss": "bce", "glow.device": "cpu", "glow.mix_checkpoint": [0.5],
    "glow.model.base_model": "other", "glow.model.variant": "bert", "glow.model.attention": "row",
    "glow.model.fields": ["title"], "glow.model.url_fields": [], "glow.model.field_max_tokens": {"title": 8},
    "glow.model.pooling": "cls", "glow.model.weights": {"k1": 1.2},
    "rerank.monobert.loss": "pairwise", "rerank.monobert.device": "cpu", "rerank.monobert.model": {"dropout": 0.2},
    "rerank.nrmf.model.fields": ["title"], "rerank.nrmf.model.url_fields": [],
    "rerank.nrmf.model.field_max_words": {"title": 5}, "rerank.nrmf.model.field_dropout": {"title": 0.1},
    "rerank.monobert.model.base_model": "other", "rerank.monobert.model.fields": ["title"],
    "rerank.monobert.model.url_fields": [], "rerank.monobert.model.field_max_tokens": {"title": 8},
}
# settings another one must accompany
WITH = {"twbert.folds": {("twbert", "eval_every"): 10}}
# settings the walk leaves out: what makes another experiment rather than another unit (the switch, a file laid at
# loading), and folders of trained models (their content is in the key: unit_key's loads)
SKIPPED = {"enabled", "config", "model_dir", "kind"}  # a kind's table names its kind: another is refused


def _other(setting: Setting, key: str):
    """A valid value other than the default."""
    if key in OTHER:
        return OTHER[key]
    d = setting.default
    if setting.choices:
        return next(c for c in setting.choices if c != d)
    if setting.kind == "bool":
        return not d
    if setting.kind in ("int", "number"):
        low = setting.low if setting.low is not None else (setting.above or 0) + (1 if setting.kind == "int" else 0.05)
        value = (low if low else 1) if d is None else d + (1 if setting.kind == "int" else (abs(d) * 0.5 or 0.1))
        if setting.high is not None and value > setting.high:
            value = d - (1 if setting.kind == "int" else (abs(d) * 0.5 or 0.1))
        return value
    raise AssertionError(f"{key}: give the walk a valid other value (OTHER)")


def _walked() -> list[tuple[str, tuple[str, ...], Setting]]:
    """(key, path in the configuration, its declaration) of every setting of the stages' sections."""
    out = []
    for section in ("ql", "glow", "rerank", "fusion", "twbert"):
        for name, s in DECLARED[section].items():
            if name not in SKIPPED and name not in ("monobert", "nrmf"):
                out.append((f"{section}.{name}", (section, name), s))
    for section, cls in _settings_classes().items():
        if section == "index":  # another index: the cache's context (its name), not a unit's settings
            continue
        path = "rerank.monobert" if section == "rerank.<kind>" else section  # one class for every kind's training
        for name, s in declared_fields(section, cls).items():
            if name not in SKIPPED and not (section == "rerank.<kind>" and name == "model"):  # [.model]: walked
                out.append((f"{path}.{name}", tuple(path.split(".")) + (name,), s))
    return out


def _set(config: dict, path: tuple[str, ...], value) -> dict:
    config = copy.deepcopy(config)
    node = config
    for part in path[:-1]:
        node = node.setdefault(part, {})
    node[path[-1]] = value
    return config


@pytest.mark.slow
def test_every_declared_setting_moves_its_units_key_or_is_declared_as_not_changing_output(tmp_path):
    base = {"seed": 13, "data_dir": str(tmp_path / "data"), "collection": {"name": SMALL_DEMO},
            "output": {"dir": str(tmp_path / "out")},
            "lexical": {"systems": ["bm25", "bm25f", "tfidf"]}, "ql": {"enabled": True},
            "twbert": {"enabled": True}, "glow": {"enabled": True, "variants": ["glow", "bert"], "untrained": ["minilm"]},
            "rerank": {"enabled": True, "models": ["monobert", "nrmf"]},
            "fusion": {"enabled": True, "runs": ["bm25+glow"]}}
    prepared = prepare(copy.deepcopy(base))
    source = prepared.source

    def keys(config: dict) -> dict[str, str]:
        plan = bind_plan(config).with_fields(list(source.index.fields))
        weights = plan.lexical.field_weights_for(source.index, source.queries, source.qrels)
        p = dataclasses.replace(prepared, lexical=plan.lexical, field_weights=weights, plan=plan)
        ctx = split_context(plan, p, "test", tmp_path / "out")
        out = {}
        units, contexts = split_units(plan, ctx)
        for stage, unit in units:
            if callable(unit.settings):
                unit = dataclasses.replace(unit, settings=unit.settings())
            out[unit.name] = value_digest(unit_key(stage, unit, contexts[stage]))
        return out

    before = keys(copy.deepcopy(base))
    assert len(before) >= 9, before
    unmoved, refused, walked = [], [], 0
    for key, path, setting in _walked():
        if key in NOT_IN_KEY:
            continue
        changed = _set(base, path, _other(setting, key))
        for other_path, value in WITH.get(key, {}).items():
            changed = _set(changed, other_path, value)
        walked += 1
        try:
            if keys(changed) == before:
                unmoved.append(key)
        except (ValueError, TypeError, KeyError) as e:
            refused.append(f"{key}: {e}")
    assert refused == [], "the walk's other values must bind: " + "\n".join(refused)
    assert walked > 120
    assert unmoved == [], f"settings that change no unit's key (put them in the key, or in NOT_IN_KEY with why): {unmoved}"
    for key in NOT_IN_KEY:  # each exemption names a setting that exists
        section, _, name = key.rpartition(".")
        assert any(k == key for k, _, _ in _walked()), key
