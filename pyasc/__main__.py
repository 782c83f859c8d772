"""`python -m pyasc`: the same command line as the `pyasc` console script."""
import sys

from .cli import main

sys.exit(main())
