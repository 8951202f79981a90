"""Evaluation harnesses: measure what the context compiler retrieves against labelled data.

Evaluation data is read in place (e.g. ../shared/eval/locomo-dev) and never copied into the
repository."""
