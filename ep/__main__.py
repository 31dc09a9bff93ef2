import sys

from ep.cli import main

sys.exit(main())
