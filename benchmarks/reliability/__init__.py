"""Reliability: what each kind of bad input does, as the reliability guide's table shows it."""
