"""action.yml and examples/signoff-verify.yml: valid by GitHub's published schemas, clean by zizmor (offline),
least permissions, no event text in a `run:` line; and the action's steps run as a runner runs them.

A runner runs a composite action's `run:` steps with `bash --noprofile --norc -eo pipefail`, each with
its `env:` (expressions evaluated from the contexts), the runner's GITHUB_* variables and a file of its
own behind GITHUB_OUTPUT, whose `key=value` lines become `steps.<id>.outputs`. Here the `uses:` steps
are the runner's part: setup-python is the interpreter of a fresh virtual environment on PATH, and the
cache a miss on the first run and a hit on the second (the wheel directory kept). The one deviation:
pip is kept offline (PIP_NO_INDEX, no build isolation), and pip, setuptools and signoff-bot's
dependencies come from this test environment's site-packages (without signoff-bot itself), where a
runner downloads them.
"""

from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
import sys
import sysconfig
from pathlib import Path
from typing import Any

import pytest
import yaml

from app.fake_github import FakeGitHub

from .verifyhost import E2E_WORLD, PR, REPO, TOKEN, TOKENS, sticky_comments

ROOT = Path(__file__).resolve().parent.parent
ACTION = ROOT / "action.yml"
EXAMPLE = ROOT / "examples" / "signoff-verify.yml"
BIN = Path(sys.executable).parent
LEAST = {"contents": "read", "pull-requests": "write", "issues": "write", "checks": "write", "statuses": "write",
         "actions": "read"}
_EXPRESSION = re.compile(r"\$\{\{\s*([A-Za-z_][A-Za-z0-9_.-]*)\s*\}\}")


def tool(name: str) -> str:
    """A command of the test extra, from this environment."""
    found = shutil.which(name, path=str(BIN)) or shutil.which(name)
    assert found, f"{name} is not installed: pip install -e '.[test]'"
    return found


def load(path: Path) -> dict[str, Any]:
    return yaml.safe_load(path.read_text(encoding="utf-8"))


@pytest.mark.parametrize("path,schema", [(ACTION, "vendor.github-actions"), (EXAMPLE, "vendor.github-workflows")])
def test_githubs_schema_validates(path: Path, schema: str):
    done = subprocess.run([tool("check-jsonschema"), "--builtin-schema", schema, str(path)], capture_output=True,
                          text=True, timeout=120)
    assert done.returncode == 0, done.stdout + done.stderr


