"""Shared handling for the import commands: read the file, print the report or the rejection."""

from pathlib import Path

from django.core.management.base import CommandError

from datasets.importers import ImportRejected


def read_input(path: str) -> bytes:
    file = Path(path)
    if not file.is_file():
        raise CommandError(f"{path}: no such file")
    return file.read_bytes()


def run_import(command, path: str, do_import) -> None:
    """Call do_import(data=..., filename=...) on the file at path and print what it did."""
    data = read_input(path)
    try:
        report = do_import(data=data, filename=Path(path).name)
    except ImportRejected as rejected:
        raise CommandError(f"{path}: {rejected.summary()}") from None
    for line in report.summary_lines():
        command.stdout.write(line)
    command.stdout.write(command.style.SUCCESS(f"Imported {path}"))
