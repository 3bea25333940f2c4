"""Processes and their limits, below every engine: CPU time of a process tree (cpu_time.py), the
deadline of a case's own work (limits.py), and ending the processes regrade starts (supervisor.py)."""
