"""Repository configuration: where the policy files live and the conventions the checks key on.

The defaults are InferenceX's conventions (both the layout before July 2026,
`.github/configs/*-master.yaml` and `utils/evals/thresholds.json`, and the one
after, `configs/*-master.yaml` and `utils/evals/thresholds.yaml`). A repository
overrides any of them in `.github/signoff-bot.yml` on its base branch, e.g.:

    signoff_phrase: "As a PR reviewer and CODEOWNER"
    sweep_workflow: run-sweep.yml
    established_skus: [h100, h200, b200]
    block_self_signoff: true
    lint: blocking          # recipe lint errors block the sign-off (default: advice)
    workflow_changes: blocking  # a PR that edits workflows fails check 1 (default: a note)
"""

from __future__ import annotations

import difflib
import fnmatch
from dataclasses import dataclass, fields, replace
from typing import Any

from .facts.yamlload import LineDict, YamlProblem, load

CONFIG_PATH = ".github/signoff-bot.yml"
_CHOICES = {"lint": ("advice", "blocking"), "workflow_changes": ("note", "blocking")}
_BENCHMARK_DIRS = ("benchmarks/", "runners/", ".github/workflows/", ".github/actions/")
# Settings that name a directory of the repository: kept without a leading "./" or a trailing "/", however
# the repository writes them, so that every path rule compares them one way.
_DIRECTORIES = ("golden_al_dir", "waiver_dir", "recipe_root")


