"""Check 10 — no engine patches without a waiver.

What it enforces: the pinned upstream image must run as shipped, so the
community can reproduce the number from the released image. Patching the
serving stack at build or run time is allowed only under a filled-out waiver.

Where it looks: changed benchmark files (`benchmarks/**`), launchers
(`runners/**`), workflows (`.github/workflows/**`), Dockerfiles, `*.patch` /
`*.diff` files, and the lines the PR adds to master configs. Scripts are read whole:
a patch site on a line the PR adds (or inside a heredoc it touches) is
patching THIS PR introduces; a site on an unchanged line is pre-existing.

What counts as patching (judged by what a command touches, not its verb):
- a `*.patch` / `*.diff` file (outside eval/benchmark-client directories);
- `git apply`, `git am`, or the `patch` command;
- running a patcher script (`bash|sh|source|python ... *patch*.sh|.py`,
  e.g. `apply_k3_container_patches.sh`, `patch_vllm_*.py`);
- an embedded unified diff (a heredoc whose body is a diff);
- a write (`sed -i`, `cp`, `mv`, `install`, `ln`, `rm`, `tee`, `>`, `curl -o`,
  `cat >`) that targets the installed engine: `site-packages`,
  `dist-packages`, `/sgl-workspace`, an engine source file
  (`vllm/...py`, `sglang/...`, `aiter/...`), or a variable resolved through
  `importlib.util.find_spec` / `__file__` / `pip show` of an engine;
- a python heredoc or script under benchmarks that locates engine sources
  (find_spec, site-packages, an engine path argument) and writes files;
- a monkey-patch hook: `sitecustomize` / `usercustomize` / a `.pth` file
  (eval and benchmark-client hooks — lm_eval, aiperf, bench_serving — are not
  the serving stack);
- `pip install` / `uv pip install` of an engine or kernel package (vllm,
  sglang, sgl-kernel, tensorrt-llm, flashinfer, flash-attn, aiter, triton,
  torch, deep-gemm, deep-ep, xformers) from any source over the pinned image.
  Client and harness deps (aiperf, lm_eval, datasets) and stock libraries
  such as amd-quark are fine.
`sed -i` on a recipe's own `name:` or copying recipes into an srt-slurm
checkout touches no engine file and is not patching.

Waiver rule (deterministic):
- patching this PR introduces needs `docs/waiver/<PR_NUMBER>.md` added or
  changed by this PR; pre-existing patching needs a waiver already on the base
  branch (`docs/waiver/*.md` in the policy files) that names the patched file
  or the patcher script it runs;
- the waiver must be filled out: no template placeholders (`<PR_NUMBER>`,
  `<describe ...>`, TODO, TBD, FIXME, `[fill in]`); a "what is patched"
  section, a "why" section and a "removal plan" section, each a markdown
  heading (or a bold lead-in line) followed by at least 40 characters of text;
  a link to an upstream pull request or issue (a GitHub PR/issue in another
  repository); and, for every file with patching, that file's name or the
  name of the patcher script it runs;
- the sign-off's additional detail section must link the waiver (a GitHub
  URL of this repository, or the PR's head repository, ending in the waiver's
  path).

N/A when the PR touches no benchmark script, launcher, workflow, Dockerfile,
patch file or master config.

    passes:  sed -i "s/^name: .*/name: $RUN_NAME/" "$RECIPE"         (the recipe's own name)
    passes:  bash apply_k3_container_patches.sh  + docs/waiver/2508.md (filled out, linked)
    fails:   sed -i 's/x/y/' /usr/lib/python3/dist-packages/vllm/envs.py  (no waiver)
"""

from __future__ import annotations

import posixpath
import re
import shlex
from dataclasses import dataclass

from .context import Context
from .result import CheckResult, Finding, Severity, Status
from .snapshot import ChangedFile
from .shell import Assignment, Script, ShellLine, heredoc_bodies, line_code

NUMBER = 10
NAME = "no engine patches"
RULE = "engine-patch"
MIN_SECTION_CHARS = 40

ENGINE_PACKAGES = frozenset({
    "vllm", "sglang", "sgl-kernel", "sglang-kernel", "tensorrt-llm", "flashinfer", "flashinfer-python",
    "flashinfer-cubin", "flashinfer-jit-cache", "flash-attn", "aiter", "amd-aiter", "triton",
    "pytorch-triton-rocm", "torch", "deep-gemm", "deep-ep", "xformers",
})
_ENGINES = r"(?:vllm|sglang|tensorrt_llm|sgl_kernel|aiter|flashinfer|deep_gemm|deep_ep|triton)"
_CLIENT_DIRS = ("utils/evals/", "utils/bench_serving/", "utils/aiperf/", "utils/agentic-benchmark/")
_CLIENT_WORDS = re.compile(r"lm[_-]?eval|aiperf|bench_serving|/evals/", re.I)

