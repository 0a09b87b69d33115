"""The ``waypost`` command run in-process, as the installed command runs it (see the ``cli`` fixture)."""

from __future__ import annotations

import sys
import traceback
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path

from waypost.base import Embedder


@dataclass(frozen=True)
class CliResult:
    exit_code: int
    stdout: str
    stderr: str
    exception: BaseException | None  # an exception main let escape (a process would print its traceback)


class Cli:
    """``waypost ARGS`` run in this process through ``waypost.cli.main``, as the installed command runs it,
    with stdout and stderr captured apart and the session's model instead of a fresh load per command."""

    def __init__(self, model: Embedder) -> None:
        self.model = model

    def __call__(self, *args: str | Path, env: Mapping[str, str] | None = None, input: str | None = None) -> CliResult:
        from typer.testing import CliRunner

        from waypost.cli import main
        from waypost.embeddings.factory import _shared as shared_embedders
        from waypost.embeddings.factory import share_embedder, unshare_embedder

        runner = CliRunner()
        saved_argv = sys.argv
        escaped: BaseException | None = None
        # COLUMNS: rich wraps at the terminal's width otherwise, which differs from one run to the next
        with runner.isolation(input=input, env={"COLUMNS": "250", **(env or {})}) as (out, err, _):
            sys.argv = ["waypost", *map(str, args)]
            already = shared_embedders.get(self.model.model_id) is self.model  # a live test server shares it
            share_embedder(self.model)
            try:
                main()
                code = 0
            except SystemExit as exit_:
                code = exit_.code if isinstance(exit_.code, int) else 0 if exit_.code is None else 1
                if isinstance(exit_.code, str):
                    print(exit_.code, file=sys.stderr)
            except Exception as exc:
                traceback.print_exc()
                code, escaped = 1, exc
            finally:
                if not already:
                    unshare_embedder(self.model.model_id)
                sys.argv = saved_argv
                sys.stdout.flush()
                sys.stderr.flush()
            return CliResult(code, out.getvalue().decode(), err.getvalue().decode(), escaped)
