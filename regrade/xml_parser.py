"""Which XML parser openpyxl uses in the processes of the ``regrade`` command.

openpyxl parses with ``defusedxml`` whenever it is installed (regrade depends on it), and
defusedxml's parser is the standard library's pure-Python one, with a Python call for every
element: a fifth to a third of openpyxl's reading time in a cold rescore. The command lets
openpyxl use the standard library's C parser instead, because

- the workbooks regrade reads for a verdict (outputs, goldens, what the engines compute) are
  screened first: any XML part declaring a DTD or an entity is refused before a parser sees
  it (``workbook/screening.py``), so nothing is left for defusedxml to refuse;
- expat 2.4.1 and later limits entity amplification itself, and ElementTree resolves no
  external entity: a part the screening missed could neither expand nor fetch.

Both parsers build the same elements from the same bytes: the values read do not change
(``docs/benchmarks.md`` compares them on the shared split). The choice is openpyxl's
``OPENPYXL_DEFUSEDXML``, read once when openpyxl is imported, so it is made before that and
passes to the processes the command starts. A user who sets the variable keeps their choice,
and a program that imports regrade as a library keeps whatever its own openpyxl chose.
"""

from __future__ import annotations

import os
import pyexpat
import sys

AMPLIFICATION_LIMITED = (2, 4, 1)  # the expat release that refuses billion laughs by itself


def let_openpyxl_use_the_c_parser() -> None:
    """Choose the C parser for openpyxl in this process and its children, unless openpyxl is
    imported already, the user chose, or this expat does not limit amplification."""
    if "openpyxl" not in sys.modules and pyexpat.version_info >= AMPLIFICATION_LIMITED:
        os.environ.setdefault("OPENPYXL_DEFUSEDXML", "False")
