"""`python -m relcol.cli` runs the relcol command."""

from relcol.cli import run

run()
