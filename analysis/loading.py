"""The ratings as the three release-format DataFrames the statistics take (analysis/DESIGN.md).

From the database, the rows of `studies.exports` are written as CSV text and parsed by `pandas.read_csv` as
they stream, so a frame built here is exactly what reading the exported `ratings_*.csv` files gives (booleans
as bool, empty cells as NaN, the same dtypes) and the analysis cannot differ between the two paths. The CSV
text is never held whole: pandas reads it from the row generator in chunks.

The analysis itself (`analyze`, runs) reads the database through the results table (`results.studies_frames`);
`load_frames` is the export's view of the same ratings, which tests compare it with, and `load_frames_from_dir`
reads release files (`analyze --from`).
"""

import io
from collections.abc import Iterable
from pathlib import Path

import pandas as pd

from studies import release
from studies.exports import export_rows, stream_csv
from studies.models import Study

KINDS = release.KINDS  # independent, pairwise, counterfactual: the keys of the frames


class _ChunksFile(io.RawIOBase):
    """A read-only file over an iterator of byte chunks, for `pandas.read_csv`."""

    def __init__(self, chunks: Iterable[bytes]):
        self._chunks = iter(chunks)
        self._pending = b""

    def readable(self) -> bool:
        return True

    def readinto(self, buffer) -> int:
        while not self._pending:
            chunk = next(self._chunks, None)
            if chunk is None:
                return 0
            self._pending = chunk
        size = min(len(buffer), len(self._pending))
        buffer[:size] = self._pending[:size]
        self._pending = self._pending[size:]
        return size


def _read(chunks: Iterable[bytes]) -> pd.DataFrame:
    return pd.read_csv(io.BufferedReader(_ChunksFile(chunks)))


def load_frame(kind: str, study: Study | None = None) -> pd.DataFrame:
    """One kind's current ratings (of a study, or of every study) as `pandas.read_csv` reads its export."""
    return _read(stream_csv(export_rows(kind, study)))


def load_frames(study: Study | None = None) -> dict[str, pd.DataFrame]:
    """The three kinds' frames, keyed by kind; a kind without ratings gives an empty frame with its columns."""
    return {kind: load_frame(kind, study) for kind in KINDS}


def load_frames_from_dir(path) -> dict[str, pd.DataFrame]:
    """The frames of a release directory (ratings_independent.csv etc.); a missing file counts as no ratings."""
    path = Path(path)
    if not path.is_dir():
        raise FileNotFoundError(f"{path} is not a directory")
    found = [kind for kind in KINDS if (path / release.FILENAMES[kind]).is_file()]
    if not found:
        names = ", ".join(release.FILENAMES.values())
        raise FileNotFoundError(f"{path} holds none of {names}")
    frames = {}
    for kind in KINDS:
        file = path / release.FILENAMES[kind]
        # A missing file reads as the header-only file an export without ratings writes.
        frames[kind] = pd.read_csv(file) if file.is_file() else _read(stream_csv([release.header(kind)]))
    return frames


def ratings_count(frames: dict[str, pd.DataFrame]) -> int:
    return sum(len(frame) for frame in frames.values())
