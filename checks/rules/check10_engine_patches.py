"""Check 10 — no engine patches without a waiver.

## What it enforces

Patching the serving stack at build or run time is allowed only under a
filled-out waiver.

## Why

The pinned upstream image must run as shipped, so the community can
reproduce the number from the released image.

## How it decides

Where it looks: the files the PR changes under `benchmarks/**` and
`runners/**` (bash scripts, job files: `.slurm`, `.sbatch`, extensionless
with a shell shebang; Python files; srt-slurm recipes, for the
`setup_script` they run), workflows (`.github/workflows/**`: the `run:`
steps, never prompts or other strings), Dockerfiles, `*.patch` / `*.diff`
files, and the lines the PR adds to master configs. What counts as
patching is decided by what each command writes (`checks.facts.patch_sites`,
with `checks.facts.stack` saying what is engine code): engine sources, the
image's Python installation outside client packages, engine checkouts,
bind mounts over engine files, engine wheels. Eval tooling, agents and
scorers (lm-eval, SWE-bench, mini-swe-agent), benchmark clients and the
orchestration harness checkout (srt-slurm) are client side and allowed.

A site on a line the PR adds (or inside a heredoc it touches) is patching
THIS PR introduces; a site on an unchanged line is pre-existing, and counts
only where a config the PR submits reaches it: an entry it adds or changes,
or one that runs a script, recipe or launcher it changes (that config runs
again, with the PR's version). Each such point's launcher, the scripts it
runs and the libraries they source are run by the interpreter with the
point's variables (`checks.facts.reachability.reached`: framework, model, precision,
config file, ..., and its sizing: TP, EP, DP attention, when the entry runs
at most 4 sizings), so a branch guarded for another framework, or on a
setting every changed point sets otherwise, is dormant, a branch the
variables cannot decide is run, and when what a point runs cannot be
followed every pre-existing site counts (fail closed); what cannot be read
at all is UNDECIDED. A patcher the script visibly runs whose source is not
in the repository (or a hook whose content cannot be seen) is a patch site
"whose patches cannot be reviewed": it FAILs and needs a waiver like any
other, since the evidence that the engine is patched is there.

Waiver rule (deterministic, `checks.facts.waivers`):

- patching this PR introduces needs `docs/waiver/<PR_NUMBER>.md` added or
  changed by this PR; pre-existing patching needs a waiver already on the base
  branch (`docs/waiver/*.md` in the policy files) that names the patched file
  or the patcher script it runs;
- the waiver must be filled out (placeholders, sections, an upstream link,
  the names of the patched files: see `checks.facts.waivers`);
- the sign-off's additional detail section must link the waiver. Where the
  snapshot has no sign-off to read (backtest of a git history), a waiver
  that exists and covers the site passes with a note ("the sign-off must
  link docs/waiver/N.md"): the history holds what the sign-off would link.

N/A when the PR touches no benchmark script, launcher, workflow, Dockerfile,
patch file or master config.

## Passing example

    sed -i "s/^name: .*/name: $RUN_NAME/" "$RECIPE"         (the recipe's own name)
    git apply - (in a `git clone`d srt-slurm checkout)           (the harness, not the engine)
    python3 "$(_eval_patches_dir)/patch_swebench_agent.py"     (writes mini-swe-agent's files)
    bash apply_k3_container_patches.sh  + docs/waiver/2508.md (filled out, linked)

## Failing example

    sed -i 's/x/y/' /usr/lib/python3/dist-packages/vllm/envs.py  (no waiver)
    -v ${PATCH}:/sgl-workspace/sglang/python/sglang/srt/x.py    (a bind mount over engine source)
"""

from __future__ import annotations

import bisect
import posixpath

from checks.context import Context
from checks.evidence import Missing
from checks.facts import reachability, waivers
from checks.facts.bash import Script
from checks.facts.patch_sites import Read, Reading, ScriptReader, Site, diff_effect, line_sites, python_file_sites
from checks.facts.stack import Target, path_target
from checks.facts.yamlload import LineDict, LineList, YamlProblem, load
from checks.result import CheckResult, Finding, Severity, Status
from checks.snapshot import ChangedFile

