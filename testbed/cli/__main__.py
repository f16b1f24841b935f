"""`python -m testbed.cli ...`: the same command line as the `testbed` script."""

from testbed.cli import main

main()
