"""Zero-shot, a model's run of the training collection's held-out queries is made once per model and kept under
the training folder: every collection of a suite carries fusion weights tuned on the same run."""

from __future__ import annotations

import pytest

from irglow.models.source import held_out_run_on_training_corpus
from irglow.runs.trec import Run


def test_the_run_is_made_once_per_key_and_its_scratch_folder_removed(tmp_path):
    made = []

    def make(work):
        work.mkdir(parents=True)
        (work / "vectors.npy").write_bytes(b"scratch")  # what an encoding leaves behind
        made.append(work)
        return Run({"q1": [("d2", 2.5), ("d1", 1.0)]}, "glow")

    first = held_out_run_on_training_corpus(tmp_path, "glow", "k1", make)
    again = held_out_run_on_training_corpus(tmp_path, "glow", "k1", make)  # a second collection of the suite
    assert len(made) == 1 and again.ranking == first.ranking == {"q1": [("d2", 2.5), ("d1", 1.0)]}
    assert (tmp_path / "held-out-runs" / "glow-k1" / "held-out.run").read_text() == (
        "q1 Q0 d2 1 2.5 glow\nq1 Q0 d1 2 1.0 glow\n")
    assert not made[0].exists()  # the run is kept, not the vectors
    held_out_run_on_training_corpus(tmp_path, "glow", "k2", make)  # other weights: another run
    held_out_run_on_training_corpus(tmp_path, "nrmf", "k1", make)  # another model: another run
    assert len(made) == 3


def test_a_failed_make_leaves_nothing_to_reuse(tmp_path):
    def broken(work):
        raise RuntimeError("out of memory")

    with pytest.raises(RuntimeError, match="out of memory"):
        held_out_run_on_training_corpus(tmp_path, "glow", "k1", broken)
    calls = []
    held_out_run_on_training_corpus(tmp_path, "glow", "k1", lambda w: calls.append(w) or Run({"q": [("d", 1.0)]}, "x"))
    assert len(calls) == 1
