"""python -m regrade: the command line."""

from regrade.cli import main

main()