NUMBER = 10
NAME = "no engine patches"
RULE = "engine-patch"

_SHEBANG = ("#!/bin/bash", "#!/usr/bin/bash", "#!/bin/sh", "#!/usr/bin/env bash", "#!/usr/bin/env sh")


def _in_scope(ctx: Context, f: ChangedFile) -> bool:
    return ctx.policy.is_benchmark_file(f.path) and f.path != ctx.policy.changelog


def _is_dockerfile(path: str) -> bool:
    name = posixpath.basename(path)
    return name.startswith("Dockerfile") or name.endswith(".dockerfile")


def _is_patch_file(path: str) -> bool:
    return path.endswith((".patch", ".diff"))


def _is_shell(path: str, text: str) -> bool:
    name = posixpath.basename(path)
    if name.endswith((".sh", ".bash", ".slurm", ".sbatch")):
        return True
    return "." not in name and text.startswith(_SHEBANG)


def _reader(ctx: Context) -> Read:
    """Repository files at head, from the snapshot; KeyError for one the snapshot does not hold yet."""
    def read(path: str) -> str | None:
        text = ctx.need.file("head", path)
        if isinstance(text, Missing):
            raise KeyError(path)
        return text
    return read


def _file_sites(ctx: Context, f: ChangedFile, shared: dict[tuple[str, Script], Reading]) -> Reading:
    """The sites of a changed file; `shared`: the readings of scripts that one run may take (`ScriptReader`)."""
    text = f.head_text or ""
    read = _reader(ctx)
    if _is_patch_file(f.path):
        effect = diff_effect(text)
        return Reading([Site(f.path, 1, max(1, len(text.splitlines())), f"adds a patch file that {effect}")]
                       if effect else [])
    if ctx.policy.is_master_config(f.path):
        return Reading(line_sites(f.path, list(ctx.added_lines(f)), read))
    if f.path.endswith(".py"):
        return Reading(python_file_sites(f.path, text))
    if _is_shell(f.path, text):
        return ScriptReader(f.path, ctx.script(text), read, scripts=ctx.script, shared=shared).sites()
    if f.path.startswith(".github/") and f.path.endswith((".yml", ".yaml")):
        return _workflow_sites(f.path, text, read)
    if _is_dockerfile(f.path):
        return Reading(_dockerfile_sites(f.path, text, read))
    if ctx.policy.is_recipe(f.path):
        return _recipe_sites(ctx, f.path, text, read, shared)
    return Reading()


def _workflow_sites(path: str, text: str, read: Read) -> Reading:
    """The `run:` steps of a workflow (or composite action), each read as a bash script on its own lines."""
    try:
        data = load(text)
    except YamlProblem:
        return ScriptReader(path, Script(text, embedded=True), read, on_runner=True).sites()
    total = Reading()
    for line, script in _run_blocks(data):
        part = ScriptReader(path, Script(script), read, offset=line, on_runner=True).sites()
        total.sites += part.sites
        total.missing |= part.missing
    return total


def _run_blocks(data: object) -> list[tuple[int, str]]:
    """(offset of the script's first line, script) of every `run:` string, depth first."""
    out: list[tuple[int, str]] = []
    stack = [data]
    while stack:
        node = stack.pop()
        if isinstance(node, LineDict):
            for key, value in node.items():
                if key == "run" and isinstance(value, str):
                    line = node.line_of(key)
                    out.append((line if "\n" in value else line - 1, value))
                elif isinstance(value, (LineDict, LineList, dict, list)):
                    stack.append(value)
        elif isinstance(node, (list, LineList)):
            stack.extend(node)
    return sorted(out)


def _dockerfile_sites(path: str, text: str, read: Read) -> list[Site]:
    """`RUN` lines as shell commands; `COPY` / `ADD` over engine code as an overwrite."""
    lines: list[tuple[int, str]] = []
    sites: list[Site] = []
    for n, raw in enumerate(text.splitlines(), 1):
        word, _, rest = raw.strip().partition(" ")
        if word.upper() == "RUN":
            lines.append((n, rest))
        elif word.upper() in ("COPY", "ADD") and rest.split():
            destination = rest.split()[-1]
            if path_target(destination) is Target.ENGINE:
                sites.append(Site(path, n, n, f"overwrites engine code {destination} in the image (`{raw.strip()}`)"))
    return sites + line_sites(path, lines, read)


