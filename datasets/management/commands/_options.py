"""Shared handling for the import commands: read the file, print the report or the rejection."""

from pathlib import Path

from django.core.management.base import CommandError

from datasets.importers import ImportRejected


def run_import(command, path: str, do_import) -> None:
    """Call do_import(data=..., filename=...) on the file at path (read as a stream) and print what it did."""
    file = Path(path)
    if not file.is_file():
        raise CommandError(f"{path}: no such file")
    try:
        report = do_import(data=lambda: file.open("rb"), filename=file.name)
    except ImportRejected as rejected:
        raise CommandError(f"{path}: {rejected.summary()}") from None
    except OSError as error:
        raise CommandError(f"{path}: cannot be read ({error.strerror or error})") from None
    for line in report.summary_lines():
        command.stdout.write(line)
    command.stdout.write(command.style.SUCCESS(f"Imported {path}"))
