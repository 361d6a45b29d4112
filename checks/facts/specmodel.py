"""One model of every speculative-decoding config a PR submits, read the way its engine reads it.

Checks 9 and 11 read configs through this module (`model(ctx)`, derived once
per Context); no rule reads a script itself. Where the configs are is
`checks.facts.specdecode` (scripts, srt-slurm recipes, what master entries run,
their chains); what a setting means is `checks.facts.engines`; how a script is
run is `checks.facts.bash` (one interpreter decides branches, sourced files are run
in place, `$(( ))`, printf and awk/bc/python3 arithmetic on literals are
worked out).

For each config (`SpecRead`): its engine, draft method, draft model and
draft length; the thinking mode, with why (set by the config, or assumed);
whether the run is a throughput run or eval-only (an `EVAL_ONLY` branch, an
eval twin recipe); its acceptance: `simulated` with the pinned targets in
the engine's spelling and the acceptance length each one means, `real`, or
`unknown` (a knob that speaks of acceptance but that no engine's table
holds: what it pins cannot be read, so nothing is decided on it); and the
file:line evidence of each value.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, replace

from checks.context import Context

from . import engines
from .spec_settings import Simulation, SpecConfig, thinking
from .spec_settings import eval_only_lines as spec_eval_only_lines
from .specdecode import Inventory, SpecUnit, client_programs, eval_only_recipe, eval_twin, inventory
from .tracing import Reached


@dataclass(frozen=True)
class SpecRead:
    """One speculative config as its engine reads it."""

    unit: SpecUnit
    config: SpecConfig
    thinking: str  # thinking_on | thinking_off
    thinking_why: str  # set by the config, or which mode was assumed and why
    throughput: bool  # False: only an eval-only run takes it
    acceptance: str  # simulated | real | unknown
    pins: tuple[Simulation, ...]  # the targets pinned (simulated), each with its file:line
    why: str  # for real / unknown acceptance: what the config sets or lacks
    auto: str = ""  # a master point whose injector reads the golden value itself (SYNTHETIC_ACCEPTANCE alone)

    @property
    def engine(self) -> str:
        return self.config.engine or self.unit.engine

    @property
    def method(self) -> str:
        return self.config.method

    @property
    def draft_model(self) -> str:
        return self.config.draft_model

    @property
    def draft_length(self) -> int | None:
        return self.config.num_tokens

    @property
    def path(self) -> str:
        return self.config.path or self.unit.path

    @property
    def line(self) -> int:
        return self.config.line or self.unit.anchor


@dataclass(frozen=True)
class Model:
    inventory: Inventory
    reads: tuple[SpecRead, ...]

    def of(self, unit: SpecUnit) -> tuple[SpecRead, ...]:
        return tuple(r for r in self.reads if r.unit is unit)


def eval_only_lines(ctx: Context, unit: SpecUnit) -> frozenset[int]:
    """The lines of a script unit only an eval-only run reaches (with the unit's variables), as the interpreter
    runs it (`spec_settings.eval_only_lines`)."""
    return ctx.once(_eval_only_lines, unit.text, tuple(sorted(unit.env.items())))


def _eval_only_lines(ctx: Context, text: str, env: tuple[tuple[str, str], ...]) -> frozenset[int]:
    return spec_eval_only_lines(ctx.script(text), dict(env))


def model(ctx: Context) -> Model:
    """The model of every speculative config the PR submits (worked out once per Context)."""
    return ctx.once(_model)


def _model(ctx: Context) -> Model:
    inv = inventory(ctx)
    reads: list[SpecRead] = []
    for unit in inv.units:
        if unit.error is not None:
            continue
        mode, why = _thinking(ctx, unit)
        twin = _eval_only_unit(ctx, unit)
        sims = [_documented(ctx, s) for s in unit.simulations if not s.eval_only]
        unit_pins = [s for s in sims if s.pins_length]
        unknown = [s for s in sims if not s.means]
        # SYNTHETIC_ACCEPTANCE=true alone: the launcher's injector writes the golden value into the recipe
        auto = next((f"{s.path}:{s.line}" for s in unit.simulations if s.means == "switch" and not s.eval_only
                     and engines.meaning("master", "setting", s.knob) == "switch"), "") if unit.kind == "recipe" else ""
        for config in unit.configs:
            config = _documented_config(ctx, config)
            acceptance, pins, reason = _acceptance(config, config.path or unit.path, unit_pins, unknown, auto)
            reads.append(SpecRead(unit, config, mode, why, not (config.eval_only or twin), acceptance,
                                  tuple(pins), reason, auto))
    return Model(inv, tuple(reads))


README = "README.md"  # in the golden-curve directory: where a new spelling of a target is documented


def _readme(ctx: Context) -> str:
    """The golden-curve README on the base branch (read only for a knob the table lacks)."""
    text = ctx.need.file("base", f"{ctx.policy.golden_al_dir.rstrip('/')}/{README}")
    return text if isinstance(text, str) else ""


def _documented(ctx: Context, sim: Simulation) -> Simulation:
    """A knob the table lacks, with the meaning the golden-curve README documents for it (else as it was)."""
    if sim.means:
        return sim
    means = engines.documented_meaning(_readme(ctx), sim.knob)
    return replace(sim, means=means) if means in engines.TARGETS else sim


def _documented_config(ctx: Context, config: SpecConfig) -> SpecConfig:
    """A config whose acceptance keys the table lacks, with what the README documents for them (a documented
    target is read as the engine's own: `SpecConfig.documented`)."""
    if not config.unknown_knobs:
        return config
    readme = _readme(ctx)
    found = tuple((k, m) for k in config.unknown_knobs if (m := engines.documented_meaning(readme, k)) in engines.TARGETS)
    return replace(config, documented=found) if found else config


def _eval_only_unit(ctx: Context, unit: SpecUnit) -> bool:
    """A unit only an eval run takes, that no master point runs as its benchmark (`specdecode.eval_twin`,
    `eval_only_recipe`)."""
    if unit.refs:
        return False
    return eval_only_recipe(ctx, unit.path) if unit.kind == "recipe" else eval_twin(unit.path)


def _thinking(ctx: Context, unit: SpecUnit) -> tuple[str, str]:
    """The thinking mode of a unit's configs, and why: a master setting (THINKING_MODE), else what the config's
    scripts (not the libraries they source) or recipe set, else assumed."""
    for name, value in sorted(unit.env.items()):
        if engines.meaning("master", "setting", name) == "thinking" and value in ("thinking_on", "thinking_off"):
            return value, f"{value}: the master point sets {name}={value}"
    if unit.kind != "script":
        return thinking(unit.text)
    texts = [unit.text] + [x.text for x in unit.chain[1:] if x.text is not None and x.how != "source"]
    return thinking("\n".join("\n".join(ln.code for ln in ctx.script(t).lines) for t in dict.fromkeys(texts)))


def _acceptance(config: SpecConfig, path: str, unit_pins: list[Simulation], unknown: list[Simulation], auto: str
                ) -> tuple[str, list[Simulation], str]:
    """(acceptance mode, pins, why) of one config written in `path`."""
    targets = config.targets
    strange = config.unknown_knobs
    if config.synthetic or targets:
        if not config.synthetic:
            return "real", [], f"sets {targets[0][0]} without \"rejection_sample_method\": \"synthetic\""
        if not targets:
            if strange:
                return "unknown", [], f"sets {', '.join(strange)}, which no engine's table holds"
            return "real", [], "sets \"rejection_sample_method\": \"synthetic\" without synthetic_acceptance_length"
        means = dict(config.documented)
        return "simulated", [Simulation(k, v, config.line, path, False,
                                        means.get(k) or engines.meaning(config.engine, "json", k))
                             for k, v in targets], ""
    if unit_pins:
        return "simulated", list(unit_pins), ""
    if auto:
        return "simulated", [], ""
    if config.unread:
        return "unknown", [], config.unread
    if strange or unknown:
        names = list(strange) + [f"{s.knob} ({s.path}:{s.line})" for s in unknown]
        return "unknown", [], f"sets {', '.join(dict.fromkeys(names))}, which no engine's table holds"
    return "real", [], "runs real (unsimulated) acceptance"


# --------------------------------------------------------------------------
# What check 9 reads of a config's scripts: its benchmark clients
# --------------------------------------------------------------------------


@dataclass(frozen=True)
class Command:
    """A logical command line of a script: where, and its text with the values the script fixes expanded (and,
    for a line reader, the items of the arrays it expands)."""

    path: str
    line: int
    text: str
    arrays: str = ""


def function_body(ctx: Context, chain: tuple[Reached, ...], name: str) -> tuple[str, str] | None:
    """(script, code) of function `name` as the scripts of a chain define it (its last definition)."""
    found = None
    for x in chain:
        body = ctx.script(x.text).functions.get(name) if x.text is not None else None
        if body is not None:
            found = (x.path, "\n".join(ln.code for ln in body))
    return found


def programs(ctx: Context, reached: Reached) -> frozenset[str]:
    """The python programs a reached script writes from a heredoc importing a benchmark client."""
    return client_programs(ctx.script(reached.text)) if reached.text is not None else frozenset()


def commands(ctx: Context, reached: Reached) -> tuple[Command, ...]:
    """The command lines of a reached script (not of a library it sources: a library defines, scripts run)."""
    if reached.text is None or reached.how == "source":
        return ()
    return tuple(Command(reached.path, c.line, c.text) for c in ctx.script(reached.text).commands)


def throughput_commands(ctx: Context, unit: SpecUnit) -> tuple[Command, ...]:
    """The command lines of a script unit a benchmark run reaches (not those only an eval-only run reaches), each
    with the items of the arrays it expands: what a line reader of its clients reads."""
    script = ctx.script(unit.text)
    skip = eval_only_lines(ctx, unit)
    out = []
    for c in script.commands:
        if c.line in skip:
            continue
        text = c.expanded
        arrays = " ".join(item for name in dict.fromkeys(_ARRAY_USE.findall(text)) for item in script.array_items(name))
        out.append(Command(unit.path, c.line, text, arrays))
    return tuple(out)


_ARRAY_USE = re.compile(r"\$\{([A-Za-z_]\w*)\[@\]\}")
