"""irglow.settings: every declared setting refuses a wrong type, an out-of-range value and a misspelt sibling
key with an error naming the key — walked over the declarations, so a setting added later is covered without a
new test — and issue 38's reproductions, each as a test."""

from __future__ import annotations

import dataclasses
import subprocess
import sys

import pytest

from irglow import settings
from irglow.config import apply_override
from irglow.plan import check_config

MINIMAL = {"collection": {"name": "demo"}}

WRONG_TYPE = {"bool": "false", "int": "10", "number": "0.5", "str": 5, "names": 5, "list": "x", "table": 5,
              "counts": 5}


def _declared():
    return [s for section in settings.DECLARED.values() for s in section.values()]


def _config(setting, value) -> dict:
    return {**MINIMAL, setting.section: {**MINIMAL.get(setting.section, {}), setting.name: value}}


@pytest.mark.parametrize("setting", [s for s in _declared() if s.kind in WRONG_TYPE], ids=lambda s: s.key)
def test_every_declared_setting_refuses_a_wrong_type(setting):
    with pytest.raises(ValueError, match=rf"^{setting.key} = "):
        check_config(_config(setting, WRONG_TYPE[setting.kind]))


def _out_of_range(s):
    if s.choices:
        return s.choices[0] + "-not-a-choice" if isinstance(s.choices[0], str) else None
    if s.above is not None:
        return s.above
    if s.low is not None:
        return s.low - 1 if s.kind != "counts" else {"test": s.low - 1}
    if s.high is not None:
        return s.high + 1
    return None


@pytest.mark.parametrize("setting", [s for s in _declared() if _out_of_range(s) is not None], ids=lambda s: s.key)
def test_every_declared_range_and_choice_is_enforced(setting):
    with pytest.raises(ValueError, match=rf"^{setting.key} = .*must be"):
        check_config(_config(setting, _out_of_range(setting)))


@pytest.mark.parametrize("setting", [s for s in _declared() if s.section in settings.CLOSED], ids=lambda s: s.key)
def test_every_closed_section_refuses_a_misspelt_sibling(setting):
    typo = setting.name[:-1] + setting.name[-1] * 2  # "method" → "methodd"
    with pytest.raises(ValueError, match=rf"unknown \[{setting.section}\] setting\(s\) \['{typo}'\]"):
        check_config({**MINIMAL, setting.section: {**MINIMAL.get(setting.section, {}), typo: setting.default}})


def test_every_declared_default_passes_its_own_check():
    for s in _declared():
        s.check(s.default)


def _dataclass_sections():
    """The trainers' and models' settings classes (their fields are those sections' declarations)."""
    from irglow.lexical.stage import LexicalSettings
    from irglow.models.glow.model import GlowConfig
    from irglow.models.glow.train import GlowTrainConfig
    from irglow.models.twbert.model import TWBertConfig
    from irglow.models.rerank.monobert import MonoBERTConfig
    from irglow.models.rerank.nrmf import NRMFConfig
    from irglow.models.rerank.train import RerankTrainConfig
    from irglow.models.twbert.train import TrainConfig

    return {"twbert": TrainConfig.from_dict, "glow": GlowTrainConfig.from_dict,
            "rerank": RerankTrainConfig.from_dict, "monobert.model": MonoBERTConfig.from_dict,
            "nrmf.model": NRMFConfig.from_dict,
            "lexical": lambda d: LexicalSettings.from_config({"lexical": d}),
            "glow.model": lambda d: GlowTrainConfig.from_dict({"model": d}),
            "twbert.model": lambda d: TrainConfig.from_dict({"model": d})}, {
        "twbert": TrainConfig, "glow": GlowTrainConfig, "rerank": RerankTrainConfig,
        "monobert.model": MonoBERTConfig, "nrmf.model": NRMFConfig, "lexical": LexicalSettings,
        "glow.model": GlowConfig, "twbert.model": TWBertConfig}


def _typed_fields(cls):
    for f in dataclasses.fields(cls):
        default = f.default if f.default is not dataclasses.MISSING else (
            f.default_factory() if f.default_factory is not dataclasses.MISSING else None)
        if isinstance(default, (bool, int, float, str)) and not dataclasses.is_dataclass(default):
            yield f.name, default


def test_every_trainer_setting_refuses_a_wrong_type_a_negative_and_a_misspelt_sibling():
    """The dataclass-declared sections, walked the same way (numbers are finite and >= 0 throughout)."""
    build, classes = _dataclass_sections()
    base = {"monobert.model": {"fields": ["text"]}, "nrmf.model": {"fields": ["text"]}}
    checked = 0
    for section, cls in classes.items():
        for name, default in _typed_fields(cls):
            if name in ("kind", "fields", "systems", "variant") or (section == "rerank" and name == "loss"):
                continue  # a choice validated by its own check (tested where it is defined)
            wrong = "x" if not isinstance(default, str) else 5
            with pytest.raises(ValueError, match=name):
                build[section]({**base.get(section, {}), name: wrong})
            if isinstance(default, (int, float)) and not isinstance(default, bool):
                with pytest.raises(ValueError, match=name):
                    build[section]({**base.get(section, {}), name: -1})
            checked += 1
        with pytest.raises(ValueError, match="zzz"):
            build[section]({**base.get(section, {}), "zzz": 1})
    assert checked > 80  # every typed field of eight classes, not a handful


