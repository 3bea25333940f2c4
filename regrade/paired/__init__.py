"""Paired before/after tables over tasks, their statistics, and the shallow-against-full summary."""
