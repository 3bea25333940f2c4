"""IronCalc, the default consensus's first engine, and what regrade adds around it.

- :mod:`~regrade.engines.ironcalc.engine`: the engine (load, rewrite, evaluate, read back);
- :mod:`~regrade.engines.ironcalc.bridge`: functions IronCalc lacks or gets wrong, computed
  in Python from arguments IronCalc evaluates, resolved innermost call first;
- :mod:`~regrade.engines.ironcalc.calls`: finding the innermost call the bridge computes;
- :mod:`~regrade.engines.ironcalc.arguments`: evaluating those calls' arguments in scratch cells;
- :mod:`~regrade.engines.ironcalc.adapters`: one adapter per bridged function, from evaluated
  arguments to Excel's value, by category beside :mod:`regrade.engines.functions`.
"""
