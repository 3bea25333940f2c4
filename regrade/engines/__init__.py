"""The formula engines behind one protocol (:mod:`regrade.engines.base`), the registry that
opens them under a time and memory limit, and the rules by which they abstain."""
