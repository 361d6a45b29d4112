"""Check 10: no engine patches without a filled-out, linked waiver."""

from __future__ import annotations

import itertools

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from checks.facts import patch_sites
from checks.facts.bash import Script
from checks.result import Status
from checks.rules import check10_engine_patches
from checks.rules.check10_engine_patches import RULE
from tests.builders import HEAD, REPO, SIGNOFF_HEAD, changed, comment, ctx, decided, needs
from tests.conftest import assert_check_agrees, world_params

SCRIPT = "benchmarks/single_node/agentic/kimik3_fp4_mi355x_mtp.sh"
PATCHER = "benchmarks/single_node/agentic/apply_k3_patches.sh"
WAIVER = "docs/waiver/100.md"
BASE = "vllm serve $MODEL --tensor-parallel-size 8\n"

WAIVER_TEXT = """\
# Inference-engine patch waiver - PR #100

## What is patched

`apply_k3_patches.sh` applies vllm #51011 to the AITER MLA backend of the pinned image before serving.

## Why the unmodified upstream image cannot run this benchmark

fp8 KV cache decode on the AITER MLA backend is broken in the pinned nightly, so the server faults.

## Upstream PR / issue links

- https://github.com/vllm-project/vllm/pull/51011

## Removal plan

Drop apply_k3_patches.sh and bump the image once a ROCm nightly ships vllm #51011.
"""

TEMPLATE = """\
# Inference-engine patch waiver - PR #<PR_NUMBER>

## What is patched

<describe what the patch changes>

## Why the unmodified upstream image cannot run this benchmark

TODO

## Upstream PR / issue links

## Removal plan
"""

PATCH_LINE = 'bash "$(dirname "$0")/apply_k3_patches.sh"\n'
PATCHER_TEXT = 'ROOT="$(python -c \'import importlib.util as u; print(u.find_spec("vllm").origin)\')"\n' \
               'git apply --directory="$ROOT" -p1 /tmp/fix.diff\n'


def signoff(detail: str):
    return comment(f"{SIGNOFF_HEAD}\n- [x] item\n\n### Additional detail section:\n{detail}\n\nSigned: `r`")


LINKED = signoff(f"- Waiver: https://github.com/{REPO}/blob/main/{WAIVER} covers apply_k3_patches.sh")


def patch_files(waiver: str | None = WAIVER_TEXT):
    files = [changed(SCRIPT, BASE, BASE + PATCH_LINE), changed(PATCHER, None, PATCHER_TEXT)]
    if waiver is not None:
        files.append(changed(WAIVER, None, waiver))
    return files


def run(**kw):
    return check10_engine_patches.check(ctx(**kw))


def test_na_without_benchmark_files():
    assert run(files=[changed("docs/README.md", "a\n", "b\n")]).status is Status.NA


def test_no_patching_passes():
    r = run(files=[changed(SCRIPT, BASE, BASE + "pip install amd-quark\nexport VLLM_ROCM_USE_AITER=1\n")])
    assert r.status is Status.PASS and r.findings == ()


def test_patch_without_waiver_fails_naming_script_line():
    r = run(files=patch_files(waiver=None), comments=[LINKED])
    assert r.status is Status.FAIL
    by_path = {f.path: f for f in r.findings}
    assert by_path[SCRIPT].line == 2 and by_path[PATCHER].line == 2
    assert all(f.rule == "engine-patch" for f in r.findings)
    assert f"no waiver: the PR does not add {WAIVER}" in by_path[SCRIPT].message


def test_patch_with_filled_linked_waiver_passes():
    r = run(files=patch_files(), comments=[LINKED])
    assert r.status is Status.PASS and WAIVER in r.reason


def test_waiver_not_linked_fails():
    r = run(files=patch_files(), comments=[signoff("- Recipe: https://recipes.vllm.ai/moonshotai/Kimi-K3")])
    assert r.status is Status.FAIL and "not linked" in r.reason


