"""`python -m trainer.report`: see trainer/report/__init__.py."""

import sys

from .command import main

sys.exit(main())
