"""irglow.utils.distributed and the training loop's data parallelism, in two CPU processes joined with gloo (the
processes torchrun would start, spawned here): queries split and gathered back in order, rank 0's work and errors
shared, a folder a rank cannot see refused, and two processes training exactly what one process trains with
twice the gradient accumulation — the same batches, the same random draws, the same weights."""

from __future__ import annotations

import os
import random
import socket
import traceback
from pathlib import Path

import pytest
import torch
import torch.multiprocessing as mp

from irglow.utils import distributed


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def _worker(rank: int, world: int, port: int, fn, args, out: str) -> None:
    os.environ.update(RANK=str(rank), WORLD_SIZE=str(world), LOCAL_RANK=str(rank), MASTER_ADDR="127.0.0.1",
                      MASTER_PORT=str(port), OMP_NUM_THREADS="1")
    torch.set_num_threads(1)
    try:
        distributed.join()
        result = fn(*args)
        torch.save({"ok": result}, f"{out}/rank{rank}.pt")
    except BaseException as e:  # noqa: BLE001 - the test reads what each rank met
        torch.save({"error": f"{type(e).__name__}: {e}", "trace": traceback.format_exc()}, f"{out}/rank{rank}.pt")
    finally:
        distributed.shutdown()


def on_ranks(tmp_path: Path, fn, *args, world: int = 2) -> list[dict]:
    """``fn(*args)`` in ``world`` processes of one gloo group: each rank's ``{"ok": result}`` or ``{"error": …}``."""
    mp.start_processes(_worker, args=(world, _free_port(), fn, args, str(tmp_path)), nprocs=world, join=True,
                       start_method="spawn")
    return [torch.load(tmp_path / f"rank{r}.pt", weights_only=False) for r in range(world)]


# -- the collective steps -------------------------------------------------------------------------------------
def _split_and_gather():
    from irglow.data.records import Query
    from irglow.runs.trec import Run, gather_runs

    queries = [Query(str(i), f"q{i}") for i in range(7)]
    mine = distributed.split(queries)
    run = Run({q.query_id: [(f"d{q.query_id}", 1.0), ("x", 0.5)] for q in mine}, "t")
    whole = gather_runs({"t": run}, queries)["t"]
    return [q.query_id for q in mine], list(whole.ranking.items()), whole.tag


def test_each_rank_searches_its_share_and_every_rank_gets_the_whole_run_in_query_order(tmp_path):
    got = on_ranks(tmp_path, _split_and_gather)
    assert [g["ok"][0] for g in got] == [["0", "1", "2"], ["3", "4", "5", "6"]]  # 7 * r // 2 … contiguous shares
    expected = [(str(i), [(f"d{i}", 1.0), ("x", 0.5)]) for i in range(7)]
    assert all(g["ok"][1] == expected and g["ok"][2] == "t" for g in got)


def _main_work(fail: bool):
    calls = []

    def make():
        calls.append(distributed.current().size)  # rank 0 alone: inside, the collectives are local
        distributed.barrier()  # would hang if it waited for the others
        if fail:
            raise ValueError("the index is broken")
        return {"weights": [1.0, 2.0]}

    return distributed.on_main(make), calls


def test_rank_zero_works_alone_and_every_rank_gets_its_result(tmp_path):
    got = on_ranks(tmp_path, _main_work, False)
    assert got[0]["ok"] == ({"weights": [1.0, 2.0]}, [1])
    assert got[1]["ok"] == ({"weights": [1.0, 2.0]}, [])  # rank 1 never ran it


def test_an_error_on_rank_zero_stops_every_rank_with_its_message(tmp_path):
    got = on_ranks(tmp_path, _main_work, True)
    assert got[0]["error"] == "ValueError: the index is broken"
    assert got[1]["error"] == "SystemExit: rank 1: stopped because rank 0 failed: ValueError: the index is broken"


def _main_first(folder: str):
    def make():  # rank 0 leaves a file, the others find it
        f = Path(folder) / "index.txt"
        if distributed.current().main:
            f.write_text("built by rank 0")
        return f.read_text()

    return distributed.main_first(make)