def test_a_filled_out_waiver_with_no_sign_off_to_read_is_a_note_of_what_it_must_link():
    """A git history (backtest) holds no sign-off: the waiver it would link is there, so the check passes
    with a note; with a sign-off that does not link it, it FAILs (test_waiver_not_linked_fails)."""
    r = run(files=patch_files())
    assert r.status is Status.PASS and r.notes == (f"the sign-off must link {WAIVER}",)
    assert f"(the sign-off must link {WAIVER})" in r.reason
    assert run(files=patch_files(waiver=TEMPLATE)).status is Status.FAIL  # an incomplete waiver is no note


def test_template_waiver_fails():
    r = run(files=patch_files(waiver=TEMPLATE), comments=[LINKED])
    assert r.status is Status.FAIL
    message = r.findings[0].message
    assert "incomplete" in message and "placeholder" in message and "'removal plan' section is empty" in message
    assert "no upstream PR/issue link" in message


def test_waiver_without_removal_plan_fails():
    text = WAIVER_TEXT.split("## Removal plan")[0]
    r = run(files=patch_files(waiver=text), comments=[LINKED])
    assert r.status is Status.FAIL and "no 'removal plan' section" in r.reason


def test_waiver_that_does_not_name_the_patch_fails():
    text = WAIVER_TEXT.replace("apply_k3_patches.sh", "the patch script")
    r = run(files=patch_files(waiver=text), comments=[LINKED])
    assert r.status is Status.FAIL and "does not name" in r.reason


def test_waiver_named_after_another_pr_fails():
    files = patch_files(waiver=None) + [changed("docs/waiver/99.md", None, WAIVER_TEXT)]
    r = run(files=files, comments=[LINKED])
    assert r.status is Status.FAIL and "docs/waiver/99.md instead" in r.reason


MASTER = "configs/amd-master.yaml"
ENTRY = """kimik3-fp4-mi355x-vllm-mtp:
  image: vllm/vllm-openai-rocm:v1
  model: moonshotai/Kimi-K3
  model-prefix: kimik3
  runner: mi355x
  precision: fp4
  framework: {framework}
  scenarios:
    agentic-coding:
    - search-space:
      - {{ tp: 8, spec-decoding: mtp, conc-list: [{conc}] }}
"""
# What the resolver looks for before it settles on SCRIPT, the script named after the entry: none of it is there.
ABSENT = {"configs/runners.yaml": None, ".github/configs/runners.yaml": None, "runners/launch_mi355x.sh": None,
          "benchmarks/single_node/agentic/kimik3_fp4_mi355x_vllm_mtp.sh": None,
          "benchmarks/single_node/agentic/kimik3_fp4_mi355x_sglang_mtp.sh": None}


def reaching(framework: str = "vllm", **extra) -> dict:
    """A changed master entry whose point runs SCRIPT: pre-existing patching there is reached."""
    return dict(master_base={MASTER: ENTRY.format(framework=framework, conc=4)},
                master_head={MASTER: ENTRY.format(framework=framework, conc=8)},
                extra_files={HEAD: {**ABSENT, **extra}})


def test_preexisting_patch_with_base_waiver_passes():
    base = BASE + PATCH_LINE
    files = [changed(SCRIPT, base, base + "export VLLM_ROCM_USE_AITER=1\n")]
    old = "docs/waiver/2508.md"
    link = signoff(f"- Waiver: https://github.com/{REPO}/blob/main/{old}")
    r = run(files=files, policy={old: WAIVER_TEXT.replace("PR #100", "PR #2508")}, comments=[link],
            **reaching(**{PATCHER: PATCHER_TEXT}))
    assert r.status is Status.PASS and old in r.reason


def test_preexisting_patch_without_base_waiver_fails():
    base = BASE + PATCH_LINE
    r = run(files=[changed(SCRIPT, base, base + "export X=1\n")], comments=[LINKED], **reaching(**{PATCHER: PATCHER_TEXT}))
    assert r.status is Status.FAIL and "pre-existing patching with no waiver on the base branch" in r.reason
    assert r.findings[0].line == 2


