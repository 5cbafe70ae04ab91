"""A study's table as a CSV download, as `analyze --study` writes it: the judge and MEDIC pages' tables.
Cells are protected against formula injection, as every CSV download (`studies.exports.stream_csv`)."""

import math

import pandas as pd
from django.http import StreamingHttpResponse
from django.utils.text import slugify

from studies.exports import stream_csv
from studies.models import Study


def _cell(value):
    return None if isinstance(value, float) and math.isnan(value) else value


def table_download(frame: pd.DataFrame, *, study: Study, filename: str) -> StreamingHttpResponse:
    """`frame` as `<study's slug>-<filename>` (e.g. `judged-study-agreement.csv`)."""
    rows = [list(frame.columns), *([_cell(value) for value in row] for row in frame.itertuples(index=False))]
    response = StreamingHttpResponse(stream_csv(rows), content_type="text/csv; charset=utf-8")
    stem = slugify(study.name) or f"study-{study.pk}"
    response["Content-Disposition"] = f'attachment; filename="{stem}-{filename}"'
    return response
