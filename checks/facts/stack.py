"""The serving stack: which packages, repositories and paths are the inference engine, and which are not.

Check 10 judges a command by what it writes. A write reaches the serving
stack when its target is engine code: a file of an engine package (vLLM,
SGLang, TensorRT-LLM and the kernels and transfer libraries they load), an
engine source checkout (`/sgl-workspace`, `/vllm-workspace`, a clone of an
engine repository), or the image's Python installation (`site-packages` /
`dist-packages`, or a module located by `__file__` / `find_spec` that is
not the standard library) outside the packages of the benchmark client and
eval tooling. Eval tooling, agents
and scorers (lm-eval, SWE-bench, mini-swe-agent, swe-rex), benchmark clients
(aiperf, bench_serving) and the orchestration harness (srt-slurm's srtctl)
run beside the server, not in it: patching them does not change the number
the engine produces.
"""

from __future__ import annotations

import re
import sys
from enum import Enum

# Python modules (import names) of the engines and the kernels they load.
ENGINE_MODULES = frozenset({
    "vllm", "sglang", "tensorrt_llm", "sgl_kernel", "aiter", "flashinfer", "deep_gemm", "deep_ep", "triton",
    "flash_attn", "xformers", "torch", "mori", "atom", "dynamo", "nixl", "rixl", "ucx", "mooncake", "lmcache",
})
# pip distribution names of the same (normalised: lower case, "-" for "_").
ENGINE_PACKAGES = frozenset({
    "vllm", "sglang", "sgl-kernel", "sglang-kernel", "tensorrt-llm", "flashinfer", "flashinfer-python",
    "flashinfer-cubin", "flashinfer-jit-cache", "flash-attn", "aiter", "amd-aiter", "triton",
    "pytorch-triton-rocm", "torch", "deep-gemm", "deep-ep", "xformers",
})
# Client side: eval tooling, agents and scorers, benchmark clients, the orchestration harness.
CLIENT_MODULES = frozenset({
    "lm_eval", "minisweagent", "swerex", "swebench", "aiperf", "bench_serving", "genai_perf", "evalscope",
    "datasets", "srtctl", "modal", "openai", "transformers_cli",
})
# Parts of an engine package that are its benchmark client, not the server.
CLIENT_SUBMODULES = ("vllm.benchmarks", "sglang.bench_serving", "sglang.benchmark")
# Repositories whose checkout is engine source (the name of a `git clone`d repository, lower case).
ENGINE_REPOS = frozenset({
    "vllm", "sglang", "tensorrt-llm", "flashinfer", "aiter", "deepgemm", "deepep", "triton", "flash-attention",
    "xformers", "pytorch", "mori", "atom", "dynamo", "nixl", "mooncake", "lmcache", "sgl-kernel",
})

_PY_INSTALL = re.compile(r"(?:site|dist)-packages/?([\w./-]*)")
_CLIENT_SOURCE = re.compile(r"(?:^|/)(?:" + "|".join(sorted(CLIENT_MODULES)) + r"|vllm/benchmarks|sglang/bench_serving)"
                            r"(?:/|\.py\b)")
_WORKSPACES = re.compile(r"(?:^|[\s\"'=:])(?:/sgl-workspace|/vllm-workspace|/opt/vllm|/app/tensorrt_llm)\b")
_ENGINE_SOURCE = re.compile(r"(?:^|[\s\"'=:/(])(?:python/)?(" + "|".join(sorted(ENGINE_MODULES - {"torch", "atom"}))
                            + r")/[\w./-]*\.(?:py|so|cu|cuh|cpp|h|csv|co)\b")


class Target(str, Enum):
    """Whose code a write reaches."""

    ENGINE = "engine"  # the serving stack: the numbers depend on it
    CLIENT = "client"  # eval tooling, benchmark clients, the harness: beside the server
    OTHER = "other"  # anything else: scratch files, results, recipes, the repository's own files


def module_target(module: str) -> Target:
    """Whose code a Python module (dotted name) is."""
    if module.startswith(CLIENT_SUBMODULES):
        return Target.CLIENT
    root = module.split(".", 1)[0].lower()
    if root in ENGINE_MODULES:
        return Target.ENGINE
    if root in CLIENT_MODULES:
        return Target.CLIENT
    return Target.OTHER


def located_target(module: str) -> Target:
    """Whose files a program that locates `module`'s installed files (`__file__`, `find_spec`) reaches: the
    client's for client modules, nothing of note for the standard library, else the image's: engine code."""
    target = module_target(module)
    if target is Target.OTHER and module.split(".", 1)[0] not in sys.stdlib_module_names:
        return Target.ENGINE
    return target


def path_target(path: str) -> Target:
    """Whose code a file path (as written, variables substituted where known) is."""
    m = _PY_INSTALL.search(path)
    if m:
        module = m.group(1).replace("/", ".").split("-", 1)[0]
        if module and module_target(module.removesuffix(".py")) is Target.CLIENT:
            return Target.CLIENT
        return Target.ENGINE  # an engine package, or the image's Python installation itself
    if _CLIENT_SOURCE.search(path):
        return Target.CLIENT
    if _WORKSPACES.search(path) or _ENGINE_SOURCE.search(path):
        return Target.ENGINE
    return Target.OTHER


def repo_target(url: str) -> Target:
    """Whose code a `git clone` URL checks out: engine source, or anything else (a harness, a client)."""
    name = url.rstrip("/").rsplit("/", 1)[-1].removesuffix(".git").lower()
    return Target.ENGINE if name in ENGINE_REPOS else Target.CLIENT


def package_target(name: str) -> Target:
    """Whose code a pip distribution is."""
    normal = name.lower().replace("_", "-")
    return Target.ENGINE if normal in ENGINE_PACKAGES else Target.OTHER
