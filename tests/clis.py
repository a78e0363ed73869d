"""The two command lines, ``python -m parlab`` (the library's commands) and ``python -m
lessons`` (the lessons' demos), as one table for the CLI tests."""
import lessons.__main__ as lessons_cli
import parlab.__main__ as parlab_cli

LIBRARY = [name for name, _ in parlab_cli.COMMANDS]
LESSONS = [name for name, _ in lessons_cli.COMMANDS]
COMMANDS = LIBRARY + LESSONS


def cli_of(command: str):
    """The ``__main__`` module that serves ``command``."""
    return lessons_cli if command in LESSONS else parlab_cli


def package_of(command: str) -> str:
    """What follows ``python -m`` for ``command``."""
    return "lessons" if command in LESSONS else "parlab"


def main(argv: list[str]) -> None:
    cli_of(argv[0]).main(argv)
