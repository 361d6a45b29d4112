"""What a command runs: a vLLM/SGLang server, or another script (behind wrappers such as `srun`, `nohup`,
`timeout`, `docker run`)."""

from __future__ import annotations

import re

_WRAPPERS = {"env", "nohup", "exec", "numactl", "timeout", "setsid", "stdbuf", "taskset", "time", "sudo",
             "command", "builtin", "unbuffer"}
_RUN_WRAPPERS = _WRAPPERS | {"srun", "mpirun"}
_SHELLS = frozenset({"bash", "sh"})
_RUNNERS = _SHELLS | {"source", ".", "sbatch"}  # what runs a script named after it
_DOCKER_FLAGS = frozenset({"--rm", "--privileged", "--init", "-d", "--detach", "-i", "-t", "-it", "-ti",
                           "--interactive", "--tty", "--read-only", "--no-healthcheck", "-P", "--publish-all",
                           "--sig-proxy"})
_DURATION = re.compile(r"[\d.]+[smhd]?")
_PYTHON = re.compile(r"python[\d.]*")


def _docker_run(values: list[str | None], i: int) -> int | None:
    """For `docker run [options] IMAGE CMD...` at `i`: the index where the command starts, the image's
    entrypoint put in front when it is a shell (`--entrypoint=/bin/bash IMAGE SCRIPT`); None otherwise."""
    j, entrypoint = i + 2, None
    while j < len(values) and (values[j] or "").startswith("-"):
        option, eq, value = (values[j] or "").partition("=")
        if option == "--entrypoint":
            entrypoint = value if eq else (values[j + 1] if j + 1 < len(values) else None)
        j += 1 if eq or option in _DOCKER_FLAGS else 2
    j += 1  # the image
    if j >= len(values):
        return None
    if entrypoint is not None and entrypoint.rsplit("/", 1)[-1] in _SHELLS:
        values[j - 1] = entrypoint  # the shell the image runs, in the image's place
        return j - 1
    return j


def run_at(values: list[str | None]) -> tuple[str, int] | None:
    """(how, index of the script operand or of the `-c` string) of a command that runs a script; None if none."""
    if not values or not may_run(values[0]):
        return None  # most commands: `scripts_run_at` stops at the first word, which runs no script
    return scripts_run_at(values)


def may_run(command: str | None) -> bool:
    """Whether a command line whose first field is `command` can run a script (`run_at` finds none otherwise)."""
    if command is None:
        return False
    name = command.rsplit("/", 1)[-1]
    return (name in _RUNNERS or name in _RUN_WRAPPERS or command == "docker" or command.startswith("-")
            or "=" in command or _DURATION.fullmatch(command) is not None)


def scripts_run_at(values: list[str | None]) -> tuple[str, int] | None:
    """`run_at`, read past every wrapper, option and assignment."""
    values = list(values)
    i = 0
    while i < len(values) and (v := values[i]) is not None and (
            v.rsplit("/", 1)[-1] in _RUN_WRAPPERS or v.startswith("-") or "=" in v or _DURATION.fullmatch(v)):
        i += 1
    if i + 1 < len(values) and values[i] == "docker" and values[i + 1] == "run":
        start = _docker_run(values, i)
        found = run_at(values[start:]) if start is not None else None
        return (found[0], found[1] + start) if found and start is not None else None
    head = (values[i] or "").rsplit("/", 1)[-1] if i < len(values) else ""
    if head in ("source", "."):
        return ("source", i + 1) if i + 1 < len(values) else None
    if head == "sbatch":  # options take values (`-N 2`): the job script is the argument that names one
        for j in range(i + 1, len(values)):
            if re.search(r"\.(?:sh|slurm|sbatch)$", values[j] or ""):
                return "sbatch", j
    if head in _SHELLS or head == "sbatch":
        j = i + 1
        while j < len(values) and (values[j] or "").startswith("-"):
            if head in _SHELLS and "c" in (values[j] or "")[1:] and not (values[j] or "").startswith("--"):
                return ("-c", j + 1) if j + 1 < len(values) else None
            j += 1
        return (("bash" if head in _SHELLS else "sbatch"), j) if j < len(values) else None
    return None


