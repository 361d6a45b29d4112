"""A model's config.json: which fields define its architecture, and which keys a program's edit changes.

Check 8 judges an edit of a checkpoint's config.json by the keys it changes,
read from the program that does it, never run: an architecture field changes
the model's FLOPs, metadata and the native long-context modes do not, and an
edit whose keys cannot be read is undecidable.
"""

from __future__ import annotations

import ast
import re
from dataclasses import dataclass

# Long-context RoPE scaling the models document and serve in production: a native mode, not a hack.
NATIVE_MODE_KEYS = frozenset({
    "max_position_embeddings", "rope_scaling", "rope_parameters", "rope_type", "type", "factor",
    "original_max_position_embeddings", "beta_fast", "beta_slow", "mscale", "mscale_all_dim",
})

# Architecture fields a recipe or script may set directly (check 8 flags them wherever they are added).
ARCH_FIELDS = ("num_hidden_layers", "num_layers", "n_routed_experts", "num_experts", "num_experts_per_tok",
               "moe_topk", "n_shared_experts", "num_attention_heads", "num_key_value_heads",
               "first_k_dense_replace", "index_topk", "index_topk_freq", "use_index_cache", "index_n_heads",
               "topk_group", "n_group")

# Fields that define the computation (layers, experts, heads, widths, attention pattern, the sparse indexer):
# changing one changes the model's FLOPs.
ARCH_CONFIG_KEYS = frozenset(ARCH_FIELDS) | frozenset({
    "hidden_size", "intermediate_size", "moe_intermediate_size", "shared_expert_intermediate_size", "head_dim",
    "qk_nope_head_dim", "qk_rope_head_dim", "v_head_dim", "kv_lora_rank", "q_lora_rank", "num_local_experts",
    "num_nextn_predict_layers", "moe_layer_freq", "decoder_sparse_step", "mlp_only_layers", "layer_types",
    "sliding_window", "use_sliding_window", "max_window_layers", "index_head_dim", "vocab_size",
    "num_key_value_groups", "n_layer", "n_head", "n_embd",
})
# Fields that name or label the checkpoint without changing what it computes: the model class and type it is
# loaded as (an alias of the same architecture), remote-code mapping, provenance, special-token ids.
METADATA_CONFIG_KEYS = frozenset({"architectures", "model_type", "auto_map", "_name_or_path", "name_or_path",
                                  "transformers_version"})
_TOKEN_ID_KEY = re.compile(r"^(?!num_)(?!.*_per_)[a-z]+(?:_[a-z]+)*_token(?:_ids?)?$")

_JSON_LOADERS = frozenset({"load", "loads"})  # json.load / json.loads
_CONFIG_LOADERS = frozenset({"from_pretrained", "from_json_file", "get_config_dict"})  # transformers' configs
_CONFIG_DUMPERS = frozenset({"dump", "dumps"})
_CONFIG_SAVERS = frozenset({"save_pretrained", "to_json_file"})
_CONFIG_READS = frozenset({"get", "keys", "items", "values", "copy", "to_dict", "to_json_string"})
_CONFIG_WRITES = frozenset({"update", "setdefault", "pop", "popitem", "clear", "__setitem__", "__delitem__"})
_SAFE_CALLS = frozenset({"print", "len", "isinstance", "bool", "str", "repr", "sorted", "list", "dict", "set",
                         "tuple", "type", "id", "hash"})
_SED_KEY = re.compile(r"[\"'](\w+)[\"']\s*:")
_JQ_KEY = re.compile(r"(?:^|[\s|(;,'\"])\.([A-Za-z_]\w*)(?:\.[A-Za-z_]\w*|\[[^\]]*\])*\s*(?:\|=|\+=|-=|\*=|/=|=(?!=))"
                     r"|\bdel\(\s*\.([A-Za-z_]\w*)")


def classify_keys(keys: set[str]) -> tuple[list[str], list[str]]:
    """(architecture keys, keys neither architecture nor metadata) among the config.json keys an edit changes.

    Architecture fields are checked first, so a field that merely ends in "_token" is never taken for a token id.
    """
    arch = sorted(k for k in keys if k.lower() in ARCH_CONFIG_KEYS)
    unknown = sorted(k for k in keys if k.lower() not in ARCH_CONFIG_KEYS and not _is_metadata(k))
    return arch, unknown


