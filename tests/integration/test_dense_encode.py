"""Dense encoding (irglow.dense.encode, the encoders' token budgets)."""

from __future__ import annotations

import logging


def test_long_queries_are_reported_once_per_batch(caplog):
    from irglow.models.twbert.model import report_budget

    with caplog.at_level(logging.WARNING):
        report_budget([("q1", 7, 9), ("q2", 5, 6), ("q3", 30, 34)], "TW-BERT weights", 32)
    assert len(caplog.records) == 1
    assert "TW-BERT weights: 3 queries are longer than 32 tokens (e.g. q1): 7 terms dropped" in caplog.text
