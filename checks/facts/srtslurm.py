"""How srt-slurm reads a recipe file: a flat job config, or a `base:` with override variants.

A flat recipe is one job (`model`, `resources`, `backend`, `benchmark` at top
level). A file with `base:` holds several: each `override_<name>:` mapping is
deep-merged onto the base (mappings merge key by key, any other value
replaces), and each `zip_override_<name>:` is a family of variants, the i-th
taking the i-th item of every list of the longest length in it (`name: [a,
b, c]` with `cuda-graph-max-bs: [111, 234, 535]` is three jobs). A master
config selects one with `CONFIG_FILE=<file>:<override>` or
`<file>:<zip_override>[<i>]`; a file read without a selector is every
variant (the base alone included).

The merged configs are LineDicts whose keys keep the line they were written on
(in the base or in the override), so findings point at the file's lines.

A built-in benchmark (`sa-bench`, ...) passes `--use-chat-template` to its
client unless the recipe turns it off: srt-slurm's `BenchmarkConfig` declares
`use_chat_template: bool = True` ("Pass --use-chat-template to benchmark
(default: true)", `srtctl/core/schema.py`, in the releases and branches
InferenceX's launchers check out). A recipe that omits the key benchmarks
through the chat template; `uses_chat_template` reads it so.
"""

from __future__ import annotations

import re
from typing import Any

from .yamlload import LineDict, LineList

_SELECTOR = re.compile(r"^(\w+)(?:\[(\d+)\])?$")
MAX_VARIANTS = 64
USE_CHAT_TEMPLATE_DEFAULT = True  # srt-slurm's BenchmarkConfig.use_chat_template when a recipe omits it
# What marshmallow's Boolean field (srt-slurm's schema) reads as true and false.
_TRUE = frozenset({"true", "t", "1", "yes", "y", "on"})
_FALSE = frozenset({"false", "f", "0", "no", "n", "off"})


def uses_chat_template(benchmark: Any) -> bool | None:
    """Whether a built-in benchmark block runs its client with the chat template, as srt-slurm reads the
    block: its `use_chat_template`, srt-slurm's default (true) when the key is absent; None when the value
    is not one srt-slurm reads as a boolean (a templated string, a list), which srt-slurm rejects."""
    if not isinstance(benchmark, dict) or "use_chat_template" not in benchmark:
        return USE_CHAT_TEMPLATE_DEFAULT
    value = benchmark["use_chat_template"]
    if isinstance(value, bool):
        return value
    if isinstance(value, (int, str)):
        word = str(value).strip().lower()
        if word in _TRUE:
            return True
        if word in _FALSE:
            return False
    return None


def is_layered(doc: Any) -> bool:
    return isinstance(doc, dict) and isinstance(doc.get("base"), dict)


def variants(doc: Any, selector: str = "") -> list[tuple[str, Any]]:
    """(name, effective job config) of the variant `selector` names, or of every variant when it names none;
    [] when the selector names no variant of the file."""
    if not is_layered(doc):
        return [("", doc)] if not selector else []
    base = doc["base"]
    overrides = {str(k): v for k, v in doc.items()
                 if str(k).startswith(("override_", "zip_override_")) and isinstance(v, dict)}
    if selector:
        m = _SELECTOR.match(selector.strip())
        if m is None or m.group(1) not in overrides:
            return []
        name, index = m.group(1), m.group(2)
        layer = overrides[name]
        if name.startswith("zip_"):
            width = _width(layer)
            indices = [int(index)] if index is not None else list(range(min(width, MAX_VARIANTS)))
            return [(f"{name}[{i}]", merge(base, _zip_item(layer, i))) for i in indices if i < max(width, 1)]
        return [(name, merge(base, layer))]
    out: list[tuple[str, Any]] = [("base", base)]
    for name, layer in overrides.items():
        if name.startswith("zip_"):
            width = min(max(_width(layer), 1), MAX_VARIANTS - len(out))
            out += [(f"{name}[{i}]", merge(base, _zip_item(layer, i))) for i in range(width)]
        else:
            out.append((name, merge(base, layer)))
        if len(out) >= MAX_VARIANTS:
            break
    return out[:MAX_VARIANTS]


def merge(base: Any, layer: Any) -> Any:
    """`layer` deep-merged onto `base`: mappings key by key, any other value replaced."""
    if not (isinstance(base, dict) and isinstance(layer, dict)):
        return layer
    out = LineDict()
    out.line = getattr(base, "line", 0)
    out.key_lines = dict(getattr(base, "key_lines", {}))
    for key, value in base.items():
        out[key] = value
    for key, value in layer.items():
        out[key] = merge(base[key], value) if key in base else value
        if isinstance(layer, LineDict):
            out.key_lines[key] = layer.line_of(key)
    return out


def _width(layer: Any, depth: int = 0) -> int:
    """The longest list in a zip override: how many variants it makes."""
    if depth > 32:
        return 0
    if isinstance(layer, dict):
        return max((_width(v, depth + 1) for v in layer.values()), default=0)
    return len(layer) if isinstance(layer, list) else 0


def _zip_item(layer: Any, i: int, width: int | None = None) -> Any:
    """The i-th variant of a zip override: every list of the zip's width replaced by its i-th item."""
    width = _width(layer) if width is None else width
    if isinstance(layer, dict):
        out = LineDict()
        out.line = getattr(layer, "line", 0)
        out.key_lines = dict(getattr(layer, "key_lines", {}))
        for key, value in layer.items():
            out[key] = _zip_item(value, i, width)
            if isinstance(value, LineList) and len(value) == width and i < width:
                out.key_lines[key] = value.line_of(i)
        return out
    if isinstance(layer, list) and len(layer) == width:
        return layer[i] if i < width else None
    return layer
