"""``python -m textgate``: the same command as the ``textgate`` entry point."""

import sys

from textgate.cli import main

sys.exit(main())
