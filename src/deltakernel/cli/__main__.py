"""`python -m deltakernel.cli`: the same as the `deltakernel` console script."""

import sys

from . import main

sys.exit(main())
