"""Where a file patches the serving stack: each command judged by what it writes.

A `Site` is one place that modifies the inference engine at build or run
time. Commands are read from the syntax of the file (`checks.facts.bash` for bash,
`ast` for Python through `checks.facts.pycode`, YAML for workflows), so words inside
strings, prompts and heredocs that no interpreter reads are never commands.
What a command writes decides, through `checks.facts.stack`:

- `git apply` / `git am` / `patch` write into their directory (`-C`,
  `--directory`, `-d`, else the directory the script `cd`s into last): a site
  unless that directory is a checkout of a non-engine repository the script
  cloned (the srt-slurm harness, say) or client code;
- `sed -i`, `cp`, `mv`, `install`, `ln`, `rsync`, `tee`, `dd of=`,
  `curl -o`, `wget -O`, `tar -C`, `unzip -d`, `rm`, `truncate` and output
  redirections write their targets: a site when a target is engine code
  (an engine package's files, `site-packages` outside client packages,
  `/sgl-workspace`, a path under a cloned engine checkout, or a variable
  the script sets to an engine location, e.g. from `find_spec("vllm")`);
- a Python program (a `python -c` string, a heredoc fed to python, a
  repository `.py` file it runs) is a site when it writes files and locates
  engine code (by import, `__file__`, `find_spec`, an engine path), or
  monkey-patches an engine module; patching eval tooling, agents and scorers
  (lm-eval, SWE-bench, mini-swe-agent, swe-rex) is not;
- a repository shell script it runs (`bash x.sh`, `sh x.sh`) is a site when
  that script has one;
- a startup hook it installs (`sitecustomize.py`, `usercustomize.py`, a
  `.pth` file) is judged by its content, as a Python program;
- a container bind mount (`docker -v`/`--volume`/`--mount`, `srun
  --container-mounts`, `-B`/`--bind`) whose destination is engine code;
- `pip install` of an engine or kernel package (`checks.facts.stack.ENGINE_PACKAGES`)
  where the engine runs (not in a workflow step, which runs on the CI runner);
- a patch file or an embedded diff whose patched files are not all client code.

A program whose source is not in the repository cannot be judged by what it
writes; it is a site the checks cannot decide ("cannot decide") only when
what is visible points at patching: its file name says patch, or an
argument is an engine location.

Repository files a script runs are read from the snapshot; one that is not
there yet is listed in `Reading.missing`, for the evidence rounds to fetch.
"""

from __future__ import annotations

import posixpath
import re
from dataclasses import dataclass, field, replace
from functools import cached_property
from typing import Callable, Iterator

from . import pycode
from .bash import MAX_SCRIPT, Heredoc, Script, SimpleCommand, heredoc_bodies, line_code
from .scriptpaths import repo_path
from .stack import Target, located_target, module_target, package_target, path_target, repo_target

Read = Callable[[str], "str | None"]  # a repository path -> its text (None: not a file); KeyError: not held

MAX_DEPTH = 2  # scripts followed from a changed file: the script it runs, and one more

_WRAPPERS = frozenset({"sudo", "env", "nohup", "exec", "time", "command", "stdbuf", "nice", "timeout"})
_WRITERS = frozenset({"cp", "mv", "install", "ln", "rsync"})
_OUT = frozenset({">", ">>", ">|", "&>", "&>>"})
_PYTHON = re.compile(r"^(?:.*/)?python[\d.]*$")
_SHELLS = frozenset({"bash", "sh", "zsh"})
_CONTAINERS = frozenset({"docker", "podman", "srun", "enroot", "apptainer", "singularity", "nerdctl"})
_REMOVERS = frozenset({"tee", "rm", "truncate"})  # write (or remove) their operands
_FETCHERS = {"curl": ("-o", "--output"), "wget": ("-O", "--output-document")}  # the option naming the file written
_EXTRACTORS = {"tar": "-C", "unzip": "-d"}  # the option naming the directory written
_PIPS = frozenset({"pip", "pip3"})
_MOUNT = re.compile(r"(?:^|\s)(?:-v|--volume|-B|--bind)[ =]([^\s\"']+)|--container-mounts[ =]([^\s\"']+)"
                    r"|--mount[ =]([^\s\"']+)")
