"""`python3 -m harness …` is `rebalance-lab …` (works before the console script is on PATH)."""

from harness.cli import main

main()
