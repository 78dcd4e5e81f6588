"""`python3 -m harness.cli …`: the command line."""

from harness.cli import main

main()