_HOOKS = ("sitecustomize.py", "usercustomize.py")
_DIFF_PATH = re.compile(r"^(?:\+\+\+ (?:b/)?|--- (?:a/)?|diff --git a/\S+ b/)(\S+)", re.M)
_PATCHY = re.compile(r"patch", re.I)
_CLONE_OPTIONS = frozenset({"--branch", "-b", "--depth", "--origin", "-o", "--reference", "--config", "-c",
                            "--filter", "--jobs", "-j", "--shallow-since", "--separate-git-dir"})
_SED_OPTIONS = frozenset({"-e", "--expression", "-f", "--file", "-l", "--line-length", "-s"})
_PIP_OPTIONS = frozenset({"-r", "--requirement", "-c", "--constraint", "-i", "--index-url", "--extra-index-url",
                          "-f", "--find-links", "-t", "--target", "--prefix", "--root", "--python", "--src",
                          "--platform", "--python-version", "--implementation", "--abi"})


@dataclass(frozen=True)
class Site:
    """One place that patches the serving stack (or may: `undecided`)."""

    path: str
    line: int
    end: int  # last line of the site (heredocs span their body)
    what: str
    target: str = ""  # the patcher a site runs, which a waiver may name instead of `path`
    undecided: bool = False
    assignment: bool = False  # a value kept for a later command (mount options): runs where its file runs
    unread: bool = False  # lines whose commands were not read (`Script.unread`): nothing is known of them


@dataclass
class Reading:
    """The sites of some files, and the repository files (at head) that were needed but not in the snapshot."""

    sites: list[Site] = field(default_factory=list)
    missing: set[str] = field(default_factory=set)


_WORD_PART = re.compile(r"""'([^']*)'|"((?:[^"\\]|\\.)*)"|\\(.)|([^ \t\r\n'"\\]+)|([ \t\r\n]+)""", re.S)
_QUOTED_ESCAPE = re.compile(r"""\\([\\"])""")


def split_words(source: str) -> list[str]:
    """`shlex.split(source)` (POSIX rules: quotes, backslashes, blanks), in time linear in `source`: shlex adds
    a word's characters one at a time to an attribute, which costs the square of a long word. Raises
    ValueError where shlex does (an unclosed quote, a backslash at the end)."""
    words: list[str] = []
    parts: list[str] | None = None
    at = 0
    while at < len(source):
        m = _WORD_PART.match(source, at)
        if m is None:
            raise ValueError("No closing quotation" if source[at] in "'\"" else "No escaped character")
        at = m.end()
        single, double, escaped, plain, blank = m.groups()
        if blank is not None:
            if parts is not None:
                words.append("".join(parts))
            parts = None
            continue
        parts = [] if parts is None else parts
        if single is not None:
            parts.append(single)
        elif double is not None:
            parts.append(_QUOTED_ESCAPE.sub(r"\1", double))
        else:
            parts.append(escaped if escaped is not None else plain)
    if parts is not None:
        words.append("".join(parts))
    return words


def _outer_substitution(text: str) -> list[str]:
    """What a greedy `$(...)` pattern finds: the text from the first `$(` to the last `)` (none when no `)`
    follows), without scanning the rest of the text from every `$(`."""
    start, end = text.find("$("), text.rfind(")")
    return [text[start + 2:end]] if 0 <= start and start + 2 <= end else []


def snippet(code: str) -> str:
    code = " ".join(code.split())
    return code if len(code) <= 80 else code[:77] + "..."


# --------------------------------------------------------------------------
# Python programs
# --------------------------------------------------------------------------


def program_effect(source: str, arg_targets: tuple[Target, ...] = ()) -> str | None:
    """What a Python program does to the engine ("rewrites engine sources", "monkey-patches vllm..."), or None."""
    facts = pycode.read(source)
    engine = sorted(m for m in facts.locates if located_target(m) is Target.ENGINE)
    engine += sorted(s for s in facts.strings if path_target(s) is Target.ENGINE)
    if facts.writes and (engine or Target.ENGINE in arg_targets):
        return "rewrites engine sources"
    patched = sorted(m for m in facts.patches if module_target(m) is Target.ENGINE)
    if patched:
        return f"monkey-patches {', '.join(patched[:3])}"
    return None


def hook_effect(source: str) -> str | None:
    """What a startup hook (sitecustomize, .pth) does to the engine: it runs inside every Python process, the
    server's too, so importing an engine module and patching it, or rewriting engine files, is patching."""
    effect = program_effect(source)
    if effect:
        return effect
    facts = pycode.read(source)
    if not facts.parsed and any(module_target(m) is Target.ENGINE for m in facts.imports):
        return "imports the engine"  # patterns cannot tell a monkey-patch from a read: the hook counts
    return None


