"""``python3 -m regrade.cli``: the same as ``regrade``."""

from regrade.cli import main

main()