def _recipe_sites(ctx: Context, path: str, text: str, read: Read, shared: dict[tuple[str, Script], Reading]) -> Reading:
    """An srt-slurm recipe runs its `setup_script` (from the recipe root's `configs/`) in the container."""
    try:
        data = ctx.yaml(text)
    except YamlProblem:
        return Reading()  # recipe lint reports it; no command can be read from it
    if not isinstance(data, LineDict) or not isinstance(data.get("setup_script"), str):
        return Reading()
    line = data.line_of("setup_script")
    wrapper = Script(f'bash "{ctx.policy.recipe_root}/configs/{data["setup_script"]}"\n')
    return ScriptReader(path, wrapper, read, offset=line - 1, scripts=ctx.script, shared=shared).sites()


def analysis(ctx: Context) -> tuple[list[Site], list[Site], frozenset[str], list[Site]]:
    """(introduced sites, pre-existing sites a changed config reaches, repository files still to read, lines
    of the PR's scripts that could not be read) of the PR's files in scope."""
    introduced: list[Site] = []
    preexisting: list[Site] = []
    unread: list[Site] = []
    missing: set[str] = set()
    shared: dict[tuple[str, Script], Reading] = {}  # the scripts read, for those that run them
    for f in sorted((f for f in ctx.changed_files if _in_scope(ctx, f)), key=lambda f: f.path):
        reading = _file_sites(ctx, f, shared)
        missing |= reading.missing
        added = sorted({n for n, _ in ctx.added_lines(f)})
        unread += (site for site in reading.sites if site.unread)
        for site in (site for site in reading.sites if not site.unread):
            first = bisect.bisect_left(added, site.line)  # the first added line at or after the site's start
            touched = first < len(added) and added[first] <= site.end
            (introduced if touched else preexisting).append(site)
    if preexisting:
        reach = reachability.reached(ctx, tuple(sorted({s.path for s in preexisting})))
        missing |= ctx.missing_files()
        if not reach.undecided:
            preexisting = [s for s in preexisting if reach.reaches(s.path, s.line, s.end)
                           or (s.assignment and s.path in reach.lines)]
    return introduced, preexisting, frozenset(missing), unread


def _names(sites: list[Site]) -> tuple[str, ...]:
    """Names a waiver may use for the patching in one file: the file itself or a patcher it runs."""
    return tuple(dict.fromkeys([posixpath.basename(sites[0].path)] + [s.target for s in sites if s.target]))


def _by_file(sites: list[Site]) -> dict[str, list[Site]]:
    out: dict[str, list[Site]] = {}
    for s in sites:
        out.setdefault(s.path, []).append(s)
    return out


def _introduced_problem(ctx: Context, by_file: dict[str, list[Site]]) -> tuple[str | None, str]:
    """(what is missing, the waiver path) for patching this PR introduces."""
    waiver = f"{ctx.policy.waiver_dir}/{ctx.snap.pr.number}.md"
    f = ctx.snap.changed(waiver)
    if f is None or f.status == "removed" or f.head_text is None:
        others = [c.path for c in ctx.changed_files if c.path.startswith(ctx.policy.waiver_dir + "/")
                  and c.path.endswith(".md")]
        also = f" (it changes {', '.join(others)} instead)" if others else ""
        return f"no waiver: the PR does not add {waiver}{also}", waiver
    problems = waivers.incomplete(ctx, f.head_text, tuple(_names(sites) for sites in by_file.values()))
    if problems:
        return f"waiver {waiver} is incomplete: {'; '.join(problems)}", waiver
    if not waivers.linked(ctx, waiver) and ctx.signoff is not None:
        return f"waiver {waiver} is not linked from the sign-off's additional detail section", waiver
    return None, waiver