# --------------------------------------------------------------------------
# Shell scripts
# --------------------------------------------------------------------------


class ScriptReader:  # cached_property here: a reading of what it was built from, which never changes
    """The sites of one bash script (a file, a workflow `run:` block, a Dockerfile `RUN`), lines offset by
    `offset`; repository files it runs are read through `read` (None: not in the snapshot). `on_runner`: the
    script runs on a CI runner (a workflow step), not where the engine is installed, so what it pip-installs
    is the runner's, not the pinned image's."""

    def __init__(self, path: str, script: Script, read: Read, depth: int = 0, offset: int = 0, on_runner: bool = False,
                 scripts: Callable[[str], Script] = Script, shared: dict[tuple[str, Script], Reading] | None = None):
        self.path = path
        self.script = script
        self.read = read  # path -> text | None; raises KeyError when the snapshot does not hold it
        self.scripts = scripts  # text -> its Script: a context's (`Context.script`) shares one reading per text
        self.depth = depth
        self.offset = offset
        self.on_runner = on_runner
        # (path, script) -> its reading, where no depth changes it; readers of one `read` share it
        self.shared = {} if shared is None else shared
        self.deep = False  # whether a shell script it runs was asked about: then its reading depends on `depth`
        self.reading = Reading()
        self.clones: dict[str, Target] = {}  # directory -> whose checkout it is
        self.cwd = ""
        self.vars: dict[str, Target] = {}

    def sites(self) -> Reading:
        self.vars = self._variables()
        ends = {c.line: c.end for c in self.script.commands}
        docs = self._heredocs
        for call in self.script.simple_commands:
            words = _unwrap(call.words)
            self._track(words)
            doc = docs.get(call.line)
            end = max(ends.get(call.line, call.line), doc.end if doc else 0)
            for what, target, undecided in self._judge(call, words, doc):
                self.reading.sites.append(Site(self.path, call.line + self.offset, end + self.offset,
                                               f"{what} (`{snippet(self._source(call.line))}`)", target, undecided))
        self._mount_assignments()
        for first, last in self.script.unread:
            lines = f"line {first}" if first == last else f"lines {first}-{last}"
            self.reading.sites.append(Site(self.path, first + self.offset, last + self.offset,
                                           f"cannot decide: {lines} could not be read (past the "
                                           f"{MAX_SCRIPT // 1000} KB read cut, or nested too deep to parse)",
                                           undecided=True, unread=True))
        self.reading.sites.sort(key=lambda site: (site.line, site.what))
        if not (self.deep or self.offset or self.on_runner):  # what a script that runs it reads (`_program`)
            self.shared[(self.path, self.script)] = self.reading
        return self.reading

    # --- state: variables, clones, working directory ---
    def _variables(self) -> dict[str, Target]:
        """Variables the script sets to a location of engine or client code."""
        out: dict[str, Target] = {}
        for a in self.script.assignments:
            if a.value is None:
                continue
            target = self._value_target(a.text)
            if target is not Target.OTHER:
                out[a.name] = target
        return out

    def _value_target(self, text: str) -> Target:
        for sub in _outer_substitution(text):
            target = self._substitution_target(sub)
            if target is not Target.OTHER:
                return target
        return self._path(text)

    def _substitution_target(self, source: str) -> Target:
        """Whose location a command substitution prints: `python -c "import vllm; print(vllm.__file__)"`,
        `pip show sglang`, `python -c 'import site; ...'` (the image's installation)."""
        try:
            words = split_words(source)
        except ValueError:
            words = source.split()
        if "-c" in words[:-1] and words and _PYTHON.match(words[0]):
            facts = pycode.read(words[words.index("-c") + 1])
            located = [located_target(m) for m in facts.locates]
            if Target.ENGINE in located or {"site", "sysconfig"} & facts.imports:
                return Target.ENGINE  # an engine's (or the image's) installed files
            if Target.CLIENT in located:
                return Target.CLIENT
        if len(words) >= 3 and words[0].startswith("pip") and words[1] == "show":
            return package_target(words[2]) if package_target(words[2]) is Target.ENGINE else Target.CLIENT
        return Target.OTHER

    def _track(self, words: tuple[str, ...]) -> None:
        """Clones and the working directory, from a command's words behind their wrappers (`_unwrap`)."""
        if words[:2] == ("git", "clone"):
            positional = _positional(words[2:], _CLONE_OPTIONS)
            if positional:
                url = positional[0]
                default = url.rstrip("/").rsplit("/", 1)[-1].removesuffix(".git")
                self.clones[(positional[1] if len(positional) > 1 else default).rstrip("/")] = repo_target(url)
        elif words[:1] == ("cd",) and len(words) == 2:
            self.cwd = words[1].rstrip("/")

    def _dir_target(self, directory: str) -> Target | None:
        """Whose code a directory is: a cloned checkout, engine or client code by path, else None (unknown)."""
        for clone, target in self.clones.items():
            if directory == clone or directory.startswith(clone + "/"):
                return target
        target = self._written(directory)
        return target if target is not Target.OTHER else None

    def _path(self, text: str) -> Target:
        """Whose code a path written in the script is; a relative path is inside the working directory."""
        target = self._written(text)
        if target is Target.OTHER and not text.startswith(("/", "$", "~")) and self.cwd:
            inside = self._dir_target(self.cwd)
            if inside is not None:
                return inside
        return target

    def _written(self, text: str) -> Target:
        """Whose code a path is by what is written: a variable set to a location, or the path itself."""
        for name in re.findall(r"\$\{?([A-Za-z_]\w*)", text):
            if name in self.vars:
                return self.vars[name]
        return path_target(text)

    # --- judging one command ---
    def _judge(self, call: SimpleCommand, words: tuple[str, ...], doc: Heredoc | None) -> list[tuple[str, str, bool]]:
        """The sites of one command (`words`: its words behind their wrappers). Most commands are none that
        `_sites_of` reads (`_JUDGED`, a python) and redirect no output, so they hold none: not read further."""
        name = posixpath.basename(words[0]) if words else ""
        if not (name in _JUDGED or _PYTHON.match(name) or any(op in _OUT for op, _target in call.redirects)):
            return []
        return self._sites_of(call, words, name, doc)

    def _sites_of(self, call: SimpleCommand, words: tuple[str, ...], name: str,
                  doc: Heredoc | None) -> list[tuple[str, str, bool]]:
        """`_judge`, reading every command (`name`: the base name of its first word)."""
        out: list[tuple[str, str, bool]] = []
        if name == "git" and len(words) > 1:
            out += self._git_apply(words)
        elif name == "patch":
            out += self._patch_command(words)
        elif _PYTHON.match(name):
            out += self._python(words, doc)
        elif name in _SHELLS and len(words) > 1:
            out += self._shell(words)
        out += self._writes(name, words, call)
        if not self.on_runner:
            out += self._pip(words)
        if name in _CONTAINERS:
            out += self._mounts(" ".join(words))
        return out

    def _git_apply(self, words: tuple[str, ...]) -> list[tuple[str, str, bool]]:
        directory = self.cwd
        rest = list(words[1:])
        while len(rest) >= 2 and rest[0] == "-C":
            directory = rest[1]
            rest = rest[2:]
        if not rest or rest[0] not in ("apply", "am"):
            return []
        for w in rest[1:]:
            if w.startswith("--directory="):
                directory = w.split("=", 1)[1]
        return self._applied(f"`git {rest[0]}` applies a patch", directory)

    def _patch_command(self, words: tuple[str, ...]) -> list[tuple[str, str, bool]]:
        directory = self.cwd
        for i, w in enumerate(words[1:], 1):
            if w == "-d" and i + 1 < len(words):
                directory = words[i + 1]
            elif w.startswith("--directory="):
                directory = w.split("=", 1)[1]
        return self._applied("`patch` applies a diff", directory)

    def _applied(self, what: str, directory: str) -> list[tuple[str, str, bool]]:
        target = self._dir_target(directory) if directory else None
        if target in (Target.CLIENT, Target.OTHER):
            return []
        return [(what, "", False)]  # into engine code, or a directory it cannot tell: patching

    def _writes(self, name: str, words: tuple[str, ...], call: SimpleCommand) -> list[tuple[str, str, bool]]:
        targets = [t for op, t in call.redirects if op in _OUT and t not in ("/dev/null", "/dev/stderr", "/dev/stdout")]
        args = [w for w in words[1:] if not w.startswith("-")]
        if name == "sed" and any(w.startswith("--in-place") or re.fullmatch(r"-[a-zA-Z]*i\S*", w) for w in words[1:]):
            operands = _positional(words[1:], _SED_OPTIONS - {"-s"})
            scripted = any(w in ("-e", "--expression", "-f", "--file") for w in words[1:])
            targets += operands if scripted else operands[1:]
        elif name in _WRITERS and len(args) >= 2:
            targets.append(args[-1])
        elif name in _REMOVERS:
            targets += args
        elif name == "dd":
            targets += [w[3:] for w in words[1:] if w.startswith("of=")]
        elif name in _FETCHERS:
            targets += [words[i + 1] for i, w in enumerate(words[:-1]) if w in _FETCHERS[name]]
        elif name in _EXTRACTORS:
            targets += [words[i + 1] for i, w in enumerate(words[:-1]) if w == _EXTRACTORS[name]]
        out: list[tuple[str, str, bool]] = []
        hooks = [posixpath.basename(t) for t in targets + (args[:-1] if name in _WRITERS else [])]
        hook = next((h for h in hooks if h in _HOOKS or h.endswith(".pth")), None)
        if hook is not None:
            out += self._hook(hook, name, args, call)
        if any(self._path(t) is Target.ENGINE for t in targets):
            out.append(("rewrites files of the installed engine", "", False))
        return out

    def _hook(self, base: str, name: str, args: list[str], call: SimpleCommand) -> list[tuple[str, str, bool]]:
        """A startup hook the command writes, judged by its content: a heredoc body, or the file it copies."""
        doc = self._heredocs.get(call.line)
        if doc is not None and name == "cat":
            body = self._bodies[doc.start]
            effect = hook_effect(body)
            return [(f"installs a Python startup hook ({base}) that {effect}", "", False)] if effect else []
        if name in _WRITERS and len(args) >= 2:
            source = repo_path(args[0], self.path, self.script)
            text = self._repo_text(source) if source else None
            if source and text is not None:
                effect = hook_effect(text)
                return [(f"installs {source} as a Python startup hook ({base}) that {effect}", posixpath.basename(source),
                         False)] if effect else []
            if source is None or source not in self.reading.missing:
                what = f"{args[0]}" if source is None else f"{source}, which is not in the repository"
                return [(f"installs a Python startup hook ({base}) from {what}, so what it patches cannot be reviewed",
                         "", True)]
            return []
        return [(f"installs a Python startup hook ({base}) whose content is not in the script, so what it patches "
                 "cannot be reviewed", "", True)]

    def _python(self, words: tuple[str, ...], doc: Heredoc | None) -> list[tuple[str, str, bool]]:
        args = list(words[1:])
        arg_targets = tuple(self._value_target(a) for a in args)
        if "-c" in args[:-1]:
            effect = program_effect(args[args.index("-c") + 1], arg_targets)
            return [(f"inline python program {effect}", "", False)] if effect else []
        if "-m" in args:
            return []
        if doc is not None and doc.python and (not args or args[0] == "-"):
            body = self._bodies[doc.start]
            effect = program_effect(body, arg_targets)
            return [(f"python heredoc {effect}", "", False)] if effect else []
        script = next((a for a in args if not a.startswith("-")), None)
        return self._program(script, arg_targets, python=True) if script else []

    def _shell(self, words: tuple[str, ...]) -> list[tuple[str, str, bool]]:
        script = next((w for w in words[1:] if not w.startswith("-")), None)
        if script is None or script == "-c":
            return []
        return self._program(script, tuple(self._value_target(a) for a in words[2:]), python=False)

    def _program(self, written: str, arg_targets: tuple[Target, ...], python: bool) -> list[tuple[str, str, bool]]:
        """A repository program the script runs, judged by what it writes; its source read from the snapshot."""
        path = repo_path(written, self.path, self.script)
        base = posixpath.basename(path or written)
        text = self._repo_text(path) if path else None
        if text is None or path is None:  # (a text is read from a path)
            if path is not None and path in self.reading.missing:
                return []  # asked for: judged when it has been read
            if _PATCHY.search(base) or Target.ENGINE in arg_targets:
                where = "is not in the repository" if path else "cannot be located in the repository"
                return [(f"runs {base}, which {where}, so what it patches cannot be reviewed", base, True)]
            return []
        if python:
            effect = program_effect(text, arg_targets)
            return [(f"runs {path}, which {effect}", base, False)] if effect else []
        self.deep = True
        if self.depth >= MAX_DEPTH:
            return ([(f"runs {path}, nested too deep to follow, so what it patches cannot be reviewed", base, True)]
                    if _PATCHY.search(base) else [])
        inner = self._inner(path, self.scripts(text))
        self.reading.missing |= inner.missing
        if not inner.sites:
            return []
        first = inner.sites[0]
        return [(f"runs {path}, which {first.what.split(' (`')[0]} ({first.path}:{first.line})", base, first.undecided)]

    def _inner(self, path: str, script: Script) -> Reading:
        """The reading of a script this one runs, one level deeper: one that ran no shell script reads the same
        at every depth, so when another reader read it so (`shared`), that reading."""
        found = self.shared.get((path, script))
        if found is None:
            found = ScriptReader(path, script, self.read, self.depth + 1, scripts=self.scripts,
                                 shared=self.shared).sites()
        return found

    def _repo_text(self, path: str) -> str | None:
        try:
            return self.read(path)
        except KeyError:
            self.reading.missing.add(path)
            return None

    def _pip(self, words: tuple[str, ...]) -> list[tuple[str, str, bool]]:
        tail = _pip_install_args(words)
        if tail is None:
            return []
        engines = [n for n in _pip_packages(tail, self._last_clone()) if package_target(n) is Target.ENGINE]
        return [(f"installs engine package {', '.join(engines)} over the pinned image", "", False)] if engines else []

    def _last_clone(self) -> str:
        return next(reversed(self.clones), "").rsplit("/", 1)[-1].lower() if self.clones else ""

    def _mounts(self, text: str) -> list[tuple[str, str, bool]]:
        for source, destination in _mount_specs(text):
            if self._path(destination) is Target.ENGINE:
                return [(f"bind-mounts {source or 'a file'} over engine code {destination}", "", False)]
        return []

    def _mount_assignments(self) -> None:
        """Mount options kept in a variable for a later `docker run` (`EXTRA_MOUNTS="-v a:/sgl-workspace/..."`)."""
        for a in self.script.assignments:
            if a.value is None:
                continue
            text = self.script.text_of(a.value.parts)
            for what, target, undecided in self._mounts(text):
                self.reading.sites.append(Site(self.path, a.line + self.offset, a.line + self.offset,
                                               f"{what} (`{snippet(self._source(a.line))}`)", target, undecided,
                                               assignment=True))

    # --- helpers ---
    @cached_property
    def _heredocs(self) -> dict[int, Heredoc]:
        out: dict[int, Heredoc] = {}
        for ln in self.script.lines:
            if ln.heredoc is not None:
                out.setdefault(ln.heredoc.start, ln.heredoc)
        return out

    @cached_property
    def _bodies(self) -> dict[int, str]:
        """The body of each heredoc (keyed as `_heredocs`), read once per script: a script may hold hundreds."""
        return {start: "\n".join(b.code for b in body) for start, body in heredoc_bodies(self.script.lines).items()}

    def _source(self, line: int) -> str:
        return self.script.lines[line - 1].code if 0 < line <= len(self.script.lines) else ""