def test_main_first_lets_the_others_read_what_rank_zero_built(tmp_path):
    (tmp_path / "shared").mkdir()
    got = on_ranks(tmp_path, _main_first, str(tmp_path / "shared"))
    assert [g["ok"] for g in got] == ["built by rank 0", "built by rank 0"]


def _check_folder(base: str):
    # rank 1 is handed a folder of its own, as a node without the shared file system would see one
    folder = Path(base) / ("shared" if distributed.current().main else "elsewhere")
    folder.mkdir(exist_ok=True)
    distributed.check_shared_folder(folder)
    return "checked"


def test_a_rank_that_cannot_see_the_output_folder_stops_every_rank_before_any_work(tmp_path):
    got = on_ranks(tmp_path, _check_folder, str(tmp_path))
    for g in got:
        assert g["error"].startswith(f"SystemExit: the output folder {tmp_path / 'shared'} is not shared")
        assert "rank 1 on " in g["error"] and "rank 0 on" not in g["error"]


def _shared_ok(base: str):
    distributed.check_shared_folder(Path(base))
    distributed.barrier()  # rank 0 has removed its probe
    return sorted(p.name for p in Path(base).rglob("*"))


def test_a_shared_folder_passes_and_keeps_no_probe(tmp_path):
    (tmp_path / "out").mkdir()
    got = on_ranks(tmp_path, _shared_ok, str(tmp_path / "out"))
    assert [g["ok"] for g in got] == [[], []]


def test_one_process_needs_no_process_group():
    assert distributed.current() == distributed.World(0, 1, 0)
    assert distributed.split([1, 2, 3]) == [1, 2, 3]
    assert distributed.on_main(lambda: 5) == 5 and distributed.rank_file("x.jsonl") == "x.jsonl"


# -- the training loop ---------------------------------------------------------------------------------------
class _Toy:
    """A linear model on 24 examples; each batch draws one random "negative" per example from the task's sampler,
    so a rank that skipped the draws of the other rank's batches would train on other negatives."""

    def __init__(self):
        g = torch.Generator().manual_seed(0)
        self.x, self.y = torch.randn(24, 4, generator=g), torch.randn(24, generator=g)


def _train(out: str, grad_accum: int, epochs: int = 2):
    from irglow.models.training import LoopSettings, Task, TrainingLoop

    toy = _Toy()
    torch.manual_seed(1)
    model = torch.nn.Linear(4, 1)
    model.save = lambda folder: Path(folder).mkdir(parents=True, exist_ok=True)
    validated = []

    class ToyTask(Task):
        name = "toy"

        def __init__(self):
            super().__init__(model, torch.optim.SGD(model.parameters(), lr=0.1))
            self.sampler = random.Random(7)

        def epoch_batches(self, epoch, warming=False):
            order = list(range(20))
            random.Random(epoch).shuffle(order)
            return [order[i:i + 3] for i in range(0, 18, 3)]  # 6 batches of 3

        def draw(self, batch, warming=False):
            return batch, [self.sampler.randrange(20, 24) for _ in batch]

        def loss(self, drawn, autocast, warming=False):
            batch, negatives = drawn
            fit = ((model(toy.x[batch]).squeeze(-1) - toy.y[batch]) ** 2).mean()
            return fit + 0.1 * (model(toy.x[negatives]) ** 2).mean()

        def validate(self):
            validated.append(distributed.current().rank)
            with torch.no_grad():
                return -float(((model(toy.x[20:]).squeeze(-1) - toy.y[20:]) ** 2).mean()), {}

    settings = LoopSettings(epochs=epochs, patience=100, grad_accum=grad_accum, amp=False)
    state = TrainingLoop(ToyTask(), settings, out, torch.device("cpu")).run(resume=False)
    return ({k: v.clone() for k, v in model.state_dict().items()}, state["step"],
            [h["loss"] for h in state["history"]], validated)


