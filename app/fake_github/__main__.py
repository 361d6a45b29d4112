"""`python -m app.fake_github WORLD_DIR … --port PORT`."""

import sys

from .runner import main

sys.exit(main())