def test_preexisting_patching_no_changed_config_reaches_is_dormant():
    base = BASE + PATCH_LINE
    files = [changed(SCRIPT, base, base + "export X=1\n")]
    # no master entry changes: nothing the PR submits runs the old patch
    assert run(files=files, extra_files={HEAD: {PATCHER: PATCHER_TEXT}}).status is Status.PASS
    guarded = BASE + 'if [[ "$FRAMEWORK" == "sglang" ]]; then\n    ' + PATCH_LINE + "fi\n"
    files = [changed(SCRIPT, guarded, guarded + "export X=1\n")]
    # the changed entry runs vLLM: the sglang-only branch is not reached
    assert run(files=files, **reaching(**{PATCHER: PATCHER_TEXT})).status is Status.PASS
    # an sglang entry reaches it; a guard its variables cannot decide is run too
    assert run(files=files, **reaching("sglang", **{PATCHER: PATCHER_TEXT})).status is Status.FAIL
    undecided = guarded.replace('"$FRAMEWORK" == "sglang"', '"$SOME_RUNNER_FLAG" == "1"')
    files = [changed(SCRIPT, undecided, undecided + "export X=1\n")]
    assert run(files=files, **reaching(**{PATCHER: PATCHER_TEXT})).status is Status.FAIL


def test_sed_on_a_recipe_name_is_not_a_patch():
    head = BASE + 'sed -i "s/^name: .*/name: $RUN_NAME/" "$RECIPE_FILE"\n' \
                  'cp -rT "$GITHUB_WORKSPACE/benchmarks/multi_node/srt-slurm-recipes/sglang" recipes/sglang\n'
    assert run(files=[changed(SCRIPT, BASE, head)]).status is Status.PASS


def test_site_packages_rewrite_is_a_patch():
    head = BASE + "sed -i 's/a/b/' /usr/local/lib/python3.12/dist-packages/vllm/envs.py\n"
    r = run(files=[changed(SCRIPT, BASE, head)])
    decided(r, Status.FAIL, (RULE, SCRIPT, 2), only=True)
    assert "installed engine" in r.findings[0].message  # what it patches


def test_site_packages_copy_is_a_patch():
    head = BASE + "cp /tmp/fused_moe.py /usr/lib/python3/site-packages/sglang/srt/layers/fused_moe.py\n"
    assert run(files=[changed(SCRIPT, BASE, head)]).status is Status.FAIL


def test_python_heredoc_rewriting_engine_source_is_a_patch():
    head = BASE + 'python3 - "$(python3 -c \'import sglang, os; print(sglang.__file__)\')" <<\'PY\'\n' \
                  "import sys\nsrc = open(sys.argv[1]).read()\nopen(sys.argv[1], 'w').write(src)\nPY\n"
    r = run(files=[changed(SCRIPT, BASE, head)])
    assert r.status is Status.FAIL and r.findings[0].line == 2


def test_sgl_workspace_overwrite_is_a_patch():
    head = BASE + "cp /workspace/fix/moe.py /sgl-workspace/sglang/python/sglang/srt/layers/moe.py\n"
    assert run(files=[changed(SCRIPT, BASE, head)]).status is Status.FAIL


def test_engine_wheel_install_is_a_patch_but_harness_deps_are_not():
    fork = BASE + "pip install git+https://github.com/someone/vllm.git@hack\n"
    assert run(files=[changed(SCRIPT, BASE, fork)]).status is Status.FAIL
    harness = BASE + "python3 -m pip install aiperf 'lm_eval[api]==0.4.12' datasets\nuv pip install -e \"$AIPERF_DIR\"\n"
    assert run(files=[changed(SCRIPT, BASE, harness)]).status is Status.PASS


def test_dockerfile_engine_rebuild_is_a_patch():
    docker = "FROM vllm/vllm-openai:v0.11\nRUN pip install git+https://github.com/fork/vllm.git@fast\n"
    r = run(files=[changed("docker/Dockerfile.rocm", None, docker)])
    assert r.status is Status.FAIL and r.findings[0].line == 2


def test_patch_file_and_sitecustomize_hook():
    r = run(files=[changed("benchmarks/patches/fix.patch", None, "--- a/x\n+++ b/x\n")])
    assert r.status is Status.FAIL and r.findings[0].line == 1
    hook = BASE + "cp hooks/sitecustomize.py \"$HOOK_DIR\"\nexport PYTHONPATH=\"$HOOK_DIR\"\n"
    assert run(files=[changed(SCRIPT, BASE, hook)]).status is Status.UNDECIDED  # the hook's content is not read yet
    hooked = run(files=[changed(SCRIPT, BASE, hook)], extra_files={HEAD: {"hooks/sitecustomize.py": "import vllm.envs\nvllm.envs.VLLM_X = 1\n"}})
    assert hooked.status is Status.FAIL


