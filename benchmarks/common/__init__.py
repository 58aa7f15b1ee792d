"""What every benchmark shares: the harness (command line, machine, result rows), the recipe's data split, the ceiling."""
