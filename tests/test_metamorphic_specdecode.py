"""Metamorphic tests of the speculative-decoding reading (issue 25): generality tested, not hoped for.

Every speculative-decoding config the shared InferenceX history's window changes (scripts and srt-slurm
recipes of vLLM, SGLang, TRT-LLM and ATOM, as `checks.facts.specdecode.inventory` finds them on the snapshot
`signoff-bot backtest` builds; one per PR and engine) is rewritten (`tests/metamorphic/rewrites.py`), each
kind both ways:

- preserve: what bash and the engine run is unchanged, so no row may change: the statuses of checks 9,
  10, 11 and recipe lint stay, and so do their reasons, except for line numbers (`path:N`, `line N`), which
  move when a rewrite adds lines (a preserving draft-length change also changes the numbers a row names;
  the lint row of a rewrite that adds a file, an eval twin or a library, keeps its status only: the new
  file is linted like any, and a twin repeats the findings of the recipe it copies);
- violate: the row the violation breaks (11; 10 for a patch site) FAILs, naming a file the rewrite wrote
  with a line (`path:N`), for the violation: a FAIL for what the bot could not read ("cannot read",
  "<not fixed>") is not one, and where the violation wrote a target (0.05 off, an eval arm's, the
  golden AL as TRT-LLM's count) the FAIL names it. Only configs whose base row does not FAIL already are
  rewritten that way.

Every rewritten script must pass `bash -n`. The rows are judged by the engine directly (`checks.engine`,
only the rules of those rows) on the PR's snapshot with the rewritten files, evidence it lacks read from
the cloned bundle as backtest reads it. Four synthetic configs written here (one per engine) are rewritten
the same way, so the suite means something without ../shared, and carry the kinds no config of the
history lends itself to (`HISTORY_GAPS`).

A misread the code cannot fix yet is listed in `XFAIL`, with the row it gives (strict: when a fix lands
the entry turns into an unexpected pass and must go); it is empty: every variant reads right. The history part runs whenever ../shared exists (always
in CI: without it, it fails there).
"""

from __future__ import annotations

import atexit
import os
import re
import shutil
import subprocess
import tempfile
from collections import Counter
from dataclasses import dataclass
from functools import lru_cache
from pathlib import Path

import pytest

from tests.conftest import SHARED_HISTORY, runs_slow
from tests.metamorphic.history import Config, History, clone, rows_of
from tests.metamorphic.rewrites import KINDS, ONE_WAY, RATE_KNOB, Skip, Target, Variant, written

BUNDLE = SHARED_HISTORY / "inferencex.bundle"
pytestmark = pytest.mark.slow  # about a minute on the shared history (still run in CI)
PER_PR = 1  # configs per PR and engine (by path): near-identical recipes of one PR add variants, not coverage
MIN_VARIANTS, MIN_CONFIGS = 300, 25
ENGINES = ("vllm", "sglang", "trtllm", "atom")
WAYS = ("preserve", "violate")
# What no config of the shared history lends itself to (the synthetic configs below cover them):
HISTORY_GAPS = {
    ("spelling", "preserve"): "no config of the window pins TRT-LLM's forced accepted-token count, and no base "
                              "branch's golden_al_distribution/README.md documents a rate spelling",
    ("spelling", "violate"): "the same",
    ("reflow", "violate"): "every acceptance target of the window is set in an assignment, never on a one-line "
                           "command or array",
}
COMPUTED = ("awk", "printf", "arith")  # one of them per config, in turn: the same reading, a third of the time

# (config, kind, way) -> the wrong row the code gives. Strict xfails; the 173 misreads listed here first (issue
# 25) are fixed, and a new one goes here only with the reading that fixes it planned.
XFAIL: dict[tuple[str, str, str], str] = {}


@dataclass(frozen=True)
class Planned:
    config: Config
    kind: str
    way: str
    variant: Variant | None
    skipped: str = ""  # why the rewrite does not apply to the config
    written: tuple[str, ...] = ()  # a violation: the values it wrote, one of which its FAIL must name

    @property
    def key(self) -> tuple[str, str, str]:
        return (self.config.name, self.kind, self.way)


@lru_cache(maxsize=1)
def history() -> History | None:
    """The window's configs, read once per session (the bundle is cloned to a temporary directory)."""
    if not BUNDLE.exists():
        return None
    tmp = tempfile.mkdtemp(prefix="metamorphic-")
    atexit.register(shutil.rmtree, tmp, ignore_errors=True)
    h = History(clone(BUNDLE, Path(tmp) / "inferencex"))
    atexit.register(h.close)
    return h


@lru_cache(maxsize=1)
def configs() -> tuple[Config, ...]:
    h = history()
    if h is None:
        return ()
    return tuple(h.configs(PER_PR))


