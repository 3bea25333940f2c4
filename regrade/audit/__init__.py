"""Audits with known truth: a benchmark's data, a grader on sealed controls, engines on
hand-worked probes, and engines against Excel's own cached values (conformance)."""
