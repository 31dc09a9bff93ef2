"""`python -m ep`: the command line (ep/cli.py)."""
import sys

from ep.cli import main

sys.exit(main())
