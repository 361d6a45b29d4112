"""GPU hardware: the SKU a runner label (or a recipe's gpu_type) names, and what one node of it holds.

A master entry's `runner:` is a label such as `b200-nscale`, `cluster:mi355x-amds`
or `gb200`; its SKU is the label's name (after `cluster:`) up to the first `-`
or `_`, lower case. Every check and lint rule that needs a runner's SKU reads
it here.

Nodes (vendor datasheets):
  GB200 / GB300 NVL72 compute trays: 4 GPUs, 2x Grace (72 Arm cores each) = 144 cores.
  DGX B200: 8 GPUs, 2x Intel Xeon Platinum 8570 (56 cores) = 112 cores.
  DGX B300: 8 GPUs, 2x Intel Xeon 6776P (64 cores) = 128 cores.
  DGX H100 / DGX H200: 8 GPUs, 2x Intel Xeon Platinum 8480C (56 cores) = 112 cores.
  AMD Instinct MI300X / MI325X / MI355X platforms: 8 GPUs; the host CPU is the OEM's
  choice, so the core count is unknown.
"""

from __future__ import annotations

import re
from typing import Any

GPUS_PER_NODE: dict[str, int] = {
    "gb200": 4, "gb300": 4,
    "b200": 8, "b300": 8, "h100": 8, "h200": 8,
    "mi300x": 8, "mi325x": 8, "mi355x": 8,
}
CPU_CORES: dict[str, int] = {
    "gb200": 144, "gb300": 144,
    "b200": 112, "b300": 128, "h100": 112, "h200": 112,
}
GRACE_SKUS = frozenset({"gb200", "gb300"})
_NAME = re.compile(r"[-_\s]")


def sku(label: Any) -> str:
    """The SKU a runner label names: "b200-nscale" -> "b200", "cluster:mi355x-amds" -> "mi355x"; "" if none."""
    if not isinstance(label, str):
        return ""
    name = label.strip().lower().rsplit(":", 1)[-1]
    return _NAME.split(name, maxsplit=1)[0]


def known_sku(label: Any) -> str | None:
    """`sku(label)` when it is a SKU whose nodes are known (`GPUS_PER_NODE`), else None."""
    found = sku(label)
    return found if found in GPUS_PER_NODE else None


def node_gpus(name: str) -> int:
    """GPUs in one node of SKU `name` (8 where the SKU is not known)."""
    return GPUS_PER_NODE.get(name, 8)
