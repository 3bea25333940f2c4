"""The ``regrade`` command line: parse, call the library (:mod:`regrade.api` and the layers under
it), render, map errors to exit codes. One module per group of commands; the group itself, its
error handling and progress in app.py; the options several commands share in options.py."""

from regrade.xml_parser import let_openpyxl_use_the_c_parser

let_openpyxl_use_the_c_parser()  # before any module below imports openpyxl

from regrade.cli.app import main  # noqa: E402
from regrade.cli import (  # noqa: E402
    audit_commands, engine_commands, run_commands, serve_commands, slice_commands, table_commands,
)

COMMAND_GROUPS = (run_commands, table_commands, engine_commands, audit_commands, slice_commands,
                  serve_commands)  # importing them registers their commands

__all__ = ["main"]