def may_launch(command: str | None) -> bool:
    """Whether a command line whose first field is `command` can be a launch (`launch_at` finds none
    otherwise: it looks past wrappers only, and a launch starts with `vllm`, `sglang` or a python)."""
    name = command.rsplit("/", 1)[-1] if command else ""
    return name in _WRAPPERS or name in ("vllm", "sglang") or _PYTHON.fullmatch(name) is not None


def may_become_launch(first: list[str | None]) -> bool:
    """Whether a command line whose first fields are `first`, followed by any fields or none, may be a launch
    (`launch_at`). Behind a wrapper `launched_at` reads any number of fields; else only the signature's
    three (`vllm serve`, `sglang serve`, `python -m MODULE`), so the first two can rule a launch out."""
    if not first:
        return True
    if first[0] is None or first[0].rsplit("/", 1)[-1] in _WRAPPERS:
        return may_launch(first[0])
    if len(first) >= 3:
        return launch_at(first[:3]) is not None
    if len(first) == 2:
        name, second = first[0].rsplit("/", 1)[-1], first[1] or ""
        return (second.rsplit("/", 1)[-1] == "serve" and name in ("vllm", "sglang")
                or second == "-m" and _PYTHON.fullmatch(name) is not None)
    return may_launch(first[0])


def launch_at(values: list[str | None]) -> tuple[str, int, int] | None:
    """(engine, index where the command starts, index after its signature) in argv; None if no launch."""
    if not values or not may_launch(values[0]):
        return None  # most commands
    return launched_at(values)


def _past_wrappers(values: list[str | None]) -> int:
    """Where the command a line of wrappers (`timeout 30 env X=1 nice ...`) runs starts."""
    i = 0
    while i < len(values) and (v := values[i]) is not None and v.rsplit("/", 1)[-1] in _WRAPPERS:
        i += 1
        while i < len(values) and (v := values[i]) is not None and (
                v.startswith("-") or "=" in v or _DURATION.fullmatch(v)):
            i += 1
    return i


def launched_at(values: list[str | None]) -> tuple[str, int, int] | None:
    """`launch_at`, read past every wrapper."""
    i = _past_wrappers(values)
    head = [v.rsplit("/", 1)[-1] if v else "" for v in values[i:i + 3]]
    if head[:2] == ["vllm", "serve"]:
        return "vllm", i, i + 2
    if head[:2] == ["sglang", "serve"]:
        return "sglang", i, i + 2
    if len(head) == 3 and _PYTHON.fullmatch(head[0]) and head[1] == "-m":
        module = values[i + 2] or ""
        if module == "sglang.launch_server":
            return "sglang", i, i + 3
        if module == "vllm.entrypoints.openai.api_server":
            return "vllm", i, i + 3
    return None


ENGINE_COMMANDS = frozenset({"trtllm-serve"})  # servers `engine_launch_at` knows that are no python module
_SPEC_MODULES = {"atom.entrypoints.openai_server": "atom", "atom.entrypoints.api_server": "atom",
                 "tensorrt_llm.commands.serve": "trtllm"}


def engine_launch_at(values: list[str | None]) -> tuple[str, int, int] | None:
    """`launch_at`, and also the servers whose launches only the speculative-decoding reader follows:
    `trtllm-serve [serve] MODEL` and `python -m atom.entrypoints.openai_server` (check 3 compares vLLM and
    SGLang server arguments only)."""
    found = launch_at(values)
    if found is not None or not values:
        return found
    i = _past_wrappers(values)
    head = [v.rsplit("/", 1)[-1] if v else "" for v in values[i:i + 3]]
    if head[:1] == ["trtllm-serve"]:
        return "trtllm", i, i + (2 if head[1:2] == ["serve"] else 1)
    if len(head) == 3 and _PYTHON.fullmatch(head[0]) and head[1] == "-m" and (module := values[i + 2]) is not None \
            and module in _SPEC_MODULES:
        return _SPEC_MODULES[module], i, i + 3
    return None