def test_echoed_words_and_dev_null_redirects_are_not_patches():
    head = BASE + 'echo "patched with git apply"\nif grep -q x "$f" 2>/dev/null; then echo ok; fi\n'
    assert run(files=[changed(SCRIPT, BASE, head)]).status is Status.PASS


def test_git_apply_inside_a_cloned_harness_checkout_is_not_a_patch():
    head = BASE + ("git clone https://github.com/NVIDIA/srt-slurm.git \"$SRT_REPO_DIR\"\ncd \"$SRT_REPO_DIR\" || exit 1\n"
                   "git show abc --format= -- src/srtctl/core/ip.sh | git apply - || exit 1\n")
    assert run(files=[changed(SCRIPT, BASE, head)]).status is Status.PASS
    engine = head.replace("NVIDIA/srt-slurm.git", "sgl-project/sglang.git")
    r = run(files=[changed(SCRIPT, BASE, engine)])
    decided(r, Status.FAIL, (RULE, SCRIPT, 4), only=True)
    assert "`git apply`" in r.findings[0].message  # how


def test_a_patcher_is_judged_by_what_it_writes():
    lib = "benchmarks/benchmark_lib.sh"
    call = ('_dir() {\n    cd "$(dirname "${BASH_SOURCE[0]}")/../utils/evals/patches" && pwd\n}\n'
            'python3 "$(_dir)/patch_agent.py"\n')
    eval_patcher = "import minisweagent.run as m\nsrc = open(m.__file__).read()\nopen(m.__file__, 'w').write(src)\n"
    engine_patcher = eval_patcher.replace("minisweagent.run", "vllm.v1.core")
    for patcher, status in ((eval_patcher, Status.PASS), (engine_patcher, Status.FAIL)):
        r = run(files=[changed(lib, "x=1\n", "x=1\n" + call)],
                extra_files={HEAD: {"utils/evals/patches/patch_agent.py": patcher}})
        assert r.status is status, r.reason
    assert needs(check10_engine_patches, ctx(files=[changed(lib, "x=1\n", "x=1\n" + call)])).files == (
        (HEAD, "utils/evals/patches/patch_agent.py"),)


def test_a_patcher_that_is_not_in_the_repository_cannot_be_decided():
    head = BASE + 'python3 "$(dirname "$0")/patch_vllm_batches.py"\n'
    path = "benchmarks/single_node/agentic/patch_vllm_batches.py"
    r = run(files=[changed(SCRIPT, BASE, head)], extra_files={HEAD: {path: None}})
    assert r.status is Status.FAIL and "runs patch_vllm_batches.py, which is not in the repository, so what it patches cannot be reviewed" in r.reason


def test_a_startup_hook_is_judged_by_its_content():
    client = ('cat > "$d/sitecustomize.py" <<\'PY\'\nfrom lm_eval.models import api_models as m\n'
              'm.TemplateAPI.x = 1\nPY\nexport PYTHONPATH="$d"\n')
    assert run(files=[changed(SCRIPT, BASE, BASE + client)]).status is Status.PASS
    engine = client.replace("lm_eval.models", "vllm.entrypoints")
    r = run(files=[changed(SCRIPT, BASE, BASE + engine)])
    assert r.status is Status.FAIL and "startup hook" in r.reason and "monkey-patches vllm" in r.reason


def test_an_inline_python_program_that_writes_engine_files_is_a_patch():
    head = BASE + ("fix() {\n    python3 -c '\nimport sglang.srt.layers as l\np = l.__file__\n"
                   "open(p, \"w\").write(\"x\")\n'\n}\nfix\n")
    r = run(files=[changed(SCRIPT, BASE, head)])
    assert r.status is Status.FAIL and "inline python program rewrites engine sources" in r.reason


