"""Duplicate search: latency, memory and recall of the index backends, from 100k to 10M texts."""
