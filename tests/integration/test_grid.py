"""`irglow run --grid … --select-on validation`: every point trains, the best on validation is kept and the
pipeline runs once with it, reusing its model; without --select-on every point is a full run."""

from __future__ import annotations

import pytest

import csv
import json

from tests.integration.pipelines import small_pipeline


def _config(out, data) -> dict:
    return small_pipeline(out, data, systems=["bm25"], depth=30,
                          rerank={"enabled": True, "models": ["nrmf"], "depth": 10,
                                  "nrmf": {"epochs": 2, "val_depth": 10, "negatives": 2, "batch_queries": 4}},
                          fusion={"enabled": True, "runs": ["bm25+nrmf"]})


@pytest.mark.slow
def test_grid_selects_on_validation_and_runs_the_chosen_point_once(tmp_path, monkeypatch):
    from irglow.grid import run_grid
    from irglow.models.rerank import train as rerank_train
    from tests.integration.pipelines import model_folder

    monkeypatch.chdir(tmp_path)
    calls = []
    real_train = rerank_train.RerankTrainer.train

    def counted(self, *args, **kwargs):
        calls.append(self.out)
        return real_train(self, *args, **kwargs)

    monkeypatch.setattr(rerank_train.RerankTrainer, "train", counted)
    out = run_grid(_config(tmp_path / "out", tmp_path / "data"), ["rerank.nrmf.lr=1e-4,1e-2"], "validation")

    rows = list(csv.DictReader((out / "grid.csv").open()))
    assert [r["point"] for r in rows] == ["lr=1e-4", "lr=1e-2"]
    best = max(rows, key=lambda r: float(r["validation_ndcg@10"]))
    assert [r["chosen"] for r in rows] == ["1" if r is best else "0" for r in rows]
    manifest = json.loads((out / "manifest.json").read_text())
    assert manifest["config"]["grid"]["chosen"] == best["point"]
    assert manifest["config"]["rerank"]["nrmf"]["lr"] == float(best["point"].split("=")[1])

    # two points trained in two folders; the final run found the chosen one finished (no new steps)
    folders = sorted({p for p in calls})
    assert len(folders) == 2 and calls[-1] == model_folder(out, "nrmf")
    history = json.loads((calls[-1] / "training.json").read_text())["state"]["history"]
    assert len({h["step"] for h in history}) == len(history)
    from irglow.outputs import read_results

    assert read_results(out)["rerank:nrmf"].model == str(calls[-1] / "best")
    report = (out / "results.md").read_text()
    assert f"**{best['point']}**" in report and "| nrmf |" in report and "bm25+nrmf: wsum fusion" in report
    assert {p.stem for p in out.glob("*.run")} == {"bm25", "nrmf", "bm25+nrmf"}
    assert (out / "grid-curves.png").is_file()


def test_grid_without_selection_runs_every_point(tmp_path, monkeypatch):
    from irglow.grid import run_grid

    monkeypatch.chdir(tmp_path)
    config = _config(tmp_path / "out", tmp_path / "data")
    del config["rerank"], config["fusion"]
    out = run_grid(config, ["lexical.k1=0.5,1.2"])
    for label in ("k1=0.5", "k1=1.2"):
        assert (out / label / "bm25.run").is_file()
        assert json.loads((out / label / "manifest.json").read_text())["config"]["lexical"]["k1"] == float(label[3:])
    table = (out / "grid.csv").read_text().splitlines()
    assert table[0] == ",bm25" and [line.split(",")[0] for line in table[1:]] == ["k1=0.5", "k1=1.2"]
    a, b = ((out / label / "bm25.run").read_text() for label in ("k1=0.5", "k1=1.2"))
    assert a != b
