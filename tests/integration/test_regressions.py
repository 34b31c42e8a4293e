"""Issue 22: the reproduction matrix.  Its lexical part runs here on every `make test` (the shared
collections when the machine has them, skipped and said so when not; the demo always)."""

from __future__ import annotations

from pathlib import Path

import yaml

from irglow.cli import main

ROOT = Path(__file__).resolve().parents[2]


def test_lexical_reproduction_matrix_is_green(tmp_path, monkeypatch, capsys):
    monkeypatch.chdir(ROOT)  # the matrix names its collections relative to the repository root
    code = main(["regressions", "--tags", "lexical", "-o", str(tmp_path / "out"), "--data-dir", str(tmp_path / "data")])
    out = capsys.readouterr().out
    assert code == 0, out
    assert "demo-lexical / bm25" in out and "✓ 0.7363" in out and "✗" not in out
    assert (tmp_path / "out" / "regressions.html").read_text().count('class="ok"') >= 15


def test_an_edited_expectation_turns_the_matrix_red_with_a_readable_diff(tmp_path, monkeypatch, capsys):
    monkeypatch.chdir(ROOT)
    spec = yaml.safe_load((ROOT / "configs" / "regressions.yaml").read_text())
    demo = next(e for e in spec["experiments"] if e["name"] == "demo-lexical")
    demo["expect"] = {"bm25": {"nDCG@10": 0.7400, "AP": demo["expect"]["bm25"]["AP"]}}
    spec["experiments"] = [demo, {"name": "elsewhere", "collection": str(tmp_path / "absent"), "tags": ["lexical"],
                                  "expect": {"bm25": {"nDCG@10": 0.5}}}]
    (tmp_path / "r.yaml").write_text(yaml.safe_dump(spec))
    code = main(["regressions", "--config", str(tmp_path / "r.yaml"), "-o", str(tmp_path / "out"),
                 "--data-dir", str(tmp_path / "data")])
    out = capsys.readouterr().out
    assert code == 1
    assert "✗ 0.7363 (expected 0.7400 ± 0.0001, Δ -0.0037)" in out and "✓ 0.6219" in out
    assert "elsewhere: skipped" in out and "1 of 2 figures reproduced, 1 skipped; 1 drifted" in out