def _unwrap(words: tuple[str, ...]) -> tuple[str, ...]:
    """The command behind `sudo`, `env A=b`, `nohup`, `timeout 10`... wrappers."""
    i = 0
    while i < len(words):
        w = posixpath.basename(words[i])
        if w in _WRAPPERS:
            i += 1
            while i < len(words) and (words[i].startswith("-") or "=" in words[i]
                                      or (w == "timeout" and re.fullmatch(r"[\d.]+[smhd]?", words[i]))):
                i += 1
            continue
        break
    return words[i:] if i < len(words) else words


def _positional(words: tuple[str, ...], with_value: frozenset[str]) -> list[str]:
    """The operands among `words`, skipping options and the values of options in `with_value`."""
    out: list[str] = []
    skip = False
    for w in words:
        if skip:
            skip = False
        elif w in with_value:
            skip = True
        elif not w.startswith("-"):
            out.append(w)
    return out


def _mount_specs(text: str) -> Iterator[tuple[str, str]]:
    """(source, destination) of each bind mount the options in `text` ask for."""
    for m in _MOUNT.finditer(text):
        if m.group(3):  # --mount type=bind,source=...,target=...
            fields = dict(p.split("=", 1) for p in m.group(3).split(",") if "=" in p)
            yield fields.get("source") or fields.get("src") or "", \
                fields.get("target") or fields.get("dst") or fields.get("destination") or ""
            continue
        for item in (m.group(1) or m.group(2)).split(","):
            parts = item.split(":")
            if len(parts) >= 2:
                yield parts[0], parts[1]


