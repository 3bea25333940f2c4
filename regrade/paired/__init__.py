"""Paired before/after tables over tasks, their statistics, the shallow-against-full summary, and a refusal slice's figures."""
