"""Rewrites of a speculative-decoding config: functions from a snapshot to a new snapshot.

A config's speculative literals (`sites`) are found in its text by what the engines read: the acceptance
target (`al`: vLLM `synthetic_acceptance_length`, `SGLANG_SIMULATE_ACC_LEN`, TRT-LLM
`TLLM_SPEC_DECODE_FORCE_NUM_ACCEPTED_TOKENS`, ATOM `--spec-decode-acceptance-length`, or a shell variable
named for it) and the draft length (`dl`: `num_speculative_tokens`, `--speculative-num-steps`,
`--num-speculative-tokens`, `max_draft_len`, `num_nextn_predict_layers`, or a shell variable named for it).
In a script, where a literal stands is read with tree-sitter-bash (a comment, a single- or double-quoted
string, a heredoc, a plain word) and so is the statement holding it, so that a rewrite does what bash
would do with it:

- a value moved into a variable is assigned just before the statement that uses it (same scope);
- a value expanded inside single quotes closes and reopens them (`'..."'"${X}"'"...'`);
- a sourced file is at the path the script sources (`"$(dirname "$0")/<relative path>"`, sourced on the
  script's second line, before anything could change the working directory);
- a `case` arm is keyed by a variable the launcher gives every config (PRECISION), with the config's value;
- a master setting is added to every search-space point of the changed entries that run the script.

Each kind comes both ways: `preserve` (bash and the engine run exactly what they ran) and `violate` (the
same rewrite carrying a violation: the target 0.05 off, unless the kind says otherwise).
"""

from __future__ import annotations

import posixpath
import re
from dataclasses import dataclass, replace
from typing import Callable

import tree_sitter_bash
import yaml
from tree_sitter import Language, Node, Parser

from app.offline.world import unified_patch
from checks.snapshot import ChangedFile, Snapshot, frozen_map

_PARSER = Parser(Language(tree_sitter_bash.language()))
NUM = r"(?P<v>\d+(?:\.\d+)?)"
INT = r"(?P<v>\d+)"
AL_PATTERNS = (
    rf"SGLANG_SIMULATE_ACC_LEN\s*[=:]\s*[\"']?{NUM}",
    rf"TLLM_SPEC_DECODE_FORCE_NUM_ACCEPTED_TOKENS\s*[=:]\s*[\"']?{NUM}",
    rf"synthetic_acceptance_length\\*[\"']?\s*:\s*{NUM}",
    rf"--spec-decode-acceptance-length[= ][\"']?{NUM}",
    r"(?m)^[ \t]*(?:export[ \t]+|local[ \t]+)?[A-Z_]*(?:ACCEPT|ACC_LEN)[A-Z_]*=[\"']?(?P<v>\d+\.\d+)",
)
DL_PATTERNS = (
    rf"num_speculative_tokens\\*[\"']?\s*:\s*{INT}",
    rf"--speculative-num-steps[= ][\"']?{INT}",
    rf"\bspeculative-num-steps:\s*[\"']?{INT}",
    rf"--num-speculative-tokens[= ][\"']?{INT}",
    rf"\b(?:num_nextn_predict_layers|max_draft_len)\s*:\s*{INT}",
    rf"(?m)^[ \t]*(?:export[ \t]+|local[ \t]+)?(?!TLLM_)(?:[A-Z_]*SPEC[A-Z_]*TOKENS|[A-Z_]*NUM_STEPS|MTP_LAYERS?|NUM_MTP)"
    rf"=[\"']?{INT}(?![\d.])",
)
DRAFT_TOKENS = (rf"--speculative-num-draft-tokens[= ][\"']?{INT}", rf"\bspeculative-num-draft-tokens:\s*[\"']?{INT}")
SWITCHES = (  # (pattern, replacement): what turns simulated acceptance off, per engine spelling
    (r",\s*\\*\"rejection_sample_method\\*\"\s*:\s*\\*\"synthetic\\*\"", ""),
    (r"\\*\"rejection_sample_method\\*\"\s*:\s*\\*\"synthetic\\*\"\s*,\s*", ""),
)
PRECISIONS = ("fp4", "fp8", "bf16", "fp16", "mxfp4", "nvfp4", "int4", "int8")
ENGINE_PATHS = {  # an installed engine file a patch site writes (the image's Python installation)
    "vllm": "/usr/local/lib/python3.12/dist-packages/vllm/envs.py",
    "sglang": "/sgl-workspace/sglang/python/sglang/srt/server_args.py",
    "trtllm": "/usr/local/lib/python3.12/dist-packages/tensorrt_llm/llmapi/llm_args.py",
    "atom": "/usr/local/lib/python3.12/dist-packages/atom/config.py",
}


class Skip(Exception):
    """The rewrite cannot apply to this config (why)."""


@dataclass(frozen=True)
class Site:
    what: str  # al | dl | dt (SGLang's draft tokens, which follow the draft length)
    start: int  # character offsets of the literal in the text
    end: int
    value: str
    quoting: str  # word | double | single | yaml | json-yaml
    stmt: tuple[int, int] | None  # bash: character span of the whole lines of the statement holding it


