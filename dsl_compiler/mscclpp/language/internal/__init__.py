"""Compiler internals: ops, passes, per-rank state and JSON emission. Not a public API."""