@dataclass(frozen=True)
class Policy:
    signoff_phrase: str = "As a PR reviewer and CODEOWNER"
    reuse_command: str = "/reuse-sweep-run"
    recheck_command: str = "/signoff-recheck"
    sweep_workflow: str = "run-sweep.yml"
    eval_artifact_prefixes: tuple[str, ...] = ("eval_results", "eval_")
    bmk_artifact_prefixes: tuple[str, ...] = ("results_bmk", "bmk")
    # Check-run name prefixes (text before " /") of the per-config lanes.
    benchmark_lanes: tuple[str, ...] = ("single-node", "multi-node", "agentic", "multi-node agentic")
    eval_lanes: tuple[str, ...] = ("eval", "multi-node eval", "agentic eval", "multi-node agentic eval")
    established_skus: tuple[str, ...] = ("h100", "h200", "b200", "b300", "gb200", "gb300", "mi300x", "mi325x", "mi355x")
    upstream_image_orgs: tuple[str, ...] = ("vllm", "lmsysorg")
    authorized_associations: tuple[str, ...] = ("OWNER", "MEMBER", "COLLABORATOR")
    codeowners_paths: tuple[str, ...] = (".github/CODEOWNERS", "CODEOWNERS", "docs/CODEOWNERS")
    models_md: str = "MODELS.md"
    checklist: str = "docs/PR_REVIEW_CHECKLIST.md"
    thresholds_paths: tuple[str, ...] = ("utils/evals/thresholds.yaml", "utils/evals/thresholds.json")
    golden_al_dir: str = "golden_al_distribution"
    waiver_dir: str = "docs/waiver"
    master_config_globs: tuple[str, ...] = ("configs/*-master.yaml", ".github/configs/*-master.yaml")
    changelog: str = "perf-changelog.yaml"
    # `CONFIG_FILE=recipes/...` in a master config names a file under this directory.
    recipe_root: str = "benchmarks/multi_node/srt-slurm-recipes"
    # The machines of each runner label, and the launcher the sweep runs on a machine (`{machine}`: its name
    # up to the first `_`, as the workflow's `runners/launch_${RUNNER_NAME%%_*}.sh`).
    runners_configs: tuple[str, ...] = ("configs/runners.yaml", ".github/configs/runners.yaml")
    launcher: str = "runners/launch_{machine}.sh"
    block_self_signoff: bool = False
    advisory: bool = False
    # "advice": recipe lint findings are posted but never change the sign-off verdict; "blocking": they do.
    lint: str = "advice"
    # "note": check 1 notes a PR that edits its own workflows (the spec has no rule against it); "blocking": it FAILs.
    workflow_changes: str = "note"

    @classmethod
    def from_yaml(cls, text: str | None, path: str = CONFIG_PATH) -> tuple["Policy", tuple[str, ...]]:
        """The defaults overridden by each valid setting of `.github/signoff-bot.yml`, and what is wrong with
        the rest (`problems`, in file order, each naming its line); never raises.

        A mistyped key or a bad value costs only that setting, never the file's other settings: a
        repository that sets `advisory: true` beside a typo stays advisory, and the verdict says what was
        ignored. Only a file that is not YAML, or not a mapping, leaves every setting at its default.
        """
        policy = cls()
        if not text:
            return policy, ()
        try:
            data = load(text)
        except YamlProblem as problem:
            return policy, (f"{path}:{problem.line}: does not parse ({problem.message}); "
                            "every setting is the default",)
        if data is None:
            return policy, ()
        if not isinstance(data, LineDict):  # (`load` builds every mapping as a LineDict)
            return policy, (f"{path}: must be a mapping of settings; every setting is the default",)
        known = {f.name for f in fields(cls)}
        changes: dict[str, Any] = {}
        problems: list[str] = []
        for key, value in data.items():
            name = str(key).replace("-", "_")
            where = f"{path}:{data.line_of(key)}"
            if name not in known:
                close = difflib.get_close_matches(name, sorted(known), 1)
                hint = f" (did you mean {close[0]}?)" if close else ""
                problems.append(f"{where}: unknown setting {key!r}{hint}; ignored")
                continue
            setting, why = _setting(name, getattr(policy, name), value)
            if why:
                problems.append(f"{where}: {key} {why}; ignored, the default applies")
            else:
                changes[name] = setting
        return replace(policy, **changes), tuple(problems)

    def __post_init__(self) -> None:
        for name in _DIRECTORIES:
            object.__setattr__(self, name, _directory(getattr(self, name)))

    @property
    def sweep_workflow_path(self) -> str:
        """The sweep workflow's path in the repository (`Policy.sweep_workflow` names a file under
        .github/workflows/ unless it is a path of its own)."""
        workflow = self.sweep_workflow
        return workflow if workflow.startswith(".github/") else f".github/workflows/{workflow}"

    def is_sweep_workflow(self, path: str | None) -> bool:
        """Whether a workflow run of `path` is a run of the sweep workflow: that exact file, not one whose
        name merely ends the same (`dry-run-sweep.yml`)."""
        return path == self.sweep_workflow_path

    def is_master_config(self, path: str) -> bool:
        directory, _, name = path.rpartition("/")
        for pattern in self.master_config_globs:
            pattern_dir, _, pattern_name = pattern.rpartition("/")
            if directory == pattern_dir and fnmatch.fnmatchcase(name, pattern_name):
                return True
        return False

    def is_benchmark_file(self, path: str) -> bool:
        """Whether the content checks read `path` when a PR changes it: benchmark scripts, recipes and
        launchers, workflows, master configs, the changelog, Dockerfiles and patch files."""
        name = path.rpartition("/")[2]
        return (path.startswith(_BENCHMARK_DIRS) or self.is_master_config(path) or path == self.changelog
                or name.startswith("Dockerfile") or name.endswith((".dockerfile", ".patch", ".diff")))

    def is_policy_file(self, path: str) -> bool:
        """Whether `path` on the base branch tip is a policy file every verification reads.

        The single files, plus the waivers (`<waiver_dir>/*.md`). The golden
        acceptance-length curves are read only when check 11 asks for them
        (`is_golden_curve`): most PRs need none of the dozens there are.
        """
        if path in (CONFIG_PATH, *self.codeowners_paths, self.models_md, self.checklist, *self.thresholds_paths):
            return True
        directory, _, name = path.rpartition("/")
        return directory == self.waiver_dir and name.endswith(".md")

    def is_recipe(self, path: str) -> bool:
        """Whether `path` is an srt-slurm recipe: a YAML file under `recipe_root`."""
        return path.startswith(self.recipe_root + "/") and path.endswith((".yaml", ".yml"))

    def is_golden_curve(self, path: str, stem: str) -> bool:
        """Whether `path` is a golden AL curve of `stem` (`<model-prefix>_<method>`): the plain curve
        `<golden_al_dir>/<stem>.yaml` or a variant `<golden_al_dir>/<stem>_<variant>.yaml`."""
        directory, _, name = path.rpartition("/")
        return directory == self.golden_al_dir and name.endswith(".yaml") and (
            name == f"{stem}.yaml" or name.startswith(f"{stem}_"))


def _directory(path: str) -> str:
    """A repository directory as the path rules compare it: `golden_al_distribution/` and
    `./golden_al_distribution` are `golden_al_distribution`."""
    path = path.strip()
    while path.startswith("./"):
        path = path[2:]
    return path.strip("/")


def _setting(name: str, default: Any, value: Any) -> tuple[Any, str]:
    """(the value of setting `name`, "") or (None, what is wrong with `value`)."""
    if isinstance(default, tuple):
        if isinstance(value, str):
            value = [value]
        if not isinstance(value, list) or not all(isinstance(v, str) for v in value):
            return None, "must be a list of strings"
        return tuple(value), ""
    if not isinstance(value, type(default)):
        return None, f"must be a {type(default).__name__}"
    if name in _CHOICES and value not in _CHOICES[name]:
        return None, f"must be one of {', '.join(_CHOICES[name])}"
    return value, ""