def test_zizmor_finds_nothing():
    done = subprocess.run([tool("zizmor"), "--offline", "--persona", "pedantic", "--no-progress", str(ACTION),
                           str(EXAMPLE)], capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stdout + done.stderr
    assert "No findings to report" in done.stdout


def _runs(document: dict[str, Any]) -> list[str]:
    steps = document.get("runs", {}).get("steps", []) + [
        s for job in (document.get("jobs") or {}).values() for s in job.get("steps", [])]
    return [s["run"] for s in steps if "run" in s]


@pytest.mark.parametrize("path", [ACTION, EXAMPLE])
def test_no_expression_is_expanded_in_a_run_line(path: Path):
    """Event text reaches a shell only through the environment, never spliced into the script."""
    runs = _runs(load(path))
    assert all("${{" not in run for run in runs)


def test_the_example_asks_for_the_least_permissions_and_its_triggers():
    workflow = load(EXAMPLE)
    assert workflow["permissions"] == {}
    [job] = workflow["jobs"].values()
    assert job["permissions"] == LEAST
    assert job["name"] != "codeowner-signoff-verify"  # its own check run would take the verifier's name
    triggers = workflow[True]  # YAML 1.1 reads the key `on` as True
    assert set(triggers) == {"issue_comment", "pull_request_review", "pull_request_review_comment",
                             "workflow_dispatch", "pull_request_target"}
    assert "comment_url" in triggers["workflow_dispatch"]["inputs"]
    [step] = job["steps"]
    assert re.fullmatch(r"[\w.-]+/signoff-bot@[0-9a-f]{40}", step["uses"])  # pinned to a commit


# --- the action's steps, run as a runner runs them ------------------------------------------------------


def evaluate(text: str, contexts: dict[str, str]) -> str:
    """`${{ a.b }}` replaced by its value (a step's output it did not set is "", as on GitHub); an expression
    the test does not know fails it."""
    def value(m: re.Match) -> str:
        name = m.group(1)
        if name.startswith("steps."):
            return contexts.get(name, "")
        assert name in contexts, f"expression {m.group(0)} is not provided by the test"
        return contexts[name]
    return _EXPRESSION.sub(value, text)


def dependencies_view(tmp: Path) -> Path:
    """This environment's site-packages without signoff-bot itself (its editable install)."""
    site = Path(sysconfig.get_paths()["purelib"])
    view = tmp / "dependencies"
    view.mkdir()
    for entry in site.iterdir():
        name = entry.name.lower()
        if name.startswith(("signoff_bot", "__editable__", "_signoff_bot", "easy-install")) or name.endswith(".pth"):
            continue
        (view / entry.name).symlink_to(entry)
    return view


def fresh_python(tmp: Path) -> Path:
    """A new virtual environment standing for setup-python's, whose pip, setuptools and signoff-bot's
    dependencies are this environment's (a .pth file)."""
    venv = tmp / "python"
    subprocess.run([sys.executable, "-m", "venv", "--without-pip", str(venv)], check=True, timeout=300)
    purelib = subprocess.run([str(venv / "bin" / "python"), "-c", "import sysconfig; print(sysconfig.get_paths()['purelib'])"],
                             check=True, capture_output=True, text=True).stdout.strip()
    Path(purelib, "dependencies.pth").write_text(str(dependencies_view(tmp)) + "\n", encoding="utf-8")
    return venv / "bin"


def action_checkout(tmp: Path) -> Path:
    """The action as a runner downloads it for `uses:`: the files this repository tracks, as they are here,
    and nothing a local run left beside them (a venv, caches, the Docker engine's data that .ci/run keeps
    in .ci/work: copying the whole tree copied that, gigabytes); its build writes there, not here."""
    listed = subprocess.run(["git", "ls-files", "-z"], cwd=ROOT, capture_output=True, check=True).stdout
    target = tmp / "action"
    for name in filter(None, listed.decode().split("\0")):
        source = ROOT / name
        if source.is_file():  # a tracked file deleted here is not part of the checkout
            (target / name).parent.mkdir(parents=True, exist_ok=True)
            shutil.copy2(source, target / name)
    return target


def run_action(tmp: Path, python_bin: Path, fake: FakeGitHub, event: dict, temp: Path,
               action_path: Path) -> tuple[dict[str, str], list]:
    """Every step of action.yml in order, until one fails; (the action's outputs, each run step's (name, exit
    code, stdout, stderr))."""
    action = load(action_path / "action.yml")
    event_path = tmp / "event.json"
    event_path.write_text(json.dumps(event), encoding="utf-8")
    runner = {"PATH": f"{python_bin}{os.pathsep}/usr/bin{os.pathsep}/bin", "HOME": str(tmp / "home"),
              "GITHUB_ACTIONS": "true", "CI": "true", "GITHUB_EVENT_NAME": "issue_comment",
              "GITHUB_EVENT_PATH": str(event_path), "GITHUB_REPOSITORY": REPO, "GITHUB_API_URL": fake.url,
              "GITHUB_ACTION_PATH": str(action_path), "RUNNER_OS": "Linux", "RUNNER_TEMP": str(temp),
              # offline: the only deviation from a runner (see the module's docstring)
              "PIP_NO_INDEX": "1", "PIP_NO_BUILD_ISOLATION": "0", "PIP_DISABLE_PIP_VERSION_CHECK": "1"}
    contexts = {"github.token": TOKEN, "github.action_path": str(action_path), "github.api_url": fake.url,
                "runner.temp": str(temp)}
    contexts.update({f"inputs.{name}": evaluate(str(spec.get("default", "")), contexts)
                     for name, spec in action["inputs"].items()})
    ran = []
    for n, step in enumerate(action["runs"]["steps"]):
        if "uses" in step:
            continue  # setup-python: python_bin; the cache: `temp` as the test keeps it
        assert step["shell"] == "bash"
        output = tmp / f"output-{n}"
        output.write_text("")
        env = {**runner, "GITHUB_OUTPUT": str(output),
               **{k: evaluate(str(v), contexts) for k, v in (step.get("env") or {}).items()}}
        script = tmp / f"step-{n}.sh"
        script.write_text(step["run"], encoding="utf-8")
        done = subprocess.run(["bash", "--noprofile", "--norc", "-eo", "pipefail", str(script)], env=env,
                              cwd=tmp, capture_output=True, text=True, timeout=600)
        ran.append((step.get("name", step.get("id")), done.returncode, done.stdout, done.stderr))
        for line in output.read_text().splitlines():
            key, _, value = line.partition("=")
            if step.get("id"):
                contexts[f"steps.{step['id']}.outputs.{key}"] = value
        if done.returncode != 0:
            break
    outputs = {name: evaluate(spec["value"], contexts) for name, spec in action["outputs"].items()}
    return outputs, ran


def test_the_actions_steps_run_as_a_runner_runs_them(tmp_path: Path):
    signoff = {"action": "created", "issue": {"number": PR, "pull_request": {"url": "…"}},
               "comment": {"id": 5001, "user": {"login": "nv-owner", "type": "User"}},
               "repository": {"full_name": REPO}, "sender": {"login": "nv-owner"}}
    python_bin = fresh_python(tmp_path)
    action = action_checkout(tmp_path)
    temp = tmp_path / "runner-temp"
    temp.mkdir()
    (tmp_path / "first").mkdir()
    (tmp_path / "second").mkdir()
    with FakeGitHub(E2E_WORLD, tokens=TOKENS) as fake:
        outputs, ran = run_action(tmp_path / "first", python_bin, fake, signoff, temp, action)
        names = [r[0] for r in ran]
        assert names == ["Name the wheel cache after this action's source", "Install signoff-bot",
                         "Verify the sign-off"], ran
        *setup, verify = ran
        assert all(code == 0 for _name, code, _out, _err in setup), setup
        assert verify[1] == 1, verify  # REJECTED: the step fails, as the verdict does
        assert "verdict comment created" in verify[2]
        assert outputs == {"verdict": "REJECTED"}
        [wheel] = (temp / "signoff-bot-wheel").glob("signoff_bot-*.whl")
        built = wheel.stat().st_mtime_ns

        # the next run: the cache restored the wheel, which is installed as it is; the comment is edited
        outputs, ran = run_action(tmp_path / "second", python_bin, fake, signoff, temp, action)
        assert [code for _n, code, _o, _e in ran] == [0, 0, 1] and outputs == {"verdict": "REJECTED"}
        assert wheel.stat().st_mtime_ns == built
        assert len(sticky_comments(fake)) == 1
        installed = subprocess.run([str(python_bin / "python"), "-c", "import app; print(app.__file__)"],
                                   cwd=tmp_path, capture_output=True, text=True, check=True).stdout
        assert str(ROOT) not in installed and str(action) not in installed  # the installed wheel ran


def run_verify_step(tmp: Path, fake: FakeGitHub, event: dict, inputs: dict[str, str]) -> tuple[int, str, str]:
    """The action's verify step alone, as a runner runs it (its `env:` from `inputs`, its `run:` line in bash),
    with this environment's signoff-bot on PATH; (exit code, stderr, what it wrote to GITHUB_OUTPUT)."""
    [step] = [s for s in load(ACTION)["runs"]["steps"] if s.get("id") == "verify"]
    event_path, output = tmp / "event.json", tmp / "output"
    event_path.write_text(json.dumps(event), encoding="utf-8")
    output.write_text("")
    contexts = {"github.api_url": fake.url, **{f"inputs.{k}": v for k, v in inputs.items()}}
    env = {"PATH": f"{BIN}{os.pathsep}/usr/bin{os.pathsep}/bin", "HOME": str(tmp), "GITHUB_ACTIONS": "true",
           "GITHUB_EVENT_NAME": "issue_comment", "GITHUB_EVENT_PATH": str(event_path), "GITHUB_REPOSITORY": REPO,
           "GITHUB_OUTPUT": str(output), **{k: evaluate(str(v), contexts) for k, v in step["env"].items()}}
    script = tmp / "step.sh"
    script.write_text(step["run"], encoding="utf-8")
    done = subprocess.run(["bash", "--noprofile", "--norc", "-eo", "pipefail", str(script)], env=env, cwd=tmp,
                          capture_output=True, text=True, timeout=600)
    return done.returncode, done.stderr, output.read_text()


SIGNOFF = {"action": "created", "issue": {"number": PR, "pull_request": {"url": "…"}},
           "comment": {"id": 5001, "user": {"login": "nv-owner", "type": "User"}},
           "repository": {"full_name": REPO}, "sender": {"login": "nv-owner"}}


def test_the_config_input_names_the_policy_file_read_at_the_base_branch(tmp_path: Path):
    """`config: ci/signoff.yml` is the policy: read from the repository at the base branch tip, as the App reads
    .github/signoff-bot.yml. That file renames the sign-off phrase, so the CODEOWNER's comment is no sign-off
    and nothing is verified; with the default input the same comment is verified (REJECTED). A value the
    event could write never reaches the script: it is the environment's, quoted."""
    world = shutil.copytree(E2E_WORLD, tmp_path / "world")
    (world / "trees" / "base" / "ci").mkdir()
    (world / "trees" / "base" / "ci" / "signoff.yml").write_text('signoff_phrase: "Signed off by a CODEOWNER"\n',
                                                                 encoding="utf-8")
    defaults = {name: str(spec.get("default", "")) for name, spec in load(ACTION)["inputs"].items()}
    assert defaults["config"] == ".github/signoff-bot.yml"
    with FakeGitHub(world, tokens=TOKENS) as fake:
        (tmp_path / "custom").mkdir()
        code, err, output = run_verify_step(tmp_path / "custom", fake, SIGNOFF,
                                            {"token": TOKEN, "config": "ci/signoff.yml"})
        assert (code, output) == (0, "verdict=NONE\n"), err
        assert fake.state.ledger.writes == []
        (tmp_path / "default").mkdir()
        code, err, output = run_verify_step(tmp_path / "default", fake, SIGNOFF,
                                            {"token": TOKEN, "config": defaults["config"]})
        assert (code, output) == (1, "verdict=REJECTED\n"), err
        (tmp_path / "outside").mkdir()
        code, err, output = run_verify_step(tmp_path / "outside", fake, SIGNOFF,
                                            {"token": TOKEN, "config": "../$(touch pwned)/x.yml"})
        assert code == 2 and "is not a path in the repository" in err, err
        assert not (tmp_path / "outside" / "pwned").exists()
