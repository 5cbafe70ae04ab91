"""Importers: read question and answer files, validate every row, then write atomically.

Reading never touches the database; `store` validates against it and writes in one
transaction, so a file with any bad row imports nothing.
"""

from .errors import ImportRejected, RowError
from .report import ImportReport

__all__ = ["ImportRejected", "ImportReport", "RowError"]