def _preexisting_problem(ctx: Context, sites: list[Site]) -> tuple[str | None, str]:
    """(what is missing, the covering waiver) for patching that predates this PR."""
    prefix = ctx.policy.waiver_dir + "/"
    names = _names(sites)
    # Waivers are policy files of the first snapshot: evidence rounds add golden curves (.yaml), never one.
    found = [(p, t) for p, t in sorted(ctx.snap.policy.items())
             if p.startswith(prefix) and p.endswith(".md") and any(n in t for n in names)]
    if not found:
        return (f"pre-existing patching with no waiver on the base branch ({prefix}*.md naming "
                f"{' or '.join(names)})"), ""
    complete = [p for p, t in found if not waivers.incomplete(ctx, t, (names,))]
    if not complete:
        problems = "; ".join(waivers.incomplete(ctx, found[0][1], (names,)))
        return f"waiver {found[0][0]} on the base branch is incomplete: {problems}", found[0][0]
    linked = [p for p in complete if waivers.linked(ctx, p)]
    if ctx.signoff is None:  # no sign-off to read (a git history): the waiver it must link is there
        return None, complete[0]
    if not linked:
        return f"waiver {complete[0]} is not linked from the sign-off's additional detail section", complete[0]
    return None, linked[0]


def check(ctx: Context) -> CheckResult:
    if not any(_in_scope(ctx, f) for f in ctx.changed_files):
        return CheckResult(NUMBER, NAME, Status.NA,
                           "the PR touches no benchmark script, launcher, workflow, Dockerfile, patch file or "
                           "master config")
    introduced, preexisting, missing, unread = ctx.once(analysis)
    if missing:  # the evidence rounds ended before every program the scripts run was read
        return CheckResult.undecided(NUMBER, NAME,
                                     f"cannot decide: {', '.join(sorted(missing)[:3])}, run by the PR's scripts, "
                                     "was not read")
    # Lines no reader saw may patch anything: never a PASS (a maintainer reads them), whatever else is found.
    findings: list[Finding] = [Finding(s.path, s.line, RULE, Severity.ERROR, f"{s.what}; a maintainer must read "
                                       "them", undecided=True) for s in unread]
    if not introduced and not preexisting:
        if findings:
            return CheckResult.failed(NUMBER, NAME, findings)
        return CheckResult(NUMBER, NAME, Status.PASS,
                           "no patching of the serving stack (no patch applied to engine code, inline source "
                           "rewrites, engine monkey-patch hooks, bind mounts over engine files or engine wheel "
                           "installs)")
    covered: list[str] = []
    notes: list[str] = []
    if introduced:
        by_file = _by_file(introduced)
        problem, waiver = _introduced_problem(ctx, by_file)
        if problem is None:
            covered.append(f"patching in {', '.join(posixpath.basename(p) for p in by_file)} is covered by the "
                           f"filled-out waiver {waiver} filed in this PR" + _linked(ctx, waiver, notes))
        for path, sites in by_file.items():
            if problem is not None:
                more = f" (+{len(sites) - 1} more patch sites in this file)" if len(sites) > 1 else ""
                findings.append(Finding(path, sites[0].line, RULE, Severity.ERROR,
                                        f"{sites[0].what}; {problem}{more}"))
    for path, sites in _by_file(preexisting).items():
        problem, waiver = _preexisting_problem(ctx, sites)
        if problem is None:
            covered.append(f"pre-existing patching in {posixpath.basename(path)} is covered by {waiver}"
                           + _linked(ctx, waiver, notes))
            continue
        findings.append(Finding(path, sites[0].line, RULE, Severity.ERROR, f"{sites[0].what}; {problem}"))
    if findings:
        return CheckResult.failed(NUMBER, NAME, findings)
    return CheckResult(NUMBER, NAME, Status.PASS, "; ".join(covered), notes=tuple(dict.fromkeys(notes)))


def _linked(ctx: Context, waiver: str, notes: list[str]) -> str:
    """How the sign-off links `waiver`; with no sign-off to read (a git history), a note of what it must link."""
    if ctx.signoff is not None:
        return " and linked from the sign-off"
    notes.append(f"the sign-off must link {waiver}")
    return f" (the sign-off must link {waiver})"
