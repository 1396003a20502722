"""Benchmarks of mybinlog (not part of the package): ``python -m benchmarks [--quick]``; see benchmarks/run.py."""