def test_a_bind_mount_over_engine_source_in_a_job_file_is_a_patch():
    job = "benchmarks/multi_node/amd_utils/job.slurm"
    head = ('T="/sgl-workspace/sglang/python/sglang/srt/disaggregation/mori/conn.py"\n'
            'MOUNTS="-v ${PWD}/patches/conn.py:${T}:ro"\n'
            'docker run --rm $MOUNTS -v /tmp:/run_logs "$IMAGE" bash -c "sglang serve"\n')
    r = run(files=[changed(job, None, head)])
    decided(r, Status.FAIL, (RULE, job, 2), only=True)
    assert "bind-mounts" in r.findings[0].message  # how
    harmless = head.replace('T="/sgl-workspace/sglang/python/sglang/srt/disaggregation/mori/conn.py"', 'T="/data/x"')
    assert run(files=[changed(job, None, harmless)]).status is Status.PASS


def test_text_in_a_workflow_prompt_is_not_a_command():
    wf = ".github/workflows/run-sweep.yml"
    text = ("jobs:\n  classify:\n    steps:\n      - uses: anthropics/claude-code-action@v1\n        with:\n"
            "          prompt: |\n            Patchwork includes patch files, git apply, source mutation.\n"
            "      - run: |\n          echo ok\n          git apply fix.diff\n")
    r = run(files=[changed(wf, "jobs: {}\n", text)])
    assert r.status is Status.FAIL and r.findings[0].line == 10


def test_a_workflow_step_installs_on_the_runner_not_in_the_image():
    wf = ".github/workflows/test.yml"
    text = "jobs:\n  t:\n    steps:\n      - run: pip install --index-url https://download.pytorch.org/whl/cpu torch\n"
    assert run(files=[changed(wf, "jobs: {}\n", text)]).status is Status.PASS
    docker = "FROM vllm/vllm-openai:v0.11\nRUN pip install torch==2.9\n"
    assert run(files=[changed("docker/Dockerfile", None, docker)]).status is Status.FAIL


def test_deterministic():
    files = patch_files(waiver=TEMPLATE)
    assert run(files=files, comments=[LINKED]) == run(files=list(reversed(files)), comments=[LINKED])


@pytest.mark.parametrize("world", world_params())
def test_shared_world(world):
    assert_check_agrees(world, check10_engine_patches)



_ENGINE_FILE = "/opt/vllm/vllm/a.py"
_COMMAND_NAMES = ["git", "patch", "python", "python3.12", "bash", "sh", "zsh", "sed", "cp", "mv", "install", "ln",
                  "rsync", "tee", "rm", "truncate", "dd", "curl", "wget", "tar", "unzip", "pip", "pip3", "uv",
                  "docker", "podman", "srun", "enroot", "apptainer", "singularity", "nerdctl", "cat", "echo", "vllm"]
_COMMAND_ARGS = ["apply x.diff", "am x.patch", "-p1 -d /opt/vllm", "-i s/a/b/ " + _ENGINE_FILE, "install vllm",
                 "-m pip install vllm", "pip install sglang", "x.py " + _ENGINE_FILE, "apply_patches.sh", "patch.py",
                 "of=" + _ENGINE_FILE, "-o " + _ENGINE_FILE, "-O " + _ENGINE_FILE, "-xf a.tgz -C /opt/vllm/vllm",
                 "-d /opt/vllm/vllm a.zip", "run -v /a:/sgl-workspace/sglang/python img", "--mount=/a:/opt/vllm/vllm x",
                 "a.py /opt/x/sitecustomize.py", "a.pth /opt/x/", "--bind /a:/opt/vllm/vllm"]


def _no_file(path: str) -> str:
    raise KeyError(path)


def test_a_line_that_cannot_hold_a_site_holds_none():
    """`line_sites` does not read a line `_may_hold_site` rules out: reading it would find no site. Every
    command `_judge` reads, with arguments that make each a site, behind a path, a wrapper or a separator."""
    found = 0
    for name in _COMMAND_NAMES:
        for args in _COMMAND_ARGS:
            for code in (f"{name} {args}", f"/usr/bin/{name} {args}", f"sudo env A=1 timeout 10 {name} {args}",
                         f"{{ {name} {args}; }}", f"x: 1 && ({name} {args})", f"A=-v=/a:/opt/vllm/vllm {name} {args}"):
                sites = patch_sites.ScriptReader("x.yaml", Script(code), _no_file, patch_sites.MAX_DEPTH).sites().sites
                found += bool(sites)
                assert patch_sites._may_hold_site(code) or not sites, code
    assert found > len(_COMMAND_NAMES) * 6  # most of them are sites


