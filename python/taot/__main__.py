# `python -m taot COMMAND ...`: see taot.cli.
import sys

from .cli import main

sys.exit(main())
