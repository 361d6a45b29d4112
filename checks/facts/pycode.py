"""Reading a Python program (a script, a heredoc fed to python, a `python -c` string) for what it does.

Checks judge an inline or repository Python program by its effects, not its
name: which modules it imports, whose installed files it locates
(`find_spec("vllm")`, `sglang.__file__`, `inspect.getfile(...)`), whether it
writes files (`open(p, "w")`, `Path.write_text`, `shutil.copy`, `os.replace`,
...), and which imported modules it monkey-patches (assigns attributes of, or
`setattr`s). The program is parsed with Python's own `ast`, never run. Text
that is not valid Python (a heredoc whose shell variables were left
unexpanded, a fragment) is read with patterns instead, and says so
(`parsed=False`).
"""

from __future__ import annotations

import ast
import re
from dataclasses import dataclass

from checks import memo

MAX_SOURCE = 1_000_000  # characters parsed; beyond it the program is read with patterns

# (receiver, method) calls that write, move or remove files; receiver "*": any object, "path": a Path object.
_WRITES = {
    "shutil": frozenset({"copy", "copy2", "copyfile", "copytree", "move", "rmtree"}),
    "os": frozenset({"replace", "rename", "remove", "unlink", "symlink", "truncate"}),
    "*": frozenset({"write_text", "write_bytes"}),
    "path": frozenset({"replace", "rename", "unlink", "symlink_to", "touch", "open"}),
}
_IMPORT_RE = re.compile(r"^[ \t\f]*+(?:from\s++([\w.]++)\s++import|import\s++([\w.]++))", re.M)
_SPEC_RE = re.compile(r"""(?:find_spec|import_module|__import__)\(\s*["']([\w.]+)["']""")
_FILE_RE = re.compile(r"\b([A-Za-z_]\w*)\.__(?:file|path)__")
# Writes, by pattern: `open(` with a write mode before its `)` (`_writes`), or a writing call.
_OPEN = re.compile(r"open\(")
_OPEN_MODE = re.compile(r"[\"'][wa]b?\+?[\"']")
_WRITE_RE = re.compile(r"\.write_text\(|\.write_bytes\(|shutil\.(?:copy|move)|os\.replace\(|os\.rename\(")
_PATHISH = re.compile(r"[^\s\"']{0,300}(?:/|site-packages|dist-packages)[^\s\"']{0,300}")  # one path, no spaces


@dataclass(frozen=True)
class PyFacts:
    parsed: bool  # read by `ast` (True) or by patterns (False)
    imports: frozenset[str]  # modules imported or loaded by name (dotted, as written)
    locates: frozenset[str]  # modules whose installed files it locates
    writes: bool  # whether it writes, moves or removes files
    patches: frozenset[str]  # modules whose attributes it assigns (monkey-patching), dotted to the attribute's owner
    strings: tuple[str, ...]  # string constants that look like paths


@memo.reading(maxsize=256)
def read(source: str) -> PyFacts:
    """What the program `source` imports, locates, writes and monkey-patches."""
    if len(source) <= MAX_SOURCE:
        try:
            tree = ast.parse(source)
        except (SyntaxError, ValueError, RecursionError, MemoryError):
            tree = None
        if tree is not None:
            return _Reader().facts(tree)
    return _by_patterns(source)