@dataclass(frozen=True)
class Target:
    """What a rewrite works on: one changed file of a PR's snapshot, and the facts of its config."""

    snapshot: Snapshot
    path: str
    engine: str
    agentic: bool
    env: dict[str, str]
    refs: tuple[str, ...]

    @property
    def text(self) -> str:
        f = self.snapshot.changed(self.path)
        assert f is not None and f.head_text is not None
        return f.head_text

    @property
    def is_script(self) -> bool:
        return self.path.endswith(".sh")


@dataclass(frozen=True)
class Variant:
    snapshot: Snapshot
    touched: tuple[str, ...]  # files the rewrite wrote: a violation must be named on one of them
    row: str  # the row a violation must FAIL ("" for a preserving rewrite)


# --------------------------------------------------------------------------
# Reading a config's literals
# --------------------------------------------------------------------------


def _context(text: str) -> tuple[Node, bytes]:
    data = text.encode()
    return _PARSER.parse(data).root_node, data


_CONTAINERS = {"program", "compound_statement", "do_group", "else_clause", "elif_clause", "if_statement",
               "case_item", "subshell", "function_definition"}


def _bash_site(text: str, root: Node, data: bytes, start: int, end: int, what: str, value: str) -> Site | None:
    b0, b1 = len(text[:start].encode()), len(text[:end].encode())
    node = root.descendant_for_byte_range(b0, b1)
    quoting = "word"
    chain = []
    while node is not None:
        chain.append(node)
        node = node.parent
    for n in chain:
        if n.type == "comment":
            return None
        if n.type in ("heredoc_body", "heredoc_redirect", "ansi_c_string"):
            return None
        if n.type == "raw_string":
            quoting = "single"
            break
        if n.type in ("string", "translated_string"):
            quoting = "double"
            break
        if n.type == "command_substitution":
            break
    stmt = None
    for i, n in enumerate(chain[:-1]):
        parent = chain[i + 1]
        if parent.type not in _CONTAINERS or parent.type == "function_definition":
            continue
        if n.type in ("then", "fi", "else", "elif", "do", "done", "{", "}", "(", ")", ";;", "in", "esac"):
            continue
        field = None
        for j in range(parent.child_count):
            if parent.children[j].id == n.id:
                field = parent.field_name_for_child(j)
        if field in ("condition", "value"):
            continue
        if n.type in ("comment", "word", "extglob_pattern"):
            continue
        s = len(data[:n.start_byte].decode())
        e = len(data[:n.end_byte].decode())
        ls = text.rfind("\n", 0, s) + 1
        le = text.find("\n", e)
        le = len(text) if le < 0 else le
        if text[ls:s].strip() or text[e:le].strip():
            stmt = None
        else:
            stmt = (ls, le)
        break
    return Site(what, start, end, value, quoting, stmt)


def _yaml_comment(text: str, start: int) -> bool:
    ls = text.rfind("\n", 0, start) + 1
    before = text[ls:start]
    return before.lstrip().startswith("#") or " #" in before


def sites(path: str, text: str) -> list[Site]:
    """The speculative literals of a script or recipe, in the order of the text (comments left out)."""
    found: list[tuple[int, int, str, str, str]] = []
    for what, patterns in (("al", AL_PATTERNS), ("dl", DL_PATTERNS), ("dt", DRAFT_TOKENS)):
        for p in patterns:
            for m in re.finditer(p, text):
                found.append((m.start("v"), m.end("v"), what, m.group("v"), m.group(0)))
    found.sort()
    out: list[Site] = []
    script = path.endswith(".sh")
    root, data = _context(text) if script else (None, b"")
    last = -1
    for start, end, what, value, whole in found:
        if start < last:
            continue  # two patterns on one literal
        last = end
        if script:
            site = _bash_site(text, root, data, start, end, what, value)
        else:
            if _yaml_comment(text, start):
                continue
            quoting = "json-yaml" if '"' in whole.split(":")[0] or re.search(r"[{,]\s*\"?[a-z_]+\"?\s*:\s*\d",
                                                                            _line_of(text, start)) else "yaml"
            site = Site(what, start, end, value, quoting, None)
        if site is not None:
            out.append(site)
    return out


def _line_of(text: str, pos: int) -> str:
    ls = text.rfind("\n", 0, pos) + 1
    le = text.find("\n", pos)
    return text[ls:le if le >= 0 else len(text)]


def line_no(text: str, pos: int) -> int:
    return text.count("\n", 0, pos) + 1


# --------------------------------------------------------------------------
# Building the rewritten snapshot
# --------------------------------------------------------------------------


def with_files(snap: Snapshot, files: dict[str, str], base: dict[str, str] | None = None) -> Snapshot:
    """`snap` with `files` (path -> head text) written by the PR, and `base` (path -> base text) as the base
    branch had them; patches recomputed as GitHub would show them."""
    base = base or {}
    changed = {f.path: f for f in snap.files}
    for path, head in files.items():
        old = changed.get(path)
        if old is not None:
            base_text = base.get(path, old.base_text)
        elif path in snap.master_base:
            base_text = base.get(path, snap.master_base[path])
        else:
            base_text = base.get(path)
        patch, _a, _d = unified_patch(base_text.encode() if base_text is not None else None, head.encode())
        status = "added" if base_text is None else "modified"
        changed[path] = ChangedFile(path, status, None, patch, base_text, head)
    master = {p: files.get(p, t) for p, t in snap.master_head.items()}
    return replace(snap, files=tuple(changed[p] for p in sorted(changed)), master_head=frozen_map(master))