def _pip_install_args(words: tuple[str, ...]) -> list[str] | None:
    """The arguments after `install` of a pip / `python -m pip` / `uv pip` command."""
    if not words:
        return None
    name = posixpath.basename(words[0])
    if name in _PIPS:
        rest = list(words[1:])
    elif _PYTHON.match(name) and words[1:3] == ("-m", "pip"):
        rest = list(words[3:])
    elif name == "uv" and words[1:2] == ("pip",):
        rest = list(words[2:])
    else:
        return None
    if "install" not in rest:
        return None
    return rest[rest.index("install") + 1:]


def _pip_packages(args: list[str], last_clone: str) -> list[str]:
    names: list[str] = []
    skip = False
    for tok in args:
        if skip:
            skip = False
            continue
        if tok in _PIP_OPTIONS:
            skip = True
            continue
        if tok.startswith("-"):
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


# --------------------------------------------------------------------------
# Files that are not bash scripts
# --------------------------------------------------------------------------


def diff_effect(diff: str) -> str | None:
    """What a unified diff patches: None when every file it patches is client code."""
    paths = sorted({m.group(1) for m in _DIFF_PATH.finditer(diff) if m.group(1) != "/dev/null"})
    if paths and all(path_target(p) is Target.CLIENT for p in paths):
        return None
    engine = [p for p in paths if path_target(p) is Target.ENGINE]
    return f"patches {engine[0]}" if engine else f"patches {paths[0] if paths else 'files it does not name'}"