def target(c: Config) -> Target:
    return Target(c.snapshot, c.path, c.engine or _engine_of(c.path), c.agentic, dict(c.env), c.refs)


def _engine_of(path: str) -> str:
    for engine in ENGINES:
        if engine in path:
            return engine
    return ""


@lru_cache(maxsize=1)
def plan() -> tuple[Planned, ...]:
    out = []
    for n, c in enumerate(configs()):
        t = target(c)
        base = {row: status for row, status, _ in c.rows}
        for kind, rewrite in KINDS.items():
            for way in WAYS:
                if kind in COMPUTED and COMPUTED[n % len(COMPUTED)] != kind:
                    out.append(Planned(c, kind, way, None, "computed another way on this config (in turn)"))
                    continue
                try:
                    variant = rewrite(t, way == "violate")
                except Skip as why:
                    out.append(Planned(c, kind, way, None, str(why)))
                    continue
                if variant.row and base.get(variant.row) == "FAIL":
                    out.append(Planned(c, kind, way, None, f"row {variant.row} fails on the base already"))
                    continue
                out.append(Planned(c, kind, way, variant, written=written(t, kind) if way == "violate" else ()))
    return tuple(out)


def params():
    if not BUNDLE.exists():
        reason = f"{BUNDLE} not present"
        if os.environ.get("CI", "").lower() == "true":
            return [pytest.param(None, id="no-shared-data")]  # fails: CI always has ../shared
        return [pytest.param(None, marks=pytest.mark.skip(reason=reason), id="no-shared-data")]
    out = []
    for p in plan():
        if p.variant is None:
            continue
        marks = [pytest.mark.xfail(reason=XFAIL[p.key], strict=True)] if p.key in XFAIL else []
        out.append(pytest.param(p, marks=marks, id="|".join(p.key)))
    return out


_LINE = re.compile(r"(?<=[\w./-]):\d+\b|\bline \d+\b|\blines \d+(?:-\d+)?\b")
_UNREAD = re.compile(r"\bcannot (?:read|decide|find)\b|<not fixed>")
_NUMBER = re.compile(r"\d+(?:\.\d+)?")


def normal(reason: str, numbers: bool = False) -> str:
    """A reason with its line numbers (and, for a rewrite that changes the numbers a row names, all numbers)
    elided."""
    out = _LINE.sub(":#", reason)
    return _NUMBER.sub("#", out) if numbers else out


def judge(p: Planned) -> tuple[tuple[str, str, str], ...]:
    h = history()
    assert h is not None and p.variant is not None
    return rows_of(h.judge(p.config.pr, p.variant.snapshot))


def _adds_a_file(p: Planned) -> bool:
    assert p.variant is not None
    return any(p.config.snapshot.changed(path) is None and (f := p.variant.snapshot.changed(path)) is not None
               and f.status == "added" for path in p.variant.touched)


def bash_problem(v: Variant) -> str | None:
    """A rewritten script bash cannot parse: the rewrite, not the bot, would be wrong."""
    for path in v.touched:
        if path.endswith(".sh"):
            f = v.snapshot.changed(path)
            assert f is not None and f.head_text is not None
            done = subprocess.run(["bash", "-n"], input=f.head_text, text=True, capture_output=True)
            if done.returncode != 0:
                return f"{path}: bash -n: {done.stderr.strip()}"
    return None


def verdict_problem(p: Planned, rows: tuple[tuple[str, str, str], ...]) -> str | None:
    """What is wrong with the rows of a variant (None: as the rewrite says they must be)."""
    assert p.variant is not None
    if p.way == "preserve":
        numbers = p.kind == "draft-length"
        base = {r: (s, normal(m, numbers)) for r, s, m in p.config.rows}
        got = {r: (s, normal(m, numbers)) for r, s, m in rows}
        if _adds_a_file(p) and "lint" in base and "lint" in got:
            # A file the rewrite adds (an eval twin, a library) is linted like any: a twin repeats the lint
            # findings of the recipe it copies. The lint row keeps its status; checks 9-11 keep their reasons.
            got["lint"] = (got["lint"][0], base["lint"][1])
        changed = {r: got.get(r) for r in base if got.get(r) != base[r]}
        if changed:
            raw = {r: (s, m) for r, s, m in rows if r in changed}
            return f"rows changed: {raw} (base: { {r: base[r][0] for r in changed} })"
        return None
    row = next(((s, m) for r, s, m in rows if r == p.variant.row), None)
    if row is None or row[0] != "FAIL":
        return f"row {p.variant.row} is {row}"
    if not any(re.search(rf"{re.escape(path)}:\d+", row[1]) for path in p.variant.touched):
        return f"row {p.variant.row} FAILs without naming {' or '.join(p.variant.touched)}:LINE: {row[1]}"
    if _UNREAD.search(row[1]):
        return f"row {p.variant.row} FAILs for what it could not read, not for the violation: {row[1]}"
    if p.written and not any(re.search(rf"(?<![\d.]){re.escape(v)}(?![\d])", row[1]) for v in p.written):
        return f"row {p.variant.row} FAILs without naming the value written ({' or '.join(p.written)}): {row[1]}"
    return None


