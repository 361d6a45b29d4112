"""Which launcher a master entry's runner runs, and what a recipe's container name resolves to there.

InferenceX's benchmark workflows run `runners/launch_${RUNNER_NAME%%_*}.sh`
on the runner that picks the job up, with the entry's image in `$IMAGE`. An
entry's `runner:` is a label of the runners file (`configs/runners.yaml`,
`labels: {cluster:gb300-nv: [gb300-nv_0, ...]}`); each runner runs the
launcher named after it up to its first "_" (`Policy.launcher`).

A multi-node launcher writes srt-slurm's cluster config, `srtslurm.yaml`, in
a heredoc. Its `containers:` map is what srt-slurm resolves a recipe's
`model.container` through (`resolve_container_path`: the name is looked up
as a key, its value is the container file). A key runs the master image when
its value is the file the `"${IMAGE}"` key maps to, or a variable that every
assignment builds from `$IMAGE` (`SQUASH_FILE=".../$(echo "$IMAGE" | sed
...).sqsh"`). So with

    containers:
      dynamo-sglang: ${SQUASH_FILE}
      "${IMAGE}": ${SQUASH_FILE}
      nginx-sqsh: ${NGINX_SQUASH_FILE}

a recipe's `container: dynamo-sglang` runs the master image and
`container: nginx-sqsh` does not. A key written as a variable
(`"${CONTAINER_KEY}": ...`) stands for each literal value the launcher
assigns that variable, and for the image where it assigns `$IMAGE`.

Scripts are read as text (`checks.facts.bash.Script`), never run.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from checks.context import Context

from .bash import Script

IMAGE_VARIABLE = "IMAGE"  # the variable the workflows give a launcher the entry's image in

_CONTAINERS = re.compile(r"^containers:\s*(?:#.*)?$")
_SEPARATOR = re.compile(r":(?:\s|$)")  # the colon that ends a plain key
_COMMENT_START = re.compile(r"\s#")
_VARIABLE = re.compile(r"^\$(?:\{(\w+)\}|(\w+))$")
_IMAGE_REF = re.compile(r"\$\{?" + IMAGE_VARIABLE + r"\b")
_IMAGE_KEY = "\0image"  # a key standing for the entry's image itself


@dataclass(frozen=True)
class ContainerMap:
    """The `containers:` entries one launcher writes into srtslurm.yaml."""

    launcher: str
    line: int  # line of its first `containers:`
    entries: tuple[tuple[frozenset[str], str], ...]  # (the names a key stands for, its value as written)
    master: frozenset[str]  # values that are the file of the entry's image

    def resolve(self, container: str, image: str) -> str | None:
        """What `container` maps to: "master" (the entry's image), the value it maps to, or None (no key)."""
        names = {container} | ({_IMAGE_KEY} if container == image else set())
        found = [value for keys, value in self.entries if keys & names]
        if not found:
            return None
        return "master" if any(v in self.master for v in found) else found[0]


def container_map(ctx: Context, path: str) -> ContainerMap | None:
    """The `containers:` map the launcher at `path` writes (None: not in the snapshot, or it writes none)."""
    return ctx.once(_container_map, path)


def _container_map(ctx: Context, path: str) -> ContainerMap | None:
    text = ctx.need.file("head", path)
    if not isinstance(text, str):  # absent, or not read yet
        return None
    script = ctx.script(text)
    entries: list[tuple[frozenset[str], str]] = []
    first = 0
    inside = None
    for ln in script.lines:
        if ln.heredoc is None:
            inside = None
            continue
        if _CONTAINERS.match(ln.code):
            inside, first = ln.heredoc.start, first or ln.number
            continue
        if inside != ln.heredoc.start or not ln.code.strip() or ln.code.lstrip().startswith("#"):
            continue
        entry = _entry(ln.code)
        if entry is None:
            inside = None  # the next top-level key ends the map
            continue
        entries.append((_names(script, _unquote(entry[0])), _unquote(entry[1])))
    if not entries:
        return None
    master = {value for keys, value in entries if _IMAGE_KEY in keys}
    master |= {value for _keys, value in entries if _built_from_image(script, value)}
    return ContainerMap(path, first, tuple(entries), frozenset(master))


def _entry(code: str) -> tuple[str, str] | None:
    """(key, value) of an indented `key: value` line; None when it is not one. A quoted key is one string, a
    plain key ends at the first colon followed by a blank (or the end); the value ends before a blank that
    starts a comment (` #`). In one pass over the line, whatever it holds."""
    rest = code.lstrip()
    if len(rest) == len(code) or not rest or rest[0] == "#":
        return None
    if rest[0] in "\"'":
        close = rest.find(rest[0], 1)
        after = rest[close + 1:].lstrip() if close > 0 else ""
        if not after.startswith(":") or (after[1:2] and not after[1].isspace()):
            return None
        key, tail = rest[:close + 1], after[1:]
    else:
        m = _SEPARATOR.search(rest, 1)
        if m is None:
            return None
        key, tail = rest[:m.start()].rstrip(), rest[m.start() + 1:]
    value = tail.lstrip()
    comment = _COMMENT_START.search(value)
    return key, (value if comment is None else value[:comment.start() + 1]).rstrip()


def _unquote(text: str) -> str:
    text = text.strip()
    return text[1:-1] if len(text) >= 2 and text[0] == text[-1] and text[0] in "\"'" else text


def _names(script: Script, key: str) -> frozenset[str]:
    """The container names a key stands for: itself, or each value the launcher assigns its variable."""
    m = _VARIABLE.match(key)
    if m is None:
        return frozenset({key})
    name = m.group(1) or m.group(2)
    if name == IMAGE_VARIABLE:
        return frozenset({_IMAGE_KEY})
    out = set()
    for a in script.assignments:
        if a.name != name or a.value is None:
            continue
        value = a.text
        if _VARIABLE.match(value) and _IMAGE_REF.match(value):
            out.add(_IMAGE_KEY)
        elif "$" not in value and "`" not in value:
            out.add(value)
    return frozenset(out)


def _built_from_image(script: Script, value: str) -> bool:
    """Whether `value` is a variable every assignment of which is built from `$IMAGE`."""
    m = _VARIABLE.match(value)
    if m is None:
        return False
    name = m.group(1) or m.group(2)
    assigned = [a.text for a in script.assignments if a.name == name and a.value is not None]
    return bool(assigned) and all(_IMAGE_REF.search(text) for text in assigned)