def splice(text: str, edits: list[tuple[int, int, str]]) -> str:
    """`text` with each (start, end) span replaced, the spans not overlapping."""
    out, at = [], 0
    for s, e, new in sorted(edits):
        assert s >= at, "overlapping edits"
        out.append(text[at:s])
        out.append(new)
        at = e
    out.append(text[at:])
    return "".join(out)


def shifted(value: str, what: str, violate: bool) -> str:
    """The value a rewrite writes: the same, or (violate) the acceptance target 0.05 too high."""
    if not violate:
        return value
    if what != "al":
        raise Skip("no acceptance target to move off")
    return f"{float(value) + 0.05:.2f}"


def other(value: str, what: str) -> str:
    """A different, plausible value (another arm's, an eval run's)."""
    return f"{float(value) + 1.0:.2f}" if what == "al" else str(int(value) + 1)


def chosen(t: Target, violate: bool) -> list[Site]:
    """The literals a value-moving rewrite moves: the acceptance targets (the draft lengths when the config pins
    no target and the rewrite preserves)."""
    all_sites = sites(t.path, t.text)
    al = [s for s in all_sites if s.what == "al"]
    if al:
        return al
    if violate:
        raise Skip("no acceptance target")
    dl = [s for s in all_sites if s.what == "dl"]
    if not dl:
        raise Skip("no speculative literal")
    return dl


def ref(name: str, quoting: str, expr: str | None = None) -> str:
    """How a script refers to `${name}` (or `expr`, an expansion) where the literal stood."""
    e = expr if expr is not None else "${" + name + "}"
    if quoting == "single":
        return "'\"" + e + "\"'"
    if quoting in ("word", "double"):
        return e
    raise Skip(f"a {quoting} literal cannot hold an expansion")


def _scripts_only(t: Target) -> None:
    if not t.is_script:
        raise Skip("a recipe has no shell variables")


def _indent(text: str, pos: int) -> str:
    line = _line_of(text, pos)
    return line[:len(line) - len(line.lstrip())]


def _pre_statement(t: Target, ss: list[Site], lines_for: Callable[[int, Site], list[str]],
                   expr_for: Callable[[int, Site], str | None] = lambda i, s: None, prefix: str = "MM") -> str:
    """Insert lines before the statement of each site, and replace each literal by a reference."""
    text = t.text
    edits: list[tuple[int, int, str]] = []
    inserts: dict[int, list[str]] = {}
    for i, s in enumerate(ss):
        if s.stmt is None:
            raise Skip("the literal is not in a statement of its own lines")
        name = f"{prefix}_{s.what.upper()}_{i}"
        ind = _indent(text, s.stmt[0])
        inserts.setdefault(s.stmt[0], []).extend(ind + ln for ln in lines_for(i, s))
        edits.append((s.start, s.end, ref(name, s.quoting, expr_for(i, s))))
    for pos, lines in inserts.items():
        edits.append((pos, pos, "\n".join(lines) + "\n"))
    return splice(text, edits)


# --------------------------------------------------------------------------
# The rewrite kinds
# --------------------------------------------------------------------------


def literal(t: Target, violate: bool) -> Variant:
    """The config as it stands (preserve: the harness reads the base as the base), or its target 0.05 off."""
    if not violate:
        return Variant(t.snapshot, (t.path,), "")
    ss = chosen(t, violate)
    text = splice(t.text, [(s.start, s.end, shifted(s.value, s.what, True)) for s in ss])
    return Variant(with_files(t.snapshot, {t.path: text}), (t.path,), "11")


def variable(t: Target, violate: bool) -> Variant:
    """The literal moved into a shell variable assigned just before the statement that uses it; in a recipe,
    a value written twice becomes a YAML anchor and its alias (srt-slurm loads recipes with PyYAML)."""
    if not t.is_script:
        return _anchored(t, violate)
    ss = chosen(t, violate)
    text = _pre_statement(t, ss, lambda i, s: [f"MM_{s.what.upper()}_{i}={shifted(s.value, s.what, violate)}"])
    return Variant(with_files(t.snapshot, {t.path: text}), (t.path,), "11" if violate else "")


def _anchored(t: Target, violate: bool) -> Variant:
    ss = [s for s in chosen(t, violate) if s.quoting == "yaml"]
    text = t.text
    edits = []
    groups: dict[tuple[str, str], list[Site]] = {}
    for s in ss:
        groups.setdefault((s.what, s.value), []).append(s)
    for n, ((what, value), group) in enumerate(sorted(groups.items())):
        if len(group) < 2:
            continue
        for k, s in enumerate(group):
            start, end = s.start, s.end
            if text[start - 1:start] in ("'", '"') and text[end:end + 1] == text[start - 1:start]:
                start, end = start - 1, end + 1
            v = shifted(value, what, violate)
            new = text[start:end].replace(value, v)
            edits.append((start, end, f"&mm_{what}_{n} {new}" if k == 0 else f"*mm_{what}_{n}"))
    if not edits:
        raise Skip("no value a recipe writes twice")
    return Variant(with_files(t.snapshot, {t.path: splice(text, edits)}), (t.path,), "11" if violate else "")


