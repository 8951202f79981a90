"""Benchmarks (`make bench`): measured, never asserted. Results go to docs/benchmarks.md."""
