"""Issue 62: the README's table is checked in CI.  ``make readme-check`` compares all of it with a full ``make run``
(minutes: not in the suite); here the rows that must match on any machine — the lexical systems, which train
nothing — are made by ``configs/demo.toml``'s own lexical stage and compared cell by cell.  The significance marks
are left out: their Holm correction counts every system of the full run."""

from __future__ import annotations

import importlib.util
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]


def _check_readme():
    spec = importlib.util.spec_from_file_location("check_readme", ROOT / "docs" / "check_readme.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def _unmarked(row: list[str]) -> list[str]:
    return [cell.replace("▲", "").replace("▼", "").strip() for cell in row]


@pytest.mark.slow
def test_the_readme_lexical_rows_are_what_the_demo_computes(tmp_path, monkeypatch):
    from irglow.config import load_config
    from irglow.pipeline import run_pipeline

    monkeypatch.chdir(tmp_path)  # the qrels the pipeline writes go here
    config = load_config(str(ROOT / "irglow" / "configs" / "demo.toml"))
    for stage in ("twbert", "glow", "rerank", "fusion"):
        config[stage]["enabled"] = False
    config["data_dir"] = str(tmp_path / "data")
    config["output"] = {**config.get("output", {}), "dir": str(tmp_path / "out"), "page": False, "clusters": 0}
    run_pipeline(config)
    check = _check_readme()
    readme = check.readme_table(ROOT / "README.md")
    made = check.first_table((tmp_path / "out" / "results.md").read_text(encoding="utf-8").splitlines())
    assert readme[0] == made[0]  # the same measures, in the same order
    ours = {row[0]: _unmarked(row) for row in made[1:]}
    theirs = {row[0]: _unmarked(row) for row in readme[1:]}
    assert set(ours) == set(config["lexical"]["systems"]) and set(ours) <= set(theirs)
    assert {name: theirs[name] for name in ours} == ours