_ENGINE_LOCATOR = re.compile(r"site-packages|dist-packages|/sgl-workspace\b|find_spec\(|__file__"
                             rf"|\bpip3?\s+show\s+{_ENGINES}")
_ENGINE_PATH = re.compile(rf"site-packages|dist-packages|/sgl-workspace\b|find_spec\(|(?:^|[\s\"'=:/]){_ENGINES}"
                          r"/[\w./-]+\.(?:py|so|cu|cuh|cpp|h|csv|co)\b")
_WRITE = re.compile(r"\bsed\s+(?:-[a-zA-Z]*i|--in-place)|(?:^\s*|[;&|({!]\s*|\b(?:then|do|else|sudo)\s+)"
                    r"(?:cp|mv|install|ln|rm|truncate|tee|dd|rsync|unzip|tar)\b|\bcurl\b.*\s-o\s|\bwget\b.*\s-O\s")
_REDIRECT = re.compile(r"(?<![0-9&<>])>>?\s*(\"[^\"]*\"|'[^']*'|[^\s;|&)]+)")
_QUOTED = re.compile(r"\"(?:[^\"\\]|\\.)*\"|'[^']*'")
_GIT_APPLY = re.compile(r"\bgit\s+(?:-C\s+\S+\s+)?(apply|am)\b")
_PATCH_CMD = re.compile(r"(?:^\s*|[;&|({!]\s*|\b(?:then|do|else|sudo)\s+)patch\s+(?:-|<)")
_SCRIPT_NAME = re.compile(r"(?<![\w.-])([\w.-]+)\.(?:sh|py)\b")
_PATCH_STEM = re.compile(r"(?:^|[_.-])patch(?:es|ed|ing)?(?:[_.-]|$)")
_RUNNER = re.compile(r"^\s*(?:sudo\s+)?(?:\w+=\S+\s+)*(?:bash|sh|source|\.|exec|python[\d.]*|uv\s+run)\s")
_HOOK = re.compile(r"\b(?:site|user)customize\b|\.pth\b")
_PIP = re.compile(r"(?:\bpip3?|\bpython[\d.]*\s+-m\s+pip|\buv\s+pip)\s[^|;&]*?\binstall\s+(.*)$|"
                  r"\bagentic_pip_install\s+(.*)$")
_PY_WRITE = re.compile(r"open\([^)]*[\"'][wa]b?\+?[\"']|\.write_text\(|\.write_bytes\(|shutil\.(?:copy|move)"
                       r"|os\.replace\(|os\.rename\(")
_PY_ENGINE = re.compile(rf"find_spec\(|site-packages|dist-packages|/sgl-workspace\b|\bimport\s+{_ENGINES}\b")
_OPTION_ARGS = frozenset({"-r", "--requirement", "-c", "--constraint", "-i", "--index-url", "--extra-index-url",
                          "-f", "--find-links", "-t", "--target", "--prefix", "--root", "--python", "--src",
                          "--platform", "--python-version", "--implementation", "--abi"})
_PLACEHOLDER = re.compile(r"<[A-Z][A-Z0-9_ -]*>|<[a-z][^<>\n]*\s[^<>\n]*>|\bTODO\b|\bTBD\b|\bFIXME\b"
                          r"|\[fill[^\]]*\]", re.I)
_HEADING = re.compile(r"^(?:#{1,6}\s+(.+?)\s*#*\s*$|\*\*(.+?)\*\*:?\s*$)")
_SECTIONS = (
    ("what is patched", re.compile(r"\bwhat\b.*\b(?:patch|change|modif)|^(?:patch(?:es|ed)?|changes)\b", re.I)),
    ("why the unmodified image cannot run it", re.compile(r"\bwhy\b|\breason|\brationale|\bjustification", re.I)),
    ("removal plan", re.compile(r"\bremov|\bretire|\bsunset|\bexit plan", re.I)),
)
_ISSUE_LINK = re.compile(r"https?://github\.com/([\w.-]+/[\w.-]+)/(?:pull|issues)/\d+")
_REPO_FILE = re.compile(r"https?://(?:github\.com/([^/\s]+/[^/\s]+)/(?:blob|tree|raw)/|"
                        r"raw\.githubusercontent\.com/([^/\s]+/[^/\s]+)/)([^?#\s]+)")


