"""LibreOffice, run headless in Debian's own Python through its UNO bridge.

- :mod:`~regrade.engines.libreoffice.engine`: the engine and its departures from Excel;
- :mod:`~regrade.engines.libreoffice.worker`: the helper script that drives soffice (another interpreter);
- :mod:`~regrade.engines.libreoffice.office_files`: a private soffice's files, and removing every one;
- :mod:`~regrade.engines.libreoffice.rewrites`: formulas rewritten on an imported copy before loading;
- :mod:`~regrade.engines.libreoffice.logicals`: where its numbers-for-logicals depart from Excel.
"""