_REDIRECTS = ["", "> " + _ENGINE_FILE, ">> /opt/x/sitecustomize.py", "2>/dev/null", "< a.txt", "&> /opt/vllm/x.pth"]


def _judged_both_ways(code: str) -> None:
    """`_judge` (which reads only the commands that may hold a site) gives what `_sites_of` gives every command."""
    reader = patch_sites.ScriptReader("x.sh", Script(code), _no_file)
    reader.vars = reader._variables()
    for call in reader.script.simple_commands:
        words = patch_sites._unwrap(call.words)
        name = patch_sites.posixpath.basename(words[0]) if words else ""
        assert reader._judge(call, words, None) == reader._sites_of(call, words, name, None), code


def test_a_command_judged_by_its_name_holds_the_sites_all_its_words_hold():
    for name in _COMMAND_NAMES + ["mkdir", "export", "grep", "x/tee", "./python"]:
        for args in _COMMAND_ARGS:
            for redirect in _REDIRECTS:
                for code in (f"{name} {args} {redirect}", f"sudo env A=1 timeout 10 {name} {args} {redirect}",
                             f"/usr/bin/{name} {args}"):
                    _judged_both_ways(code)


@settings(max_examples=300, deadline=None)
@given(name=st.text(alphabet="abcdeiklmnoprstuvyz3./_-", min_size=1, max_size=10),
       args=st.sampled_from(_COMMAND_ARGS), redirect=st.sampled_from(_REDIRECTS),
       wrapper=st.sampled_from(["", "sudo ", "nohup ", "env A=1 ", "timeout 5 ", "exec "]))
def test_any_command_is_judged_alike_by_name_or_by_every_word(name, args, redirect, wrapper):
    _judged_both_ways(f"{wrapper}{name} {args} {redirect}")


def test_a_script_read_once_reads_alike_for_the_scripts_that_run_it():
    """A reading `ScriptReader` shares (`shared`) is the one the script would get read anew at its depth: in
    any order of reading, whether the scripts run shell scripts in turn (then depth decides) or not."""
    files = {"a.sh": "bash b.sh\n", "b.sh": "bash c_patch.sh\ngit apply x.diff\n", "c_patch.sh": "bash d_patch.sh\n",
             "d_patch.sh": "git apply y.diff\n", "p.sh": "cd /opt/vllm && git apply z.diff\n", "q.sh": "bash p.sh\n",
             "r.sh": "bash q.sh\nbash a.sh\nbash gone_patch.sh\n"}

    def read(path: str) -> str:
        return files[path]

    for order in itertools.permutations(sorted(files), 4):
        texts: dict[str, Script] = {}
        shared: dict = {}

        def scripts(text: str) -> Script:
            return texts.setdefault(text, Script(text))

        for path in order + tuple(sorted(files)):
            reading = patch_sites.ScriptReader(path, scripts(files[path]), read, scripts=scripts, shared=shared).sites()
            assert reading == patch_sites.ScriptReader(path, Script(files[path]), read).sites(), (order, path)


def test_a_patch_behind_a_sizing_guard_every_changed_point_sets_otherwise_is_dormant():
    """A point's sizing decides a guard like any variable: every changed point runs without DP attention, so the
    pre-existing patch behind `DP_ATTENTION == true` is code no submitted config reaches."""
    guarded = BASE + 'if [[ "$DP_ATTENTION" == "true" ]]; then\n    ' + PATCH_LINE + "fi\n"
    files = [changed(SCRIPT, guarded, guarded + "export X=1\n")]
    assert run(files=files, **reaching(**{PATCHER: PATCHER_TEXT})).status is Status.PASS
    reached = guarded.replace('"$DP_ATTENTION" == "true"', '"$DP_ATTENTION" == "false"')
    files = [changed(SCRIPT, reached, reached + "export X=1\n")]
    assert run(files=files, **reaching(**{PATCHER: PATCHER_TEXT})).status is Status.FAIL