def default(t: Target, violate: bool) -> Variant:
    """The literal as the default of an unset variable: `${MM_AL_0:-3.39}`."""
    _scripts_only(t)
    ss = chosen(t, violate)
    edits = []
    for i, s in enumerate(ss):
        edits.append((s.start, s.end, ref("", s.quoting,
                                          "${" + f"MM_{s.what.upper()}_{i}:-{shifted(s.value, s.what, violate)}" + "}")))
    return Variant(with_files(t.snapshot, {t.path: splice(t.text, edits)}), (t.path,), "11" if violate else "")


def _precision(t: Target) -> str:
    value = t.env.get("PRECISION")
    if value:
        return value
    fields = posixpath.basename(t.path).split("_")
    if len(fields) > 1 and fields[1] in PRECISIONS:
        return fields[1]
    raise Skip("no config variable known to key a case on")


def case(t: Target, violate: bool) -> Variant:
    """The literal chosen in a `case` arm keyed by the config's PRECISION (which the launcher exports); the
    other arm holds another value."""
    _scripts_only(t)
    key = _precision(t)
    ss = chosen(t, violate)

    def lines(i: int, s: Site) -> list[str]:
        name = f"MM_{s.what.upper()}_{i}"
        return ['case "${PRECISION}" in', f"    {key}) {name}={shifted(s.value, s.what, violate)} ;;",
                f"    *) {name}={other(s.value, s.what)} ;;", "esac"]

    text = _pre_statement(t, ss, lines)
    return Variant(with_files(t.snapshot, {t.path: text}), (t.path,), "11" if violate else "")


def sourced(t: Target, violate: bool) -> Variant:
    """The literal set in a new library the script sources (`source "$(dirname "$0")/../../spec_targets/X.sh"`)."""
    _scripts_only(t)
    ss = chosen(t, violate)
    for s in ss:
        ref("", s.quoting, "")  # a literal no expansion can replace
    stem = posixpath.splitext(posixpath.basename(t.path))[0]
    lib = f"benchmarks/spec_targets/{stem}.sh"
    rel = posixpath.relpath(lib, posixpath.dirname(t.path))
    body = ["#!/usr/bin/env bash", f"# Speculative-decoding targets of {t.path}."]
    edits = []
    for i, s in enumerate(ss):
        name = f"MM_{s.what.upper()}_{i}"
        body.append(f"{name}={shifted(s.value, s.what, violate)}")
        edits.append((s.start, s.end, ref(name, s.quoting)))
    text = t.text
    first = text.find("\n") + 1 if text.startswith("#!") else 0
    edits.append((first, first, f'source "$(dirname "$0")/{rel}"\n'))
    snap = with_files(t.snapshot, {t.path: splice(text, edits), lib: "\n".join(body) + "\n"})
    return Variant(snap, (t.path, lib), "11" if violate else "")


def master_env(t: Target, violate: bool) -> Variant:
    """The literal set in the master entry's `additional-settings` (the launcher exports them), on every
    search-space point of the changed entries that run the script."""
    _scripts_only(t)
    if not t.refs:
        raise Skip("no changed master entry runs it")
    ss = chosen(t, violate)
    settings = [f"MM_{s.what.upper()}_{i}={shifted(s.value, s.what, violate)}" for i, s in enumerate(ss)]
    edits = [(s.start, s.end, ref(f"MM_{s.what.upper()}_{i}", s.quoting)) for i, s in enumerate(ss)]
    files = {t.path: splice(t.text, edits)}
    for key in t.refs:
        path, master = _entry_master(t.snapshot, key)
        files[path] = _add_settings(files.get(path, master), key, settings)
    touched = tuple(files)
    return Variant(with_files(t.snapshot, files), touched, "11" if violate else "")


def _entry_master(snap: Snapshot, key: str) -> tuple[str, str]:
    for path, text in snap.master_head.items():
        if re.search(rf"(?m)^{re.escape(key)}:\s*$", text):
            return path, text
    raise Skip(f"master entry {key} not found")


def _add_settings(text: str, key: str, settings: list[str]) -> str:
    m = re.search(rf"(?m)^{re.escape(key)}:\s*$", text)
    assert m is not None
    end = re.compile(r"(?m)^\S").search(text, m.end() + 1)
    block_end = end.start() if end else len(text)
    block = text[m.end():block_end]
    points = len(re.findall(r"spec-decoding:", block))
    items = ", ".join(f'"{s}"' for s in settings)
    new, count = [], 0
    for line in block.split("\n"):
        flow = re.match(r"^(\s*- \{.*)\}\s*$", line)
        if flow and "spec-decoding" in line:
            if "additional-settings" in line:
                raise Skip("a point's flow mapping has additional-settings already")
            line = f"{flow.group(1).rstrip()}, additional-settings: [{items}] }}"
            count += 1
        new.append(line)
    if count != points or count == 0:
        raise Skip("the entry's points are not all one-line flow mappings")
    return text[:m.end()] + "\n".join(new) + text[block_end:]


def _awk(s: Site, value: str) -> str:
    if s.what == "al":
        return f"$(awk 'BEGIN{{printf \"%.2f\", {float(value) - 1:.2f} + 1}}')"
    return f"$(awk 'BEGIN{{print {int(value) - 1} + 1}}')"


