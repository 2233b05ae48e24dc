"""Benchmarks of the harness: what its operators, adapters and runner cost, and how exact they are.

Nothing here is part of the library a user imports (`retrofit`); the benchmarks import it and the
experiment entry points (`experiments/`) run them and write their results files.
"""
