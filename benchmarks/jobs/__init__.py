"""The benchmark jobs: one module per benchmark's root config (`configs/<name>.yaml`), each
declaring its `CONFIG` and `SCHEMA` and measuring in `run` with the benchmark modules of this
package's parent (`benchmarks.exactness`, `benchmarks.scale`, ...).

The contract of a job module (what it declares, what it may import at its top, how it starts) is
`retrofit.jobs`'s: `retrofit.jobs.launch("<name>")` finds these modules by reading their sources
and imports the one it runs by name, so the library never imports this package; `cases` holds the
keys and the fitted cases that the jobs measured on fitted benchmark cases share.
"""