def _is_metadata(key: str) -> bool:
    key = key.lower()
    return key in METADATA_CONFIG_KEYS or key in NATIVE_MODE_KEYS or bool(_TOKEN_ID_KEY.match(key))


@dataclass
class ConfigEdits:
    """What a program does to the config.json it writes: the keys it changes, or why that cannot be read."""

    keys: set[str]
    undecided: str = ""  # why the changed keys cannot be read ("" when they can)


def python_config_edits(source: str) -> ConfigEdits:
    """The config keys a Python program changes before writing its config back, read from its syntax tree.

    A config is a name bound to `json.load(s)` / `*.from_pretrained` / `*.from_json_file` (or to another such
    name). It may be read (`c[k]`, `c.get`, `c.items()`, `k in c`), changed at constant keys (`c["k"] = v`,
    `c["k"]["j"] = v`, `c.setdefault("k", ...)`, `c.update({"k": v})` / `c.update(k=v)`, `c.pop("k")`,
    `del c["k"]`, `c.k = v`) and written (`json.dump(s)(c, ...)`, `c.save_pretrained`, `c.to_json_file`).
    Anything else is undecidable: a key computed at run time, an update from a non-literal mapping, the config
    handed to another function, or a file written from something that is not a loaded config.
    """
    try:
        tree = ast.parse(source)
    except (SyntaxError, ValueError, RecursionError, MemoryError):
        return ConfigEdits(set(), "the program does not parse as Python")
    parents: dict[int, ast.AST] = {}
    for node in ast.walk(tree):
        for child in ast.iter_child_nodes(node):
            parents[id(child)] = node
    configs = _config_names(tree)
    edits = ConfigEdits(set())
    wrote = False
    for node in ast.walk(tree):
        if isinstance(node, ast.Call) and _is_dump(node):
            target = node.args[0] if node.args else None
            if not (isinstance(target, ast.Name) and target.id in configs):
                return ConfigEdits(set(), "it writes JSON that is not a config read from the checkpoint")
            wrote = True
        if not (isinstance(node, ast.Name) and node.id in configs):
            continue
        why = _use(node, parents, configs, edits.keys)
        if why:
            return ConfigEdits(set(), why)
        wrote = wrote or _is_save(node, parents)
    if not wrote:
        return ConfigEdits(set(), "it writes config.json without dumping a config it read (cannot tell what changes)")
    return edits


def _config_names(tree: ast.AST) -> set[str]:
    names: set[str] = set()
    for _ in range(4):  # aliases of aliases (`d = c`), a few deep
        for node in ast.walk(tree):
            if not isinstance(node, ast.Assign) or len(node.targets) != 1 or not isinstance(node.targets[0], ast.Name):
                continue
            value = node.value
            if _is_load(value) or (isinstance(value, ast.Name) and value.id in names):
                names.add(node.targets[0].id)
    return names


def _call_name(call: ast.Call) -> str:
    func = call.func
    return func.attr if isinstance(func, ast.Attribute) else func.id if isinstance(func, ast.Name) else ""


def _is_json(call: ast.Call, names: frozenset[str]) -> bool:
    """`json.<one of names>(...)`."""
    func = call.func
    return (isinstance(func, ast.Attribute) and func.attr in names and isinstance(func.value, ast.Name)
            and func.value.id == "json")


def _is_load(node: ast.AST) -> bool:
    """A call that reads a config: `json.load(s)(...)`, `*.from_pretrained(...)`, `*.from_json_file(...)`."""
    return isinstance(node, ast.Call) and (_is_json(node, _JSON_LOADERS) or _call_name(node) in _CONFIG_LOADERS)


def _is_dump(call: ast.Call) -> bool:
    return _is_json(call, _CONFIG_DUMPERS)


def _is_save(name: ast.Name, parents: dict[int, ast.AST]) -> bool:
    parent = parents.get(id(name))
    return isinstance(parent, ast.Attribute) and parent.attr in _CONFIG_SAVERS


def _constant_key(node: ast.AST | None) -> str | None:
    return node.value if isinstance(node, ast.Constant) and isinstance(node.value, str) else None


