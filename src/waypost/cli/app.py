"""The ``waypost`` Typer app, its error handling and ``main``; the commands live in the modules beside it."""

from __future__ import annotations

import os
import sys
import traceback
from pathlib import Path
from typing import TYPE_CHECKING, Any

import typer
from rich.console import Console
from typer.core import TyperGroup

from waypost.embeddings.sentence_transformer import limit_blas_threads
from waypost.errors import WaypostError

if TYPE_CHECKING:
    from typer import _click  # typer's own copy of click, which its Group.invoke takes


console = Console()
err = Console(stderr=True)


def _one_line(message: str) -> str:
    """A message as one printable line (lone surrogates, e.g. from odd file names, escaped)."""
    return " ".join(message.split()).encode("utf-8", "backslashreplace").decode("utf-8")


def _print_error(message: str) -> None:
    err.print("[bold red]error:[/] ", end="")
    err.print(_one_line(message), markup=False, highlight=False, soft_wrap=True)


class _Commands(TyperGroup):
    """Runs every command (subcommands too) so that bad input never ends in a traceback: a ``WaypostError``,
    or the ``OSError``/``UnicodeError``/``ValueError`` of an unusable file, prints one line and exits 2; any
    other exception is a bug, reported in one line with where it happened (``WAYPOST_TRACEBACK=1``: in full)."""

    def invoke(self, ctx: _click.Context) -> Any:
        try:
            return super().invoke(ctx)
        except (typer.Exit, typer.Abort, typer.TyperException):  # usage errors and exits are typer's own
            raise
        except WaypostError as exc:
            _print_error(str(exc))
        except (OSError, UnicodeError, ValueError) as exc:
            _print_error(f"{type(exc).__name__}: {exc}")
        except Exception as exc:
            if os.environ.get("WAYPOST_TRACEBACK"):
                raise
            frame = traceback.extract_tb(exc.__traceback__)[-1]
            _print_error(
                f"unexpected {type(exc).__name__}: {exc} (at {Path(frame.filename).name}:{frame.lineno} in "
                f"{frame.name}); this is a bug in waypost: please report it, with the full traceback that "
                "WAYPOST_TRACEBACK=1 prints"
            )
            raise typer.Exit(1) from exc
        raise typer.Exit(2)


app = typer.Typer(
    cls=_Commands, add_completion=False, no_args_is_help=True, help="waypost: local-first adaptive retrieval."
)


def _thread_settings() -> None:
    """One BLAS thread: on few cores it otherwise fights torch's threads. The variables reach the libraries loaded
    from now on; threadpoolctl limits those already loaded (importing waypost loads numpy)."""
    os.environ.setdefault("OPENBLAS_NUM_THREADS", "1")
    os.environ.setdefault("TOKENIZERS_PARALLELISM", "false")
    limit_blas_threads()


def main() -> None:
    _thread_settings()
    try:
        app()
    except WaypostError as exc:
        err.print(f"[bold red]error:[/] {exc}")
        sys.exit(2)