@dataclass(frozen=True)
class Site:
    """One place that patches the serving stack."""

    path: str
    line: int
    end: int  # last line of the site (heredocs span their body)
    what: str
    target: str = ""  # the patcher script a site runs, which a waiver may name instead of `path`


def _in_scope(ctx: Context, f: ChangedFile) -> bool:
    return (f.path.startswith(("benchmarks/", "runners/", ".github/workflows/"))
            or ctx.policy.is_master_config(f.path) or _is_patch_file(f.path) or _is_dockerfile(f.path))


def _is_dockerfile(path: str) -> bool:
    name = posixpath.basename(path)
    return name.startswith("Dockerfile") or name.endswith(".dockerfile")


def _is_patch_file(path: str) -> bool:
    return path.endswith((".patch", ".diff")) and not path.startswith(_CLIENT_DIRS)


def _snippet(code: str) -> str:
    code = " ".join(code.split())
    return code if len(code) <= 80 else code[:77] + "..."


def _pip_packages(args: str, last_clone: str) -> list[str]:
    try:
        tokens = shlex.split(args)
    except ValueError:
        tokens = args.split()
    names: list[str] = []
    skip = False
    for tok in tokens:
        if skip:
            skip = False
            continue
        if tok in _OPTION_ARGS:
            skip = True
            continue
        if tok.startswith("-") or tok.startswith("2>") or tok in ("|", "&&", "||"):
            if tok in ("|", "&&", "||"):
                break
            continue
        egg = re.search(r"#egg=([\w.-]+)", tok)
        if egg:
            name = egg.group(1)
        elif tok.startswith(("git+", "http://", "https://")):
            base = posixpath.basename(tok.split("#")[0].split("@")[0].rstrip("/"))
            name = base[:-4] if base.endswith(".git") else base.split("-")[0]
        elif tok.startswith((".", "/", "$")):
            name = last_clone
        else:
            name = re.split(r"[\[=<>!~;@\s]", tok)[0]
        names.append(name.lower().replace("_", "-"))
    return names


def _touches_engine(text: str, engine_vars: set[str]) -> bool:
    return bool(_ENGINE_PATH.search(text)) or any(re.search(rf"\$\{{?{v}\b", text) for v in engine_vars)


def _line_sites(code: str, engine_vars: set[str], last_clone: str) -> list[tuple[str, str]]:
    """(what, patcher it runs) for each kind of patching on one command line."""
    out: list[tuple[str, str]] = []
    bare = _QUOTED.sub('""', code)  # commands, not words inside strings (`echo "git apply done"`)
    m = _GIT_APPLY.search(bare)
    if m:
        out.append((f"`git {m.group(1)}` applies a patch", ""))
    elif _PATCH_CMD.search(bare):
        out.append(("`patch` applies a diff", ""))
    patcher = next((m.group(0) for m in _SCRIPT_NAME.finditer(code) if _PATCH_STEM.search(m.group(1))), None)
    if patcher and _RUNNER.search(code):
        out.append((f"runs the patcher {patcher}", patcher))
    if (_WRITE.search(bare) and _touches_engine(code, engine_vars)) or any(
            _touches_engine(t, engine_vars) for t in _REDIRECT.findall(code)):
        out.append(("rewrites files of the installed engine", ""))
    if _HOOK.search(code) and not _CLIENT_WORDS.search(code):
        out.append(("installs a Python monkey-patch hook (sitecustomize/.pth)", ""))
    m = _PIP.search(code)
    if m:
        engines = [n for n in _pip_packages(m.group(1) or m.group(2) or "", last_clone) if n in ENGINE_PACKAGES]
        if engines:
            out.append((f"installs engine package {', '.join(engines)} over the pinned image", ""))
    return out


def _shell_sites(path: str, lines: tuple[ShellLine, ...], assignments: tuple[Assignment, ...] = ()) -> list[Site]:
    sites: list[Site] = []
    engine_vars: set[str] = set()
    last_clone = ""
    done_docs: set[int] = set()
    bodies = heredoc_bodies(lines)
    assigned: dict[int, list[Assignment]] = {}
    for a in assignments:
        assigned.setdefault(a.line, []).append(a)
    for ln in lines:
        doc = ln.heredoc
        if doc is not None:
            if doc.start in done_docs:
                continue
            done_docs.add(doc.start)
            body = [b.code for b in bodies[doc.start]]
            opener_engine = _ENGINE_LOCATOR.search(doc.opener) or _touches_engine(doc.opener, engine_vars)
            if doc.diff:
                sites.append(Site(path, doc.start, doc.end, f"embeds an inline patch (`{_snippet(doc.opener)}`)"))
            elif doc.python and any(_PY_WRITE.search(b) for b in body) and (
                    opener_engine or any(_PY_ENGINE.search(b) for b in body)):
                sites.append(Site(path, doc.start, doc.end,
                                  f"python heredoc rewrites engine sources (`{_snippet(doc.opener)}`)"))
            continue
        code = ln.code
        if not code.strip():
            continue
        for a in assigned.get(ln.number, ()):
            if _ENGINE_LOCATOR.search(a.text) or _touches_engine(a.text, engine_vars):
                engine_vars.add(a.name)
        clone = re.search(r"\bgit\s+clone\b.*?\s(?:https?://|git@)\S*?/([\w.-]+?)(?:\.git)?(?:\s|$)", code)
        if clone:
            last_clone = clone.group(1).lower()
        for what, target in _line_sites(code, engine_vars, last_clone):
            sites.append(Site(path, ln.number, ln.number, f"{what} (`{_snippet(code)}`)", target))
    return sites