def _use(name: ast.Name, parents: dict[int, ast.AST], configs: set[str], keys: set[str]) -> str:
    """Record the keys one use of a config name changes; why it is undecidable, or ""."""
    parent = parents.get(id(name))
    if isinstance(parent, ast.Subscript) and parent.value is name:
        key = _constant_key(parent.slice)
        outer: ast.Subscript = parent
        while isinstance(up := parents.get(id(outer)), ast.Subscript) and up.value is outer:
            outer = up
        above = parents.get(id(outer))
        if (isinstance(outer.ctx, (ast.Store, ast.Del)) or isinstance(above, ast.AugAssign)
                or (isinstance(above, ast.Attribute) and above.attr in _CONFIG_WRITES)):
            if key is None:
                return f"it changes {name.id}[...] at a key computed at run time"
            keys.add(key)
        return ""
    if isinstance(parent, ast.Attribute) and parent.value is name:
        if isinstance(parent.ctx, (ast.Store, ast.Del)):
            keys.add(parent.attr)
            return ""
        if parent.attr in _CONFIG_WRITES:
            return _method(parent, parents, name.id, keys)
        if parent.attr in _CONFIG_READS or parent.attr in _CONFIG_SAVERS:
            return ""
        return f"it calls {name.id}.{parent.attr}(...), which may change it"
    if isinstance(parent, ast.Assign) and parent.value is name:
        return ""  # an alias: `_config_names` follows it
    if isinstance(parent, ast.Assign):  # (re)bound: to a loaded config or an alias, else to something else
        value = parent.value
        if _is_load(value) or (isinstance(value, ast.Name) and value.id in configs):
            return ""
        return f"it rebinds {name.id} to another value before writing"
    if isinstance(parent, ast.AugAssign):
        return f"it changes {name.id} with an augmented assignment"
    if isinstance(parent, ast.Call) and name in parent.args:
        if _is_dump(parent) or _call_name(parent) in _SAFE_CALLS:
            return ""
        return f"it passes {name.id} to {_call_name(parent) or 'a function'}(...), which may change it"
    if isinstance(parent, ast.keyword):
        return f"it passes {name.id} to a function, which may change it"
    return ""


def _method(attr: ast.Attribute, parents: dict[int, ast.AST], owner: str, keys: set[str]) -> str:
    """Keys a mutating method call (`update`, `setdefault`, `pop`, ...) on a config changes."""
    call = parents.get(id(attr))
    if not isinstance(call, ast.Call) or call.func is not attr:
        return f"it takes {owner}.{attr.attr} without calling it"
    if attr.attr == "update":
        found = [kw.arg for kw in call.keywords]
        for arg in call.args:
            if not isinstance(arg, ast.Dict):
                return f"it updates {owner} from a mapping computed at run time"
            found += [_constant_key(k) for k in arg.keys]
        if any(k is None for k in found):
            return f"it updates {owner} at a key computed at run time"
        keys.update(k for k in found if k is not None)  # (every one is, as just checked)
        return ""
    if attr.attr in ("popitem", "clear"):
        return f"it calls {owner}.{attr.attr}(), which changes keys it does not name"
    key = _constant_key(call.args[0]) if call.args else None
    if key is None:
        return f"it calls {owner}.{attr.attr}(...) at a key computed at run time"
    keys.add(key)
    return ""


def shell_config_edits(code: str) -> ConfigEdits:
    """The config keys one shell command editing config.json changes: a `jq` filter's assigned and deleted
    paths, a `sed` expression's quoted JSON keys; a copy, move, tee or redirect replaces the file wholesale."""
    if re.search(r"\bjq\b", code):
        keys = {a or b for a, b in _JQ_KEY.findall(code)}
        return ConfigEdits(keys) if keys else ConfigEdits(set(), "the jq filter's changed keys cannot be read")
    if re.search(r"\bsed\b", code):
        keys = set(_SED_KEY.findall(code))
        return ConfigEdits(keys) if keys else ConfigEdits(set(), "the sed expression names no JSON key")
    return ConfigEdits(set(), "it replaces the file wholesale (cp, mv, tee or a redirect), so which fields "
                               "change cannot be read from the PR")
