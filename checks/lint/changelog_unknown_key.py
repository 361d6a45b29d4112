"""changelog-unknown-config-key: a new changelog entry names configs that exist.

`config-keys` decide which configs a changelog entry triggers a sweep for
and which published curves it annotates. A key with a typo, or one for a
config that was renamed or not added, silently matches nothing: the sweep
skips the change and the results page never shows the note. Each key (or
shell glob, as in `gptoss*`) of an entry the PR adds must match a top-level
key of some master config at head. The finding sits on the key's line.

Passes: `config-keys: [dsv4-fp4-b200-dynamo-sglang-mtp]` with that entry in
configs/nvidia-master.yaml.

Fails: `config-keys: [dsv4-fp4-b200-dynamo-sglang-mpt]` (typo; nothing defines it).
"""

from __future__ import annotations

from typing import Iterator

from ..changelog import expand_keys
from ..context import Context
from ..result import Finding, Severity
from ..yamlload import YamlProblem
from .recipes import changelog_diff

ID = "changelog-unknown-config-key"
SEVERITY = Severity.ERROR


def check(ctx: Context) -> Iterator[Finding]:
    diff = changelog_diff(ctx)
    configs = ctx.head_configs
    if diff is None or not diff.new or not configs:
        return
    known = [key for cfg in configs.values() for key in cfg.keys()]
    where = ", ".join(sorted(configs))
    for entry in diff.new:
        try:
            keys = entry.config_keys()
        except YamlProblem:
            continue  # yaml-syntax reports it
        for key, line in keys:
            if not expand_keys([key], known):
                yield Finding(diff.head.path, line, ID, SEVERITY,
                              f"config key {key!r} matches no config defined at head in {where}; "
                              f"correct it to an existing config key (or add the config)")