def pytest_generate_tests(metafunc: pytest.Metafunc) -> None:
    """The variants are worked out (every base judged: half a minute) only when the slow tests run."""
    if metafunc.function is test_rewrite:
        planned = params() if runs_slow(metafunc.config) else [pytest.param(None, marks=pytest.mark.slow, id="left-out")]
        metafunc.parametrize("p", planned)


def test_rewrite(p: Planned | None) -> None:
    assert p is not None, "CI=true needs ../shared/fixtures/history"
    assert p.variant is not None
    assert bash_problem(p.variant) is None
    problem = verdict_problem(p, judge(p))
    assert problem is None, problem


def test_no_base_branch_documents_a_rate_spelling() -> None:
    """The rate spelling of the acceptance target is rewritten only where a base branch documents it: none of
    the window does (the day one does, this fails, and the spelling rewrite must learn it)."""
    if not BUNDLE.exists():
        pytest.skip(f"{BUNDLE} not present")
    h = history()
    assert h is not None
    readmes = {}
    for c in configs():
        shown = h.git.run("show", f"{c.snapshot.pr.base_sha}:golden_al_distribution/README.md", check=False)
        readmes[c.name] = shown.stdout.decode() if shown.returncode == 0 else ""
    assert sum(1 for text in readmes.values() if "TLLM_SPEC_DECODE_FORCE_NUM_ACCEPTED_TOKENS" in text) > 0
    assert {n: m.group(0) for n, text in readmes.items() if (m := RATE_KNOB.search(text))} == {}


def test_the_suite_covers_the_history() -> None:
    """≥300 variants from ≥25 real configs of all four engines, every kind both ways (one-way kinds one way);
    rewrites that cannot apply are counted, never hidden."""
    if not BUNDLE.exists():
        if os.environ.get("CI", "").lower() == "true":
            pytest.fail(f"CI=true but {BUNDLE} is missing")
        pytest.skip(f"{BUNDLE} not present")
    planned = plan()
    run = [p for p in planned if p.variant is not None]
    used = {p.config.name for p in run}
    engines = {target(p.config).engine for p in run}
    ways = {(p.kind, p.way) for p in run}
    missing = [(k, w) for k in KINDS for w in WAYS if (k, w) not in ways and ONE_WAY.get(k, w) == w
               and (k, w) not in HISTORY_GAPS]
    skipped = Counter((p.kind, p.way, p.skipped) for p in planned if p.variant is None)
    report = "\n".join(f"{n:4} {k}/{w}: {why}" for (k, w, why), n in sorted(skipped.items()))
    assert len(run) >= MIN_VARIANTS, report
    assert len(used) >= MIN_CONFIGS
    assert set(ENGINES) <= engines, engines
    assert missing == [], report
    synthetic = {(f"synthetic:{e}", k, w) for e, k, w in (p.values for p in synthetic_params())}
    assert set(XFAIL) <= {p.key for p in run} | synthetic, "an XFAIL entry names no variant"


# --------------------------------------------------------------------------
# Synthetic configs, one per engine: the suite means something on a fresh clone without ../shared
# --------------------------------------------------------------------------

