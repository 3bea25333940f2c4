"""Rendering rows of data for people and for other programs."""
