"""Atomic outputs (irglow.utils.atomic) when the disk is full."""

from __future__ import annotations

import pytest

from irglow.cli import main


def test_a_full_disk_is_one_line_naming_the_folder_and_nothing_is_left(small_mount, capsys):
    # 400 topics: an index of ~5 MB on the 3 MB disk (the default demo's 2.4 MB fits since no raw text is stored)
    assert main(["search", "demo:n_topics=400", "--query", "brulzem", "--data-dir", str(small_mount)]) == 2
    err = capsys.readouterr().err
    assert f"no space left on the device holding {small_mount}/indexes while indexing demo" in err
    assert "java.io.IOException" not in err and "Traceback" not in err
    assert not any((small_mount / "indexes").iterdir())


def test_a_full_disk_while_encoding_is_one_error_and_nothing_is_reused(small_mount):
    """Issue 51: the vectors are written through a memory map; its blocks are reserved first, so a full disk is an
    OSError naming the space needed (not a SIGBUS halfway), and no embeddings folder is left to be reused."""
    import errno

    import torch

    from irglow.data.records import make_document
    from irglow.dense.encode import encode_corpus

    docs = [make_document(f"d{i}", body="x") for i in range(20000)]  # 20,000 × 64 floats: 5 MB on a 3 MB disk
    with pytest.raises(OSError) as caught:
        encode_corpus(docs, lambda batch: torch.ones(len(batch), 64), small_mount / "emb", 4096)
    assert caught.value.errno == errno.ENOSPC and "20,000 vectors of 64 dimensions" in str(caught.value)
    assert not (small_mount / "emb").exists()