SYNTHETIC_CURVES = {
    "golden_al_distribution/glm5.2_mtp.yaml":
        "# key = num_speculative_tokens\nglm-5.2:\n  thinking_on:\n    3: 2.99\n    4: 3.35\n",
}
_HEADER = "#!/usr/bin/env bash\n# {what}\nset -euo pipefail\n\n"
SYNTHETIC = {  # engine -> (path, head text): agentic MTP configs pinned at the golden AL (glm5.2, 3 tokens)
    "vllm": ("benchmarks/single_node/agentic/glm5.2_fp4_b200_vllm_mtp.sh", _HEADER + (
        'vllm serve "$MODEL" --tensor-parallel-size 8 \\\n'
        "    --speculative-config '{\"method\": \"mtp\", \"num_speculative_tokens\": 3, "
        "\"rejection_sample_method\": \"synthetic\", \"synthetic_acceptance_length\": 2.99}' \\\n"
        "    --port 8888 &\n"
        'vllm bench serve --model "$MODEL" --backend openai-chat --endpoint /v1/chat/completions --port 8888\n')),
    "sglang": ("benchmarks/single_node/agentic/glm5.2_fp4_b200_sglang_mtp.sh", _HEADER + (
        "SPEC_ARGS=(\n    --speculative-algorithm EAGLE\n    --speculative-num-steps 3\n"
        "    --speculative-eagle-topk 1\n    --speculative-num-draft-tokens 4\n)\n"
        'if [ "${EVAL_ONLY:-false}" != "true" ]; then  # accuracy runs verify for real\n'
        "    export SGLANG_SIMULATE_ACC_LEN=2.99\n    export SGLANG_SIMULATE_ACC_METHOD=match-expected\nfi\n"
        'python3 -m sglang.launch_server --model-path "$MODEL" --tp 8 "${SPEC_ARGS[@]}" --port 8888 &\n'
        'python3 -m sglang.bench_serving --backend sglang-oai-chat --model "$MODEL" --port 8888\n')),
    "trtllm": ("benchmarks/single_node/agentic/glm5.2_fp4_b200_trt_mtp.sh", _HEADER + (
        "# TRT-LLM counts accepted draft tokens only: the golden AL 2.99 minus one.\n"
        "export TLLM_SPEC_DECODE_FORCE_NUM_ACCEPTED_TOKENS=1.99\n"
        "cat > extra.yml <<EOF\nspeculative_config:\n  decoding_type: MTP\n  num_nextn_predict_layers: 3\nEOF\n"
        'trtllm-serve "$MODEL" --extra_llm_api_options extra.yml --port 8888 &\n'
        'aiperf profile --model "$MODEL" --endpoint-type chat --url localhost:8888\n')),
    "atom": ("benchmarks/single_node/agentic/glm5.2_fp4_mi355x_atom_mtp.sh", _HEADER + (
        'python3 -m atom.entrypoints.openai_server --model "$MODEL" --method mtp --num-speculative-tokens 3 '
        "--spec-decode-acceptance-length 2.99 --port 8888 &\n"
        'aiperf profile --model "$MODEL" --endpoint-type chat --url localhost:8888\n')),
}


def synthetic_target(engine: str) -> Target:
    from checks.snapshot import frozen_map
    from tests.builders import changed, snapshot

    path, head = SYNTHETIC[engine]
    base = head.replace("{what}", "an earlier version")
    head = head.replace("{what}", f"AgentX {engine} MTP, acceptance pinned at the golden AL")
    snap = snapshot(files=[changed(path, base, head)], policy=frozen_map(SYNTHETIC_CURVES))
    return Target(snap, path, engine, True, {"EVAL_ONLY": "false"}, ())


def synthetic_rows(snap) -> tuple[tuple[str, str, str], ...]:
    from checks.engine import evaluate
    from tests.metamorphic.history import RULES_UNDER_TEST

    return rows_of(evaluate(snap, RULES_UNDER_TEST))


def synthetic_params():
    out = []
    for engine in SYNTHETIC:
        t = synthetic_target(engine)
        for kind, rewrite in KINDS.items():
            for way in WAYS:
                try:
                    rewrite(t, way == "violate")
                except Skip:
                    continue
                key = (f"synthetic:{engine}", kind, way)
                marks = [pytest.mark.xfail(reason=XFAIL[key], strict=True)] if key in XFAIL else []
                out.append(pytest.param(engine, kind, way, marks=marks, id="|".join(key)))
    return out


@pytest.mark.parametrize("engine", list(SYNTHETIC))
def test_synthetic_configs_pass_as_written(engine: str) -> None:
    """The synthetic configs are what the rewrites start from: every row passes on them."""
    rows = synthetic_rows(synthetic_target(engine).snapshot)
    assert [(r, s) for r, s, _ in rows] == [("10", "PASS"), ("11", "PASS"), ("9", "PASS"), ("lint", "PASS")], rows


@pytest.mark.parametrize("engine,kind,way", synthetic_params())
def test_synthetic_rewrite(engine: str, kind: str, way: str) -> None:
    t = synthetic_target(engine)
    variant = KINDS[kind](t, way == "violate")
    assert bash_problem(variant) is None
    config = Config(0, t.path, "script", engine, True, (), (), t.snapshot, synthetic_rows(t.snapshot))
    p = Planned(config, kind, way, variant, written=written(t, kind) if way == "violate" else ())
    problem = verdict_problem(p, synthetic_rows(variant.snapshot))
    assert problem is None, problem


def test_synthetic_configs_cover_every_kind_both_ways() -> None:
    ways = {(kind, way) for _engine, kind, way in (p.values for p in synthetic_params())}
    missing = [(k, w) for k in KINDS for w in WAYS if (k, w) not in ways and ONE_WAY.get(k, w) == w
               and k not in ("master-env", "patch-site", "chat-default")]
    # master-env and patch-site need a master entry running the script; chat-default a srt-slurm recipe, whose
    # model (and so its golden curve, for row 11) only a master entry running it names: the history's cover them
    assert missing == []
