"""The errors a collection's loading raises that every command answers in one line: kept apart from the loaders
so that the command line can name them without importing ir_datasets' side (``irglow search`` of a local folder
never needs it)."""

from __future__ import annotations


class UnknownDatasetError(KeyError):
    """An ir_datasets id that ir_datasets does not know (the message suggests close ones)."""

    def __str__(self) -> str:  # KeyError would quote the message
        return str(self.args[0])


class DatasetUnavailableError(RuntimeError):
    """ir_datasets could not get a collection's files (no network, licence-gated): says which files
    it wanted and where to put them, so an offline machine can be given them by hand."""