@pytest.mark.slow
@pytest.mark.parametrize("grad_accum, steps", [(2, 6), (1, 12), (3, 4)])
def test_two_processes_train_what_one_process_trains_with_the_same_settings(tmp_path, grad_accum, steps):
    """Issue 59.8: the batch a configuration names is the batch one optimizer step sees, whatever the world size —
    2 processes took half the steps of 1 (twice the batches each).  grad_accum 1 and 3 do not split over 2 ranks:
    the steps are still one process's (a rank waits)."""
    one = _train(str(tmp_path / "one"), grad_accum=grad_accum)
    (tmp_path / "ranks").mkdir()
    two = on_ranks(tmp_path / "ranks", _train, str(tmp_path / "two"), grad_accum)
    for got in two:
        assert "error" not in got, got.get("trace")
        weights, got_steps, losses, _ = got["ok"]
        assert got_steps == one[1] == steps  # 2 epochs × 6 batches / grad_accum per step
        assert all(torch.allclose(weights[k], one[0][k], atol=1e-6) for k in weights)
    # the logged loss is the mean over both ranks' batches; only rank 0 validates and writes
    assert one[2][0] is None and two[0]["ok"][2][0] is None  # the starting model's evaluation
    assert two[0]["ok"][2][1:] == pytest.approx(one[2][1:], rel=1e-5)
    assert two[0]["ok"][3] == [0, 0, 0] and two[1]["ok"][3] == []
    assert (tmp_path / "two" / "training.json").is_file()


def _agree(values):
    distributed.agree("settings", {"lexical": {"k1": values[distributed.current().rank]}})
    return "agreed"


@pytest.mark.slow
def test_ranks_holding_different_settings_stop_before_any_work_naming_the_ranks(tmp_path):
    """Issue 59.7: rank 0 with k1 0.9 and rank 1 with 3.0 wrote one run mixing both."""
    got = on_ranks(tmp_path, _agree, [0.9, 3.0])
    for rank, g in enumerate(got):
        assert g["error"].startswith(f"SystemExit: rank {rank}: the ranks hold different settings: rank(s) 1 differ "
                                     f"from rank 0"), g
    (tmp_path / "same").mkdir()
    assert [g["ok"] for g in on_ranks(tmp_path / "same", _agree, [0.9, 0.9])] == ["agreed", "agreed"]


def _prepare_in(folders, out, data):
    """Each rank in its own working folder, where the relative collection path names another corpus (or queries)."""
    from irglow.preparation import prepare

    os.chdir(folders[distributed.current().rank])
    prepare({"collection": {"name": "coll"}, "output": {"dir": out}, "data_dir": data})
    return "prepared"


@pytest.mark.slow
@pytest.mark.parametrize("differs", ["corpus.jsonl"])  # the queries' and qrels' digests: test_round_seven
def test_ranks_reading_different_inputs_stop_before_any_work(tmp_path, differs):
    """Issue 67.2: the same command and settings on two nodes whose corpus.jsonl (or queries.jsonl) differ made one
    run with q0–q3 from node A and q4–q7 from node B, exit 0.  The ranks compare the inputs' digests first."""
    from tests.files import write_beir

    folders = []
    for rank in range(2):
        folder = tmp_path / f"node{rank}"
        docs = ['{"_id": "d1", "title": "lyme", "text": "lyme disease ticks"}',
                '{"_id": "d2", "title": "flu", "text": "influenza season"}']
        queries = ['{"_id": "q1", "text": "lyme ticks"}']
        if rank == 1 and differs == "corpus.jsonl":
            docs[1] = '{"_id": "d2", "title": "flu", "text": "influenza winter"}'
        if rank == 1 and differs == "queries.jsonl":
            queries = ['{"_id": "q1", "text": "lyme disease"}']
        write_beir(folder / "coll", docs, queries)
        folders.append(str(folder))
    got = on_ranks(tmp_path, _prepare_in, folders, str(tmp_path / "out"), str(tmp_path / "data"))
    for rank, g in enumerate(got):
        assert g.get("error", "").startswith(f"SystemExit: rank {rank}: the ranks hold different inputs: rank(s) 1 "
                                             f"differ from rank 0"), g
    assert not (tmp_path / "data" / "indexes").exists()  # nothing was indexed
