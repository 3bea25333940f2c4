"""Runs on disk: cases from a dataset or a manifest, and their answer positions."""
