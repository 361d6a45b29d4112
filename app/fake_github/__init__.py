"""A fake GitHub REST API served from world fixtures (see WORLD_FORMAT.md).

`FakeGitHub(*world_dirs)` runs it in a background thread for tests; `main(argv)`
runs it standalone; `create_app(worlds)` is the ASGI app itself.
"""

from .faults import Fault
from .runner import FakeGitHub, main
from .server import create_app
from .state import GitHubState, WorldConflict

__all__ = ["FakeGitHub", "Fault", "GitHubState", "WorldConflict", "create_app", "main"]