def python_file_sites(path: str, text: str) -> list[Site]:
    """A Python file: a startup hook is judged by what it does inside the server; another program when it
    rewrites engine sources or monkey-patches an engine module."""
    base = posixpath.basename(path)
    effect = hook_effect(text) if base in _HOOKS else program_effect(text)
    if effect is None:
        return []
    kind = f"Python startup hook ({base}) that" if base in _HOOKS else "python program that"
    return [Site(path, 1, 1, f"{kind} {effect}")]


# The names a command needs for `ScriptReader._judge` to find a site in it (or a python), the options a mount
# assignment needs; expansions, quotes, escapes and redirections make a line's words more than its text.
_JUDGED = (frozenset({"git", "patch", "sed", "dd", "uv"}) | _SHELLS | _WRITERS | _REMOVERS | set(_FETCHERS)
           | set(_EXTRACTORS) | _PIPS | _CONTAINERS)
_MOUNT_OPTIONS = frozenset({"-v", "--volume", "-B", "--bind", "--container-mounts", "--mount"})  # `_MOUNT`'s
_OPAQUE = re.compile(r"[$`'\"\\>]")
_TOKEN_SEPARATORS = re.compile(r"[\s;&|(){}<=,/]+")


def _may_hold_site(code: str) -> bool:
    """Whether a line read alone can hold a site. Without expansions, quotes, escapes and redirections, every
    word of it is its text between separators, so a command's name (its last `/` part) or a mount option
    is one of the line's tokens: a line none of whose tokens is one `_judge` or `_MOUNT` reads holds none."""
    if _OPAQUE.search(code):
        return True
    return any(t in _JUDGED or t in _MOUNT_OPTIONS or _PYTHON.match(t) for t in _TOKEN_SEPARATORS.split(code))


def line_sites(path: str, lines: list[tuple[int, str]], read: Read) -> list[Site]:
    """Lines read alone as shell commands (a master config's added lines, a Dockerfile's `RUN`s); a line that
    cannot hold a site (`_may_hold_site`: most of a master config's) is not parsed."""
    sites: list[Site] = []
    alone: dict[str, list[Site]] = {}  # code -> its sites as line 1: a master config repeats its lines
    for n, raw in lines:
        code = line_code(raw)
        if not code.strip():
            continue
        if code not in alone:
            alone[code] = ScriptReader(path, Script(code), read, MAX_DEPTH).sites().sites if _may_hold_site(code) else []
        sites += [replace(site, line=site.line + n - 1, end=site.end + n - 1) for site in alone[code]]
    return sites