def _printf(s: Site, value: str) -> str:
    return f"$(printf '%.2f' {value})" if s.what == "al" else f"$(printf '%d' {value})"


def _arith(s: Site, value: str) -> str:
    if s.what == "al":
        cents = round(float(value) * 100)
        return f"$(({cents} / 100)).$(({cents} % 100 / 10))$(({cents} % 10))"
    return f"$(({int(value) - 1} + 1))"


def computed(how: Callable[[Site, str], str]) -> Callable[[Target, bool], Variant]:
    def rewrite(t: Target, violate: bool) -> Variant:
        _scripts_only(t)
        ss = chosen(t, violate)
        edits = [(s.start, s.end, ref("", s.quoting, how(s, shifted(s.value, s.what, violate)))) for s in ss]
        return Variant(with_files(t.snapshot, {t.path: splice(t.text, edits)}), (t.path,), "11" if violate else "")
    rewrite.__doc__ = f"The literal computed where it is used ({how.__name__.strip('_')})."
    return rewrite


def requote(t: Target, violate: bool) -> Variant:
    """The literal re-quoted as bash or YAML reads it the same: a word single-quoted; a YAML string value
    quoted the other way, or quoted where it was bare (an environment value or an SGLang flag: both reach the
    engine as strings)."""
    ss = chosen(t, violate)
    edits = []
    text = t.text
    for s in ss:
        v = shifted(s.value, s.what, violate)
        if s.quoting == "word":
            if text[s.start - 1:s.start] in ("'", '"') or text[s.end:s.end + 1] in ("'", '"'):
                raise Skip("the word is quoted already")
            edits.append((s.start, s.end, f"'{v}'"))
        elif s.quoting == "yaml":
            before, after = text[s.start - 1:s.start], text[s.end:s.end + 1]
            if before == "'" and after == "'":
                edits.append((s.start - 1, s.end + 1, f'"{v}"'))
            elif before == '"' and after == '"':
                edits.append((s.start - 1, s.end + 1, f"'{v}'"))
            elif before not in "'\"" and after not in "'\"" and _yaml_string_key(text, s.start):
                edits.append((s.start, s.end, f"'{v}'"))
            else:
                raise Skip("a YAML value whose type quoting would change")
        else:
            raise Skip(f"a {s.quoting} literal cannot be re-quoted alone")
    return Variant(with_files(t.snapshot, {t.path: splice(text, edits)}), (t.path,), "11" if violate else "")


def _yaml_string_key(text: str, pos: int) -> bool:
    key = _line_of(text, pos).split(":", 1)[0].strip()
    return key.startswith(("SGLANG_", "TLLM_", "speculative-"))


def reorder(t: Target, violate: bool) -> Variant:
    """The line holding the literal swapped with its neighbour: two flags of one command or array (each on a
    line of its own, continuation backslashes kept in place), two assignments that do not read each other, or
    two keys of one YAML mapping."""
    ss = chosen(t, violate)
    text = t.text
    lines = text.split("\n")
    starts = [0]
    for ln in lines:
        starts.append(starts[-1] + len(ln) + 1)
    done: set[int] = set()
    for s in ss:
        i = line_no(text, s.start) - 1
        if i in done:
            continue
        j = _neighbour(lines, i, t.is_script)
        if j is None or j in done:
            raise Skip("no neighbouring flag or key to swap with")
        a, b = sorted((i, j))
        if t.is_script:
            ca, ta = _split_cont(lines[a])
            cb, tb = _split_cont(lines[b])
            lines[a], lines[b] = cb + ta, ca + tb
        else:
            lines[a], lines[b] = lines[b], lines[a]
        done |= {a, b}
    new = "\n".join(lines)
    if violate:
        new_sites = [s for s in sites(t.path, new) if s.what == "al"]
        new = splice(new, [(s.start, s.end, shifted(s.value, "al", True)) for s in new_sites])
    return Variant(with_files(t.snapshot, {t.path: new}), (t.path,), "11" if violate else "")


def reflow(t: Target, violate: bool) -> Variant:
    """A one-line command (or array) holding the literal written one flag per line (backslash continuations;
    an array needs none), as bash reads it the same."""
    _scripts_only(t)
    ss = chosen(t, violate)
    text = t.text
    root, data = _context(text)
    edits: list[tuple[int, int, str]] = []
    done: set[int] = set()
    for s in ss:
        b = len(text[:s.start].encode())
        node = root.descendant_for_byte_range(b, b + 1)
        while node is not None and node.type not in ("command", "array"):
            node = node.parent
        if node is None or node.start_point[0] != node.end_point[0]:
            raise Skip("the literal is not in a one-line command or array")
        brk = " \\\n    " if node.type == "command" else "\n    "
        if node.id in done:
            continue
        done.add(node.id)
        for child in node.children[1:]:
            if data[child.start_byte:child.start_byte + 2] == b"--":
                at = len(data[:child.start_byte].decode())
                ws = at
                while ws > 0 and text[ws - 1] in " \t":
                    ws -= 1
                edits.append((ws, at, brk))
    if not edits:
        raise Skip("no flags to put on lines of their own")
    if violate:
        edits += [(s.start, s.end, shifted(s.value, s.what, True)) for s in ss]
    return Variant(with_files(t.snapshot, {t.path: splice(text, edits)}), (t.path,), "11" if violate else "")


