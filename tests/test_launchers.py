"""Which launcher a runner label runs, and what its srtslurm.yaml maps a container name to (checks/facts/launchers.py)."""

from __future__ import annotations

import pytest

from checks.facts import launchers, runs
from tests.builders import HEAD, ctx
from tests.test_lint_master_recipe_parity import L_CONTAINERS, LAUNCHER, LAUNCHER_SH

RUNNERS = """labels:
  h200:
    - h200-cw_00
    - h200-dgxc-slurm_0
    - h200-dgxc-slurm_1
  cluster:h200-dgxc:
    - h200-dgxc-slurm_0
"""


def with_files(**files: str | None):
    return ctx(extra_files={HEAD: dict(files)})


# The same runners file in the shape of `.github/configs/runners.yaml` before it moved: the labels at the top.
RUNNERS_AT_TOP = """h200:
- 'h200-cw_00'
- 'h200-dgxc-slurm_0'
- 'h200-dgxc-slurm_1'
cluster:h200-dgxc:
- 'h200-dgxc-slurm_0'
"""


@pytest.mark.parametrize("runners", [RUNNERS, RUNNERS_AT_TOP], ids=["labels", "labels-at-top"])
def test_a_label_runs_the_launcher_of_each_runner_name_up_to_its_first_underscore(runners):
    c = with_files(**{"configs/runners.yaml": runners})
    assert runs.launchers(c, "h200") == ("runners/launch_h200-cw.sh", "runners/launch_h200-dgxc-slurm.sh")
    assert runs.launchers(c, "cluster:h200-dgxc") == ("runners/launch_h200-dgxc-slurm.sh",)
    assert runs.launchers(c, "b200") == ("runners/launch_b200.sh",)  # not listed: the one named after it


def test_the_older_runners_path_and_a_repository_launcher_pattern():
    policy = {".github/signoff-bot.yml": "launcher: ci/run_{machine}.sh\n"}
    c = ctx(policy=policy, extra_files={HEAD: {"configs/runners.yaml": None, ".github/configs/runners.yaml": RUNNERS}})
    assert runs.launchers(c, "cluster:h200-dgxc") == ("ci/run_h200-dgxc-slurm.sh",)


def test_an_unreadable_runners_file_leaves_the_launcher_named_after_the_label():
    assert runs.launchers(with_files(**{"configs/runners.yaml": "labels: [\n"}), "h200") == ("runners/launch_h200.sh",)


def test_container_map_reads_the_heredoc_and_the_master_image_file():
    m = launchers.container_map(with_files(**{LAUNCHER: LAUNCHER_SH}), LAUNCHER)
    assert (m.launcher, m.line, m.master) == (LAUNCHER, L_CONTAINERS, frozenset({"${SQUASH_FILE}"}))
    image = "lmsysorg/sglang:v1"
    assert m.resolve("dynamo-sglang", image) == "master"
    assert m.resolve("nvcr.io#nvidia/ai-dynamo/tensorrtllm-runtime:0.8", image) == "master"
    assert m.resolve("nginx-sqsh", image) == "${NGINX_SQUASH_FILE}"
    assert m.resolve("use_segment_sbatch_directive", image) is None  # a top-level key ends the map
    assert launchers.container_map(with_files(**{LAUNCHER: "echo hi\n"}), LAUNCHER) is None
    assert launchers.container_map(with_files(), LAUNCHER) is None
