"""Runs on disk: cases from a dataset or a manifest, answer positions, results files."""