def _split_cont(line: str) -> tuple[str, str]:
    m = re.match(r"^(.*?)(\s*\\)$", line)
    return (m.group(1), m.group(2)) if m else (line, "")


_FLAG_LINE = re.compile(r"^\s*--[\w-]+(?:[ =]\S+)?\s*\\?$")
_ASSIGN_LINE = re.compile(r"^\s*(?:export\s+)?([A-Za-z_]\w*)=([^\s;&|`]*)\s*$")
_KEY_LINE = re.compile(r"^(\s*)[\w.-]+:\s*\S.*$")


def _neighbour(lines: list[str], i: int, script: bool) -> int | None:
    if script:
        if _FLAG_LINE.match(lines[i]):
            for j in (i + 1, i - 1):
                if 0 <= j < len(lines) and _FLAG_LINE.match(lines[j]):
                    return j
            return None
        a = _ASSIGN_LINE.match(lines[i])
        for j in (i + 1, i - 1) if a else ():
            b = _ASSIGN_LINE.match(lines[j]) if 0 <= j < len(lines) else None
            if b and a.group(1) != b.group(1) and a.group(1) not in b.group(2) and b.group(1) not in a.group(2):
                return j  # two assignments that do not read each other
        return None
    m = _KEY_LINE.match(lines[i])
    if not m or lines[i].rstrip().endswith(("|", ">")):
        return None
    for j in (i + 1, i - 1):
        if 0 <= j < len(lines):
            n = _KEY_LINE.match(lines[j])
            if n and n.group(1) == m.group(1) and not lines[j].rstrip().endswith(("|", ">", ":")):
                return j
    return None


def eval_twin(t: Target, violate: bool) -> Variant:
    """An eval-only twin with other settings: in a script, the statement holding the literal duplicated into an
    `EVAL_ONLY` arm with another value (violate: that arm is made the throughput arm); a recipe gets a
    `*-eval` twin file with another value (violate: the twin is a throughput recipe)."""
    ss = chosen(t, violate)
    if violate and not t.agentic:
        raise Skip("an eval arm of a non-agentic config carries no violation")
    text = t.text
    if not t.is_script:
        twin_text = splice(text, [(s.start, s.end, other(s.value, s.what)) for s in ss])
        stem, ext = posixpath.splitext(t.path)
        twin = f"{stem}-{'twin' if violate else 'eval'}{ext}"
        snap = with_files(t.snapshot, {twin: twin_text})
        return Variant(snap, (twin,), "11" if violate else "")
    stmts = sorted({s.stmt for s in ss if s.stmt is not None})
    if len(stmts) != len({s.stmt for s in ss}) or any(s.stmt is None for s in ss):
        raise Skip("the literal is not in a statement of its own lines")
    edits = []
    test = '!=' if violate else '='
    for span in stmts:
        body = text[span[0]:span[1]]
        in_stmt = [s for s in ss if s.stmt == span]
        twin = splice(body, [(s.start - span[0], s.end - span[0], other(s.value, s.what)) for s in in_stmt])
        ind = _indent(text, span[0])
        edits.append((span[0], span[1], f'{ind}if [ "${{EVAL_ONLY:-false}}" {test} "true" ]; then\n{twin}\n'
                                        f"{ind}else\n{body}\n{ind}fi"))
    return Variant(with_files(t.snapshot, {t.path: splice(text, edits)}), (t.path,), "11" if violate else "")


RATE_KNOB = re.compile(r"\b\w*(?:ACC(?:EPT(?:ANCE)?)?_RATE|acceptance_rate)\w*\b")


_EVAL_TEST = re.compile(r"(\[\[?\s+)(\"[^\"\n]*EVAL_ONLY[^\"\n]*\"|\$\{?EVAL_ONLY\}?)(\s+)(==|=|!=)(\s+)(\"?true\"?)(\s+\]\]?)")
_OPERATOR = re.compile(r"(?<=\s)(==|=|!=)(?=\s)")


def eval_guard(t: Target, violate: bool) -> Variant:
    """The config's own EVAL_ONLY tests spelled the other way round (`[ "true" = "$EVAL_ONLY" ]`, which bash
    reads the same); violate: the test guarding an acceptance target negated, so that the eval-only arm
    becomes the throughput arm."""
    _scripts_only(t)
    text = t.text
    if not violate:
        new = _EVAL_TEST.sub(lambda m: m.group(1) + m.group(6) + m.group(3) + m.group(4) + m.group(5) + m.group(2)
                             + m.group(7), text)
        if new == text:
            raise Skip("no EVAL_ONLY test")
        return Variant(with_files(t.snapshot, {t.path: new}), (t.path,), "")
    root, data = _context(text)
    guards = set()
    for s in [s for s in sites(t.path, text) if s.what == "al"]:
        node = root.descendant_for_byte_range(len(text[:s.start].encode()), len(text[:s.end].encode()))
        while node is not None:
            if node.type in ("if_statement", "elif_clause"):
                then = next((c for c in node.children if c.type == "then"), None)
                if then is not None and b"EVAL_ONLY" in data[node.start_byte:then.start_byte]:
                    guards.add((node.start_byte, then.start_byte))
                    break
            node = node.parent
    if not guards:
        raise Skip("no acceptance target behind an EVAL_ONLY test")
    edits = []
    for b0, b1 in guards:
        cond = data[b0:b1].decode()
        ops = _OPERATOR.findall(cond)
        if len(ops) != 1:
            raise Skip("an EVAL_ONLY test with several comparisons")
        m = _OPERATOR.search(cond)
        assert m is not None
        start = len(data[:b0].decode()) + m.start()
        edits.append((start, start + len(m.group(0)), "=" if m.group(0) == "!=" else "!="))
    return Variant(with_files(t.snapshot, {t.path: splice(text, edits)}), (t.path,), "11")