# issue 38's reproductions

def test_a_string_false_is_not_true():
    for value in ("false", "no"):
        with pytest.raises(ValueError, match=r"twbert.rm3 = '(false|no)' must be true or false"):
            check_config({**MINIMAL, "twbert": {"enabled": True, "rm3": value}})


def test_a_misspelt_fusion_key_is_named_with_its_likely_meaning():
    config = {**MINIMAL, "lexical": {"systems": ["bm25", "bm25f"]},
              "fusion": {"enabled": True, "runs": ["bm25+bm25f"], "mehtod": "rrf"}}
    with pytest.raises(ValueError, match=r"unknown \[fusion\] setting\(s\) \['mehtod'\] \(did you mean 'method'\?\)"):
        check_config(config)
    config["fusion"] = {"enabled": True, "runs": ["bm25+bm25f"], "weights": [0.5, 0.5]}
    with pytest.raises(ValueError, match=r"\['weights'\]"):
        check_config(config)


@pytest.mark.parametrize("depth", [-5, "10", 0, 1.5])
def test_rerank_depth_must_be_a_positive_integer(depth):
    with pytest.raises(ValueError, match=rf"rerank.depth = {depth!r} must be an integer >= 1"):
        check_config({**MINIMAL, "rerank": {"enabled": True, "models": ["nrmf"], "depth": depth}})


def test_a_misspelt_key_of_a_rerankers_model_table_is_named_before_work():
    config = {**MINIMAL, "rerank": {"enabled": True, "models": ["monobert"], "monobert": {"model": {"max_lenght": 9}}}}
    with pytest.raises(ValueError, match=r"rerank.monobert.model: .*max_lenght"):
        check_config(config)


def test_an_override_below_a_value_and_settings_not_a_dict_are_one_line_errors():
    with pytest.raises(ValueError, match="lexical.depth is a value .1000., not a table"):
        apply_override({"lexical": {"depth": 1000}}, "lexical.depth.x=1")
    from irglow.experiment import Experiment

    with pytest.raises(TypeError, match=r"takes a dict of dotted keys"):
        Experiment("demo", settings=[("lexical.k1", 1.2)])


@pytest.mark.parametrize("argv", [["rerank", "--depth", "-98"], ["report", "x.run", "--depth", "-3"],
                                  ["search", "--depth", "0"]])
def test_command_line_depths_must_be_positive(argv):
    out = subprocess.run([sys.executable, "-m", "irglow", *argv], capture_output=True, text=True)
    assert out.returncode == 2 and "must be >= 1" in out.stderr and "Traceback" not in out.stderr


def test_the_reference_lists_every_declared_setting():
    text = settings.reference()
    for s in _declared():
        assert f"| `{s.name}` | {s.allowed()} |" in text


def test_every_declared_field_range_and_choice_is_enforced():
    """Issue 54: the settings dataclasses' ranges are stated in their declarations (no longer inferred from the
    field's name): walked over every declared field, the value just outside its range or choices is refused,
    naming the field."""
    import re

    build, classes = _dataclass_sections()
    base = {"monobert.model": {"fields": ["text"]}, "nrmf.model": {"fields": ["text"]}}
    checked = 0
    for section, cls in classes.items():
        for s in settings.declared_fields(section, cls).values():
            bad = _out_of_range(s)
            if bad is None:
                continue
            with pytest.raises(ValueError, match=rf"{s.name} = {re.escape(repr(bad))} must be"):
                build[section]({**base.get(section, {}), s.name: bad})
            checked += 1
    assert checked > 100


def test_the_reference_lists_every_section_and_every_field(capsys):
    """``irglow settings`` answers for every section — [eval] and [index] too — with each field's range and
    meaning; a settings class field not declared through ``setting()`` is refused."""
    from irglow.cli import main
    from irglow.commands.reference import _settings_classes

    classes = _settings_classes()
    for section in [*settings.DECLARED, *classes]:
        assert main(["settings", section]) == 0
        text = capsys.readouterr().out
        assert text.startswith(f"### [{section}]")
        for s in [*settings.DECLARED.get(section, {}).values(),
                  *(settings.declared_fields(section, classes[section]).values() if section in classes else [])]:
            assert f"| `{s.name}` | {s.allowed()}" in text and s.doc.replace("|", "/") in text

    @dataclasses.dataclass
    class Undeclared:
        depth: int = 5

    with pytest.raises(TypeError, match="Undeclared.depth is not declared"):
        settings.declared_fields("x", Undeclared)
