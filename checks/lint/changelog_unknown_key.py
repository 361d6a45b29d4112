"""changelog-unknown-config-key: a new changelog entry names configs that exist.

## What it enforces

Each key (or shell glob, as in `gptoss*`) of `config-keys` of an entry the PR
adds must match a top-level key of some master config at head.

## Why

`config-keys` decide which configs a changelog entry triggers a sweep for
and which published curves it annotates. A key with a typo, or one for a
config that was renamed or not added, silently matches nothing: the sweep
skips the change and the results page never shows the note.

## How it decides

Each key is matched as a shell glob against the top-level keys of every
master config at head. The finding sits on the key's line.

## Passing example

`config-keys: [dsv4-fp4-b200-dynamo-sglang-mtp]` with that entry in
configs/nvidia-master.yaml.

## Failing example

`config-keys: [dsv4-fp4-b200-dynamo-sglang-mpt]` (typo; nothing defines it).
"""

from __future__ import annotations

from typing import Iterator

from checks.facts.changelog import expand_keys
from checks.facts.masterconfig import MasterConfig
from checks.facts.yamlload import YamlProblem

from ..context import Context
from ..result import Finding, Severity
from .recipes import changelog_diff

ID = "changelog-unknown-config-key"
SEVERITY = Severity.ERROR


def check(ctx: Context) -> Iterator[Finding]:
    diff = changelog_diff(ctx)
    configs = ctx.head_configs
    if diff is None or not diff.new or not configs:
        return
    where = ", ".join(sorted(configs))
    for entry in diff.new:
        try:
            keys = entry.config_keys()
        except YamlProblem:
            continue  # yaml-syntax reports it
        for key, line in keys:
            if not _defined(key, configs):
                yield Finding(diff.head.path, line, ID, SEVERITY,
                              f"config key {key!r} matches no config defined at head in {where}; "
                              f"correct it to an existing config key (or add the config)")


def _defined(key: str, configs: dict[str, MasterConfig]) -> bool:
    """Whether `key` (a name or a shell glob) matches a top-level key of one of `configs`. A name without glob
    characters matches only itself, which a file whose text lacks it cannot define: such a file is not split."""
    if any(c in key for c in "*?["):
        return bool(expand_keys([key], [k for cfg in configs.values() for k in cfg.keys()]))
    return any(key in cfg.text and key in cfg.blocks for cfg in configs.values())
