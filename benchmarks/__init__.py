"""Benchmarks, run by hand (never in CI): each script in a folder named for what it measures, on `common.harness`."""
