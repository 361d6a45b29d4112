"""Which repository file a path written in a script names.

Benchmark scripts name their helpers relative to themselves or to the
checkout: `"$(dirname "$0")/patch.py"`, `"${BASH_SOURCE[0]%/*}/x.sh"`,
`"$SCRIPT_DIR/x.py"` after `SCRIPT_DIR="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"`,
`"$GITHUB_WORKSPACE/utils/x.py"`, or through a helper function whose body is
`cd <dir> && pwd` (or `echo <dir>`). `repo_path` resolves those forms to a
path in the repository, relative paths taken from the repository root (where
the runners start every script); anything it cannot resolve is None, never a
guess.
"""

from __future__ import annotations

import posixpath
import re

from .bash import Script

MAX_DEPTH = 4

_SELF = r"""["']?(?:\$0|\$\{0\}|\$\{BASH_SOURCE(?:\[0\])?\}|\$BASH_SOURCE)["']?"""
_DIRNAME = rf"\$\(dirname\s+{_SELF}\)"
_SELF_DIR = re.compile(
    rf"""\$\(cd\s+["']?{_DIRNAME}["']?\s*(?:>\s*/dev/null\s*)?(?:2>&1\s*)?&&\s*pwd(?:\s+-P)?\)"""
    rf"|{_DIRNAME}|\$\{{BASH_SOURCE(?:\[0\])?%/\*\}}|\$\{{0%/\*\}}")
_WORKSPACE = re.compile(r"^\$\{?GITHUB_WORKSPACE\}?(?=/|$)")
_FUNC_CALL = re.compile(r"\$\((\w+)\)")
_VAR = re.compile(r"\$\{?([A-Za-z_]\w*)\}?")


def repo_path(text: str, script_path: str, script: Script, depth: int = 0) -> str | None:
    """The repository path `text` (a word of `script`, which lives at `script_path`) names, if it can tell."""
    if depth > MAX_DEPTH or not text:
        return None
    here = posixpath.dirname(script_path)
    text = text.strip("\"'")
    text = _SELF_DIR.sub(lambda _m: here or ".", text)
    text = _WORKSPACE.sub(".", text)
    text = _FUNC_CALL.sub(lambda m: _function_dir(m.group(1), script_path, script, depth) or m.group(0), text)
    text = _VAR.sub(lambda m: _variable_dir(m.group(1), script_path, script, depth) or m.group(0), text)
    if "$" in text or "`" in text or "*" in text:
        return None
    if text.startswith("/"):
        return None  # a path on the runner or in the container, not in the repository
    path = posixpath.normpath(text)
    return None if path.startswith("..") or path == "." else path


def _function_dir(name: str, script_path: str, script: Script, depth: int) -> str | None:
    """The directory a helper function prints: its body is `cd <dir> && pwd` or `echo <dir>`."""
    body = [c.words for c in script.simple_commands if c.function == name]
    if len(body) == 2 and body[0][:1] == ("cd",) and len(body[0]) == 2 and body[1][:1] == ("pwd",):
        return repo_path(body[0][1], script_path, script, depth + 1)
    if len(body) == 1 and body[0][:1] == ("echo",) and len(body[0]) == 2:
        return repo_path(body[0][1], script_path, script, depth + 1)
    return None


def _variable_dir(name: str, script_path: str, script: Script, depth: int) -> str | None:
    """The directory a variable set once, to a path this module can resolve, stands for."""
    values = [a for a in script.assignments if a.name == name]
    if len(values) != 1 or values[0].value is None:
        return None
    return repo_path(values[0].text, script_path, script, depth + 1)