def spelling(t: Target, violate: bool) -> Variant:
    """TRT-LLM's forced accepted-token count written as the golden AL minus one, computed where the engine reads
    it (violate: the golden AL written as the count, the off-by-one missed). A rate spelling of the target
    would apply only where the base branch's golden_al_distribution/README.md documents one (`RATE_KNOB`);
    none does in the shared history, which the test asserts."""
    _scripts_only(t)
    text = t.text
    ss = [s for s in sites(t.path, text) if s.what == "al" and "TLLM_SPEC_DECODE_FORCE_NUM_ACCEPTED_TOKENS"
          in _line_of(text, s.start)]
    if not ss:
        raise Skip("no TRT-LLM forced accepted-token count")
    edits = []
    for s in ss:
        golden = float(s.value) + 1
        expr = f"{golden:.2f}" if violate else ref("", s.quoting, f"$(awk 'BEGIN{{printf \"%.2f\", {golden:.2f} - 1}}')")
        edits.append((s.start, s.end, expr))
    return Variant(with_files(t.snapshot, {t.path: splice(text, edits)}), (t.path,), "11" if violate else "")


def switch_removed(t: Target, violate: bool) -> Variant:
    """Simulated acceptance turned off: vLLM's synthetic sampler dropped, or the line pinning SGLang's / TRT-LLM's
    target removed, or ATOM's flag. Violation only (its preserving side is the eval twin)."""
    if not violate:
        raise Skip("a violation only")
    ss = [s for s in sites(t.path, t.text) if s.what == "al"]
    if not ss:
        raise Skip("no acceptance target")
    text = t.text
    new = text
    for pattern, repl in SWITCHES:
        new = re.sub(pattern, repl, new)
    if new == text:
        lines = text.split("\n")
        drop = set()
        for s in ss:
            i = line_no(text, s.start) - 1
            ln = lines[i]
            if re.search(r"SGLANG_SIMULATE_ACC_LEN|TLLM_SPEC_DECODE_FORCE_NUM_ACCEPTED_TOKENS", ln) and (
                    not t.is_script or (s.stmt and line_no(text, s.stmt[0]) == line_no(text, s.stmt[1]))):
                drop.add(i)
            elif "--spec-decode-acceptance-length" in ln:
                lines[i] = re.sub(r"\s*--spec-decode-acceptance-length[= ]\S+", "", ln)
            else:
                raise Skip("the switch is not on a line of its own")
        new = "\n".join(ln for i, ln in enumerate(lines) if i not in drop)
    return Variant(with_files(t.snapshot, {t.path: new}), (t.path,), "11")


def draft_length(t: Target, violate: bool) -> Variant:
    """The draft length changed: violate, without the target (SGLang's draft-token count follows it);
    preserve, with the target moved to the golden curve's value for the new length."""
    all_sites = sites(t.path, t.text)
    dl = [s for s in all_sites if s.what == "dl"]
    al = [s for s in all_sites if s.what == "al"]
    if not dl or not al:
        raise Skip("no draft length beside an acceptance target")
    if len({s.value for s in dl}) != 1:
        raise Skip("several draft lengths")
    n = int(dl[0].value)
    new_n = n + 1 if n < 7 else n - 1
    edits = [(s.start, s.end, str(new_n)) for s in dl]
    edits += [(s.start, s.end, str(int(s.value) + new_n - n)) for s in all_sites if s.what == "dt"]
    if not violate:
        for s in al:
            trt = "TLLM_SPEC_DECODE_FORCE_NUM_ACCEPTED_TOKENS" in _line_of(t.text, s.start)
            golden = float(s.value) + (1 if trt else 0)
            new = _curve_value(t.snapshot, golden, n, new_n)
            edits.append((s.start, s.end, f"{new - (1 if trt else 0):.2f}"))
    return Variant(with_files(t.snapshot, {t.path: splice(t.text, edits)}), (t.path,), "11" if violate else "")


def _curve_value(snap: Snapshot, golden: float, n: int, new_n: int) -> float:
    """The golden AL at `new_n` on the one committed curve (and thinking mode) holding `golden` at `n`."""
    found = set()
    for path, text in snap.policy.items():
        if not (path.startswith("golden_al_distribution/") and path.endswith((".yaml", ".yml"))):
            continue
        try:
            doc = yaml.safe_load(text)
        except yaml.YAMLError:
            continue
        for model in (doc or {}).values() if isinstance(doc, dict) else ():
            for mode in model.values() if isinstance(model, dict) else ():
                if isinstance(mode, dict) and abs(float(mode.get(n, -9)) - golden) < 0.005 and new_n in mode:
                    found.add(float(mode[new_n]))
    if len(found) != 1:
        raise Skip("the golden curve of the config is not known to the test")
    return found.pop()


