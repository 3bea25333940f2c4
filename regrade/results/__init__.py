"""Results files and their records: the one schema (records.py), how files are written and read
(files.py), outcomes from any grader (outcomes.py), and what every file says made it (provenance.py)."""
