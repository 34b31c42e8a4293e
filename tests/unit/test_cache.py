"""The index cache's location (irglow.index.lucene_index.data_dir)."""

from __future__ import annotations

import pytest


def test_irglow_data_naming_a_file_is_a_clear_error(tmp_path, monkeypatch):
    from irglow.index.lucene_index import data_dir

    (tmp_path / "f").write_text("")
    monkeypatch.setenv("IRGLOW_DATA", str(tmp_path / "f"))
    with pytest.raises(NotADirectoryError, match="IRGLOW_DATA names .* which is a file"):
        data_dir()