class _Reader(ast.NodeVisitor):
    def __init__(self) -> None:
        self.bound: dict[str, str] = {}  # local name -> the module (or module member) it stands for
        self.imports: set[str] = set()
        self.locates: set[str] = set()
        self.patches: set[str] = set()
        self.strings: list[str] = []
        self.writes = False

    def facts(self, tree: ast.AST) -> PyFacts:
        nodes = list(ast.walk(tree))
        for node in nodes:  # names first: a patch may be assigned before the import it relies on is seen
            if isinstance(node, ast.Import):
                for alias in node.names:
                    self.imports.add(alias.name)
                    if alias.asname:
                        self.bound[alias.asname] = alias.name
                    else:
                        root = alias.name.split(".", 1)[0]
                        self.bound[root] = root
            elif isinstance(node, ast.ImportFrom) and node.module and not node.level:
                self.imports.add(node.module)
                for alias in node.names:
                    self.bound[alias.asname or alias.name] = f"{node.module}.{alias.name}"
        for node in nodes:
            if isinstance(node, ast.Call):
                self._call(node)
            elif isinstance(node, ast.Attribute) and node.attr in ("__file__", "__path__"):
                owner = self._dotted(node.value)
                if owner:
                    self.locates.add(owner)
            elif isinstance(node, (ast.Assign, ast.AugAssign, ast.AnnAssign)):
                targets = node.targets if isinstance(node, ast.Assign) else [node.target]
                for target in targets:
                    if isinstance(target, ast.Attribute):
                        owner = self._dotted(target.value)
                        if owner:
                            self.patches.add(owner)
            elif isinstance(node, ast.Constant) and isinstance(node.value, str) and _PATHISH.fullmatch(node.value):
                self.strings.append(node.value)
        return PyFacts(True, frozenset(self.imports), frozenset(self.locates), self.writes,
                       frozenset(self.patches), tuple(self.strings))

    def _dotted(self, node: ast.AST) -> str | None:
        """The dotted module path a name or attribute chain stands for (`v.layers` after `import vllm as v`:
        vllm.layers), if its root is an imported name."""
        attrs: list[str] = []
        while isinstance(node, ast.Attribute):
            attrs.append(node.attr)
            node = node.value
        if not isinstance(node, ast.Name) or node.id not in self.bound:
            return None
        return ".".join([self.bound[node.id], *reversed(attrs)])

    def _call(self, node: ast.Call) -> None:
        func = node.func
        name = func.attr if isinstance(func, ast.Attribute) else func.id if isinstance(func, ast.Name) else ""
        first = node.args[0] if node.args else None
        literal = first.value if isinstance(first, ast.Constant) and isinstance(first.value, str) else None
        if name in ("find_spec", "import_module", "__import__") and literal:
            self.imports.add(literal)
            if name == "find_spec":
                self.locates.add(literal)
        elif name in ("getfile", "getsourcefile", "getmodule") and first is not None:
            owner = self._dotted(first)
            if owner:
                self.locates.add(owner)
        elif name == "setattr" and first is not None:
            owner = self._dotted(first)
            if owner:
                self.patches.add(owner)
        elif name == "open" and _opens_for_writing(node):
            self.writes = True
        elif isinstance(func, ast.Attribute):
            receiver = _base_name(func.value)
            self.writes |= (name in _WRITES.get(receiver, ()) or name in _WRITES["*"]
                            or (_is_path_object(func.value) and name in _WRITES["path"]
                                and (name != "open" or _opens_for_writing(node, mode_at=0))))


def _base_name(node: ast.AST) -> str:
    return node.id if isinstance(node, ast.Name) else ""


def _is_path_object(node: ast.AST) -> bool:
    """`Path(...)` / `pathlib.Path(...)` / a name ending in path, as the receiver of `.replace` / `.unlink`."""
    if isinstance(node, ast.Call):
        func = node.func
        return (isinstance(func, ast.Name) and func.id == "Path") or (isinstance(func, ast.Attribute) and func.attr == "Path")
    return isinstance(node, ast.Name) and node.id.lower().endswith(("path", "file"))


def _opens_for_writing(node: ast.Call, mode_at: int = 1) -> bool:
    mode = node.args[mode_at] if len(node.args) > mode_at else next(
        (k.value for k in node.keywords if k.arg == "mode"), None)
    return isinstance(mode, ast.Constant) and isinstance(mode.value, str) and bool(set(mode.value) & set("wax+"))


def _writes(source: str) -> bool:
    """Whether `source` opens a file for writing (a write mode between `open(` and the next `)`) or calls a
    writing function. Each `)` closes the search of the first `open(` before it only: the later ones before
    the same `)` would search a part of the same text (`open(` a hundred thousand times cost its square)."""
    if _WRITE_RE.search(source):
        return True
    done = -1
    for m in _OPEN.finditer(source):
        if m.start() < done:
            continue
        done = source.find(")", m.end()) % (len(source) + 1)
        if _OPEN_MODE.search(source, m.end(), done):
            return True
    return False


def _by_patterns(source: str) -> PyFacts:
    imports = {m.group(1) or m.group(2) for m in _IMPORT_RE.finditer(source)}
    specs = {m.group(1) for m in _SPEC_RE.finditer(source)}
    files = {m.group(1) for m in _FILE_RE.finditer(source)} & {name.split(".", 1)[0] for name in imports | specs}
    strings = tuple(m.group(1) for m in re.finditer(r"[\"'](" + _PATHISH.pattern + r")[\"']", source))
    return PyFacts(False, frozenset(imports | specs), frozenset(specs | files), _writes(source),
                   frozenset(), strings)