def patch_site(t: Target, violate: bool) -> Variant:
    """A pre-existing engine patch site (a `sed -i` of an installed engine file, on the base branch already) in
    a branch no config takes (FRAMEWORK is never "mm-none"); violate: the PR makes the branch the one every
    throughput run takes. Check 10's row. Only for a script the PR's master entries run: check 10 counts a
    pre-existing site where a config the PR submits reaches it."""
    _scripts_only(t)
    if not t.refs:
        raise Skip("no master entry runs the script: a site in it is reached by no config either way")
    path = ENGINE_PATHS.get(t.engine)
    if path is None:
        raise Skip("no engine known")
    f = t.snapshot.changed(t.path)
    assert f is not None
    if f.base_text is None:
        raise Skip("an added script has no pre-existing site")
    site = ['if [ "${FRAMEWORK:-}" = "mm-none" ]; then', f"    sed -i 's/^A = 1$/A = 2/' {path}", "fi", ""]
    reach = ['if [ "${EVAL_ONLY:-false}" != "true" ]; then', site[1], "fi", ""]
    base, head = f.base_text, t.text
    bfirst = base.find("\n") + 1 if base.startswith("#!") else 0
    hfirst = head.find("\n") + 1 if head.startswith("#!") else 0
    base_text = base[:bfirst] + "\n".join(site) + base[bfirst:]
    head_text = head[:hfirst] + "\n".join(reach if violate else site) + head[hfirst:]
    snap = with_files(t.snapshot, {t.path: head_text}, {t.path: base_text})
    return Variant(snap, (t.path,), "10" if violate else "")


_CHAT_ON = re.compile(r"^([ \t]+)use_chat_template:[ \t]*(?:true|True|yes|on|1)[ \t]*(?:#.*)?\n", re.M)
_BENCH_TYPE = re.compile(r"^benchmark:[ \t]*\n([ \t]+)type:[ \t]*[\"']?([\w.-]+)[\"']?[ \t]*(?:#.*)?\n", re.M)
CHAT_OFF = ("false", "no", "off", "0")  # how srt-slurm's booleans spell false; a violation takes one in turn


def chat_default(t: Target, violate: bool) -> Variant:
    """A srt-slurm recipe's built-in benchmark with `use_chat_template: true` written out or left to srt-slurm's
    default (true): removed where written, written where left out; violate: set to false (spelled `false`,
    `no`, `off` or `0`, which srt-slurm reads alike). Check 9's row."""
    if t.is_script:
        raise Skip("a script's client flags, not a srt-slurm benchmark block")
    text = t.text
    m = _BENCH_TYPE.search(text)
    if m is None or m.group(2).lower() == "custom":
        raise Skip("no top-level built-in benchmark block")
    on = [x for x in _CHAT_ON.finditer(text) if x.start() > m.start()]
    off = CHAT_OFF[len(t.path) % len(CHAT_OFF)]
    if on:
        x = on[0]
        edit = (x.start(), x.end(), f"{x.group(1)}use_chat_template: {off}\n" if violate else "")
    elif "use_chat_template" in text[m.start():]:
        raise Skip("use_chat_template is written, but not as true")
    else:
        edit = (m.end(), m.end(), f"{m.group(1)}use_chat_template: {off if violate else 'true'}\n")
    return Variant(with_files(t.snapshot, {t.path: splice(text, [edit])}), (t.path,), "9" if violate else "")


KINDS: dict[str, Callable[[Target, bool], Variant]] = {
    "literal": literal,
    "variable": variable,
    "default": default,
    "case": case,
    "sourced": sourced,
    "master-env": master_env,
    "spelling": spelling,
    "awk": computed(_awk),
    "printf": computed(_printf),
    "arith": computed(_arith),
    "requote": requote,
    "reorder": reorder,
    "reflow": reflow,
    "eval-twin": eval_twin,
    "eval-guard": eval_guard,
    "switch-removed": switch_removed,
    "draft-length": draft_length,
    "patch-site": patch_site,
    "chat-default": chat_default,
}
# Kinds that come one way only, and why (the test asserts every other kind both ways).
ONE_WAY = {"switch-removed": "violate"}
# What a violation's FAIL must name: the value the violating rewrite wrote (not merely that it could not
# read one, nor a complaint about something else). Kinds not listed name no single value.
_WRITTEN: dict[str, Callable[[Site], str]] = {
    "eval-twin": lambda s: other(s.value, "al"),
    "spelling": lambda s: f"{float(s.value) + 1:.2f}",
}
_UNNAMED = {"switch-removed", "draft-length", "patch-site", "eval-guard", "chat-default"}


def written(t: Target, kind: str) -> tuple[str, ...]:
    """The acceptance targets a violating rewrite of `kind` writes, one of which its FAIL must name."""
    if kind in _UNNAMED:
        return ()
    how = _WRITTEN.get(kind, lambda s: shifted(s.value, "al", True))
    return tuple(sorted({how(s) for s in sites(t.path, t.text) if s.what == "al"}))