def _file_sites(ctx: Context, f: ChangedFile) -> list[Site]:
    text = f.head_text or ""
    if _is_patch_file(f.path):
        return [Site(f.path, 1, max(1, len(text.splitlines())), "adds a patch file")]
    if ctx.policy.is_master_config(f.path):
        sites = []
        for n, raw in ctx.added_lines(f):
            for what, target in _line_sites(line_code(raw), set(), ""):
                sites.append(Site(f.path, n, n, f"{what} (`{_snippet(raw)}`)", target))
        return sites
    if f.path.endswith(".py"):
        name = posixpath.basename(f.path)
        if name in ("sitecustomize.py", "usercustomize.py") and not f.path.startswith(_CLIENT_DIRS):
            return [Site(f.path, 1, 1, f"adds a Python monkey-patch hook ({name})")]
        if _PY_ENGINE.search(text):
            for n, raw in enumerate(text.splitlines(), 1):
                if _PY_WRITE.search(raw):
                    return [Site(f.path, n, n, "python script rewrites engine sources")]
        return []
    if f.path.endswith((".sh", ".bash")):
        script = ctx.script(text)
    elif f.path.startswith(".github/workflows/") and f.path.endswith((".yml", ".yaml")):
        script = Script(text, embedded=True)
    elif f.path.endswith((".yml", ".yaml")) or _is_dockerfile(f.path):
        return _shell_sites(f.path, tuple(ShellLine.alone(n, raw) for n, raw in enumerate(text.splitlines(), 1)))
    else:
        return []
    return _shell_sites(f.path, script.lines, script.assignments)


def _names(sites: list[Site]) -> tuple[str, ...]:
    """Names a waiver may use for the patching in one file: the file itself or a patcher it runs."""
    return tuple(dict.fromkeys([posixpath.basename(sites[0].path)] + [s.target for s in sites if s.target]))


def _incomplete(ctx: Context, text: str, covers: tuple[tuple[str, ...], ...]) -> list[str]:
    """What a waiver lacks to count as filled out (empty when it is complete)."""
    text = re.sub(r"<!--.*?-->", "", text, flags=re.S)
    problems: list[str] = []
    placeholder = _PLACEHOLDER.search(text)
    if placeholder:
        problems.append(f"template placeholder {placeholder.group(0)!r} left in")
    sections = _sections(text)
    for label, pattern in _SECTIONS:
        bodies = [body for heading, body in sections if pattern.search(heading)]
        if not bodies:
            problems.append(f"no '{label}' section")
        elif max(len(re.sub(r"\s", "", _PLACEHOLDER.sub("", b))) for b in bodies) < MIN_SECTION_CHARS:
            problems.append(f"'{label}' section is empty")
    repo = ctx.snap.repo.lower()
    if not any(m.group(1).lower() != repo for m in _ISSUE_LINK.finditer(text)):
        problems.append("no upstream PR/issue link")
    for names in covers:
        if not any(name in text for name in names):
            problems.append(f"does not name {' or '.join(names)}")
    return problems


def _sections(text: str) -> list[tuple[str, str]]:
    out: list[tuple[str, list[str]]] = []
    for line in text.splitlines():
        m = _HEADING.match(line.strip())
        if m:
            out.append((m.group(1) or m.group(2), []))
        elif out:
            out[-1][1].append(line)
    return [(h, "\n".join(body)) for h, body in out]


def _linked(ctx: Context, waiver: str) -> bool:
    if ctx.signoff is None:
        return False
    repos = {ctx.snap.repo.lower(), (ctx.snap.pr.head_repo or ctx.snap.repo).lower()}
    for url in ctx.signoff.detail_links:
        m = _REPO_FILE.match(url)
        if m and (m.group(1) or m.group(2)).lower() in repos:
            rest = m.group(3)
            if rest == waiver or rest.endswith("/" + waiver):
                return True
    return False


