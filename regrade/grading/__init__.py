"""Grading one case: comparison policies, the official grader's cells, one engine's grade,
the consensus of full engines, verdicts, and the graders an audit runs."""
