"""Which head entries name a recipe: the recipe index, read from the master configs' text.

A recipe is named by `CONFIG_FILE=` (a benchmark config) or `EVAL_CONFIG_FILE=`
(evals only) in an entry's `additional-settings`. The index finds a recipe's
entries by a textual scan of the master blocks, so the 12,000-line master
configs are not parsed to learn which entries run a recipe; only the entries
naming it are parsed when their points are asked for (`points_running`).

API (cached per Context):
    recipe_index(ctx)            -> recipe path -> the head entries naming it (textual, nothing parsed)
    points_running(ctx, recipe)  -> the head points whose CONFIG_FILE is that recipe
"""

from __future__ import annotations

import posixpath
import re
from dataclasses import dataclass
from typing import Iterable

from checks.context import Context

from .runs import PointRun, head_points, recipe_target, run_of
from .yamlload import YamlProblem

_CONFIG_FILE = re.compile(r"""(?<![A-Za-z0-9_])(EVAL_)?CONFIG_FILE=([^\s"',\]}]+)""")


@dataclass(frozen=True)
class Naming:
    """A master entry at head whose points name a recipe (`CONFIG_FILE=` or `EVAL_CONFIG_FILE=`)."""

    config_path: str
    key: str
    changed: bool  # the entry's block differs from base beyond comments and blank lines
    eval_only: bool  # named only by EVAL_CONFIG_FILE


def recipe_index(ctx: Context) -> RecipeIndex:
    """recipe path -> the head entries naming it: a textual scan of the blocks (nothing parsed), so every
    recipe's entries are known without parsing 12,000-line master configs."""
    return ctx.once(RecipeIndex)


class RecipeIndex:
    """Which head entries name a recipe with CONFIG_FILE or EVAL_CONFIG_FILE, read from the blocks' text. A
    recipe's entries are looked for when it is asked about, in the blocks whose text holds its file name
    (a value names its file as written, whatever the folders around it); asked about more than a few, every
    block's values are resolved once. `named_by_changes` reads the blocks that differ from base."""

    def __init__(self, ctx: Context):
        self.ctx = ctx
        self._found: dict[str, tuple[Naming, ...]] = {}
        self._all: dict[str, tuple[Naming, ...]] | None = None
        self._blocks: list[tuple[str, str, str, bool]] = []  # (config path, key, text, changed) naming some file
        self._targets: dict[int, list[tuple[str, bool]]] = {}  # block -> (recipe path, EVAL_) of each value
        for cfg_path, cfg in sorted(ctx.head_configs.items()):
            if "CONFIG_FILE=" not in cfg.text:
                continue
            base = ctx.base_configs.get(cfg_path)
            for key, block in cfg.blocks.items():
                if "CONFIG_FILE=" not in block.text:
                    continue
                old = base.blocks.get(key) if base else None
                changed = old is None or (old.text != block.text and _content(old.text) != _content(block.text))
                self._blocks.append((cfg_path, key, block.text, changed))

    def get(self, path: str, default: tuple[Naming, ...] = ()) -> tuple[Naming, ...]:
        if path not in self._found:
            self._found[path] = self._look_up(path)
        return self._found[path] or default

    def _look_up(self, path: str) -> tuple[Naming, ...]:
        if self._all is None and len(self._found) >= _FEW_RECIPES:
            self._all = self._naming(range(len(self._blocks)))
        if self._all is not None:
            return self._all.get(path, ())
        name = posixpath.basename(path)
        holding = (i for i, (_cfg, _key, text, _changed) in enumerate(self._blocks) if name in text)
        return self._naming(holding, path).get(path, ())

    def __getitem__(self, path: str) -> tuple[Naming, ...]:
        found = self.get(path)
        if not found:
            raise KeyError(path)
        return found

    def beside(self, path: str) -> tuple[Naming, ...]:
        """The entries naming (by CONFIG_FILE) another recipe in `path`'s directory: what a recipe no entry
        names yet is most likely run like (its model, in a PR adding it before its master entry)."""
        directory = posixpath.dirname(path)
        marker = posixpath.basename(directory) + "/"
        holding = [i for i, (_cfg, _key, text, _changed) in enumerate(self._blocks) if marker in text]
        out: dict[tuple[str, str], Naming] = {}
        for i in holding:
            cfg_path, key, _text, changed = self._blocks[i]
            for target, evals in self._block_targets(i):
                if not evals and target != path and posixpath.dirname(target) == directory:
                    out.setdefault((cfg_path, key), Naming(cfg_path, key, changed, False))
        return tuple(out.values())

    def named_by_changes(self) -> tuple[str, ...]:
        """The recipe paths the blocks that differ from base name, in file and line order."""
        changed = (i for i, (_c, _k, _t, ch) in enumerate(self._blocks) if ch)
        return tuple(dict.fromkeys(path for i in changed for path, _eval in self._block_targets(i)))

    def _naming(self, blocks: Iterable[int], only: str | None = None) -> dict[str, tuple[Naming, ...]]:
        """recipe path -> the entries naming it among `blocks` (in order), for every path or `only`."""
        index: dict[str, dict[tuple[str, str], Naming]] = {}
        for i in blocks:
            cfg_path, key, _text, changed = self._blocks[i]
            for path, evals in self._block_targets(i):
                if only is not None and path != only:
                    continue
                by_entry = index.setdefault(path, {})
                prior = by_entry.get((cfg_path, key))
                eval_only = evals and (prior is None or prior.eval_only)
                by_entry[(cfg_path, key)] = Naming(cfg_path, key, changed, eval_only)
        return {path: tuple(refs.values()) for path, refs in index.items()}

    def _block_targets(self, i: int) -> list[tuple[str, bool]]:
        if i not in self._targets:
            found = ((recipe_target(self.ctx, m.group(2)), bool(m.group(1)))
                     for m in _CONFIG_FILE.finditer(self._blocks[i][2]))
            self._targets[i] = [(target[0], evals) for target, evals in found if target is not None]
        return self._targets[i]


_FEW_RECIPES = 16  # recipes looked for one by one; asked about more, every block is resolved


def _content(text: str) -> list[str]:
    """A master block's lines that carry YAML content (comments and blank lines dropped)."""
    return [line.rstrip() for line in text.splitlines() if line.strip() and not line.lstrip().startswith("#")]


def points_running(ctx: Context, recipe: str) -> tuple[PointRun, ...]:
    """The points of head entries whose CONFIG_FILE is `recipe` (only the entries naming it are parsed)."""
    out = []
    for naming in recipe_index(ctx).get(recipe, ()):
        cfg = ctx.head_configs.get(naming.config_path)
        try:
            entry = cfg.entry(naming.key) if cfg is not None else None
        except YamlProblem:
            continue
        if entry is None:
            continue
        for point in head_points(ctx, naming.config_path, naming.key, entry):
            if any(st.name == "CONFIG_FILE" for st in point.settings):
                run = run_of(ctx, naming.config_path, naming.key, entry, point)
                if any(t.path == recipe for t in run.recipes):
                    out.append(run)
    return tuple(out)