def _by_file(sites: list[Site]) -> dict[str, list[Site]]:
    out: dict[str, list[Site]] = {}
    for s in sites:
        out.setdefault(s.path, []).append(s)
    return out


def _introduced_problem(ctx: Context, by_file: dict[str, list[Site]]) -> tuple[str | None, str]:
    """(what is missing, the waiver path) for patching this PR introduces."""
    waiver = f"{ctx.policy.waiver_dir.rstrip('/')}/{ctx.snap.pr.number}.md"
    f = ctx.snap.changed(waiver)
    if f is None or f.status == "removed" or f.head_text is None:
        others = [c.path for c in ctx.changed_files if c.path.startswith(ctx.policy.waiver_dir.rstrip("/") + "/")
                  and c.path.endswith(".md")]
        also = f" (it changes {', '.join(others)} instead)" if others else ""
        return f"no waiver: the PR does not add {waiver}{also}", waiver
    problems = _incomplete(ctx, f.head_text, tuple(_names(sites) for sites in by_file.values()))
    if problems:
        return f"waiver {waiver} is incomplete: {'; '.join(problems)}", waiver
    if not _linked(ctx, waiver):
        return f"waiver {waiver} is not linked from the sign-off's additional detail section", waiver
    return None, waiver


def _preexisting_problem(ctx: Context, sites: list[Site]) -> tuple[str | None, str]:
    """(what is missing, the covering waiver) for patching that predates this PR."""
    prefix = ctx.policy.waiver_dir.rstrip("/") + "/"
    names = _names(sites)
    waivers = [(p, t) for p, t in sorted(ctx.snap.policy.items())
               if p.startswith(prefix) and p.endswith(".md") and any(n in t for n in names)]
    if not waivers:
        return (f"pre-existing patching with no waiver on the base branch ({prefix}*.md naming "
                f"{' or '.join(names)})"), ""
    complete = [p for p, t in waivers if not _incomplete(ctx, t, (names,))]
    if not complete:
        problems = "; ".join(_incomplete(ctx, waivers[0][1], (names,)))
        return f"waiver {waivers[0][0]} on the base branch is incomplete: {problems}", waivers[0][0]
    linked = [p for p in complete if _linked(ctx, p)]
    if not linked:
        return f"waiver {complete[0]} is not linked from the sign-off's additional detail section", complete[0]
    return None, linked[0]


def check(ctx: Context) -> CheckResult:
    files = sorted((f for f in ctx.changed_files if _in_scope(ctx, f)), key=lambda f: f.path)
    if not files:
        return CheckResult(NUMBER, NAME, Status.NA,
                           "the PR touches no benchmark script, launcher, workflow, Dockerfile, patch file or "
                           "master config")
    introduced: list[Site] = []
    preexisting: list[Site] = []
    for f in files:
        added = {n for n, _ in ctx.added_lines(f)}
        for site in _file_sites(ctx, f):
            touched = any(site.line <= n <= site.end for n in added)
            (introduced if touched else preexisting).append(site)
    if not introduced and not preexisting:
        return CheckResult(NUMBER, NAME, Status.PASS,
                           "no patching of the serving stack (no .patch/git apply/patch, inline source rewrites, "
                           "monkey-patch hooks, container file overwrites or engine wheel installs)")
    findings: list[Finding] = []
    covered: list[str] = []
    if introduced:
        by_file = _by_file(introduced)
        problem, waiver = _introduced_problem(ctx, by_file)
        if problem is None:
            covered.append(f"patching in {', '.join(posixpath.basename(p) for p in by_file)} is covered by the "
                           f"filled-out waiver {waiver} filed in this PR and linked from the sign-off")
        for path, sites in by_file.items():
            if problem is not None:
                more = f" (+{len(sites) - 1} more patch sites in this file)" if len(sites) > 1 else ""
                findings.append(Finding(path, sites[0].line, RULE, Severity.ERROR,
                                        f"{sites[0].what}; {problem}{more}"))
    for path, sites in _by_file(preexisting).items():
        problem, waiver = _preexisting_problem(ctx, sites)
        if problem is None:
            covered.append(f"pre-existing patching in {posixpath.basename(path)} is covered by {waiver}")
            continue
        findings.append(Finding(path, sites[0].line, RULE, Severity.ERROR, f"{sites[0].what}; {problem}"))
    if findings:
        return CheckResult.failed(NUMBER, NAME, findings)
    return CheckResult(NUMBER, NAME, Status.PASS, "; ".join(covered))
