"""`signoff-bot backtest` on a small git history built here: rows, output formats, and bad input."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from app.history import backtest

SCRIPT = "benchmarks/single_node/fixed_seq_len/m_fp8_h100.sh"
SERVE = "vllm serve $MODEL --tensor-parallel-size 8\n"
PATCH = "sed -i 's/a/b/' /usr/local/lib/python3.12/dist-packages/vllm/envs.py\n"


def git(repo: Path, *args: str, date: str = "2026-08-01T12:00:00+00:00") -> str:
    env = {**os.environ, "GIT_AUTHOR_NAME": "a", "GIT_AUTHOR_EMAIL": "a@x", "GIT_COMMITTER_NAME": "c",
           "GIT_COMMITTER_EMAIL": "c@x", "GIT_AUTHOR_DATE": date, "GIT_COMMITTER_DATE": date}
    return subprocess.run(["git", "-C", str(repo), *args], check=True, capture_output=True, text=True, env=env).stdout


def commit(repo: Path, files: dict[str, str], subject: str, date: str) -> str:
    for path, text in files.items():
        (repo / path).parent.mkdir(parents=True, exist_ok=True)
        (repo / path).write_text(text)
    git(repo, "add", "-A")
    git(repo, "commit", "-q", "-m", subject, date=date)
    return git(repo, "rev-parse", "HEAD").strip()


@pytest.fixture
def history(tmp_path) -> Path:
    """Three squash-merged PRs on main: a clean one, an engine patch, and a direct push without a PR number."""
    repo = tmp_path / "repo"
    repo.mkdir()
    git(repo, "init", "-q", "-b", "main")
    commit(repo, {"README.md": "x\n", SCRIPT: SERVE}, "Initial import", "2026-07-01T10:00:00+00:00")
    commit(repo, {SCRIPT: SERVE + "export VLLM_LOGGING_LEVEL=DEBUG\n"}, "Tune logging (#11)", "2026-07-20T10:00:00+00:00")
    commit(repo, {SCRIPT: SERVE + PATCH}, "Patch the engine (#12)", "2026-08-02T10:00:00+00:00")
    commit(repo, {"README.md": "y\n"}, "Fix a typo", "2026-08-03T10:00:00+00:00")
    return repo


def cli(*args: str) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "app.cli", "backtest", *args], capture_output=True, text=True,
                          timeout=120)


def test_every_squash_merged_pr_is_a_row_with_the_content_checks(history):
    out = cli(str(history), "--json")
    assert out.returncode == 0, out.stderr
    data = json.loads(out.stdout)
    assert [p["number"] for p in data["prs"]] == [11, 12]
    clean, patched = data["prs"]
    assert clean["verdict"] == "PASS" and clean["title"] == "Tune logging"
    assert clean["merged_at"] == "2026-07-20T10:00:00Z" and len(clean["commit"]) == 40
    assert sorted(clean["checks"], key=int) == [str(n) for n in range(6, 13)]
    assert set(clean["lint"]) == {"status", "blocking", "reason"} and clean["lint"]["blocking"] is False
    assert patched["verdict"] == "REJECTED" and patched["checks"]["10"]["status"] == "FAIL"
    assert patched["checks"]["10"]["reason"].startswith(f"{SCRIPT}:2 rewrites files of the installed engine")
    assert data["summary"]["prs"] == 2 and data["summary"]["rejected"] == 1
    assert data["summary"]["check_failures"]["10"] == 1 and "not backtested" in data["summary"]["not_backtested"]
    assert "backtest: 2/2 #12" in out.stderr  # the progress line


def test_the_window_and_the_table_and_the_report(history, tmp_path):
    out = cli(str(history), "--since", "2026-08-01", "--report", str(tmp_path / "report.md"))
    assert out.returncode == 0, out.stderr
    assert "   #12" in out.stdout and "#11" not in out.stdout and "check 10" in out.stdout
    assert "1 PRs: 0 PASS, 1 REJECTED" in out.stdout
    report = (tmp_path / "report.md").read_text()
    assert "## FAILs and UNDECIDEDs per check" in report and "| 10 | 1 | 0 |" in report
    assert "### #12 Patch the engine" in report and f"`{SCRIPT}:2` [engine-patch]" in report
    until = json.loads(cli(str(history), "--until", "2026-07-31", "--json").stdout)
    assert [p["number"] for p in until["prs"]] == [11]


def test_bad_input_is_named(history, tmp_path):
    not_repo = cli(str(tmp_path))
    assert not_repo.returncode == 2 and "is not a git repository" in not_repo.stderr
    bad_date = cli(str(history), "--since", "last week")
    assert bad_date.returncode == 2 and "not a date: 'last week' (expected YYYY-MM-DD)" in bad_date.stderr


def test_a_commit_whose_files_cannot_be_read_is_named_and_the_others_are_reported(history):
    blob = git(history, "rev-parse", f"HEAD~1:{SCRIPT}").strip()  # the script as PR #12 left it
    (history / ".git" / "objects" / blob[:2] / blob[2:]).unlink()
    out = cli(str(history), "--json")
    assert out.returncode == 0
    rows = {p["number"]: p for p in json.loads(out.stdout)["prs"]}
    assert rows[11]["verdict"] == "PASS"
    assert rows[12]["verdict"] == "ERROR" and "cannot be read" in rows[12]["error"]
    assert "#12:" in out.stderr and "cannot be read" in out.stderr


def test_one_reader_or_several_give_the_same_rows(history):
    assert [r.to_json() for r in backtest.backtest(history, workers=1)] == \
           [r.to_json() for r in backtest.backtest(history, workers=2)]


WAIVER = """# Engine patch waiver for #13

## What is patched
m_fp8_h100.sh rewrites vllm/envs.py in the installed engine to change one default.

## Why the unmodified image cannot run it
The released image reads the old default and crashes on this model at start-up.

## Removal plan
Remove the patch once https://github.com/vllm-project/vllm/pull/12345 ships in a release image.
"""


@pytest.fixture
def waived_and_undecided(tmp_path) -> Path:
    """A PR that patches the engine and files its waiver (#13); one whose override reads a variable (#14)."""
    repo = tmp_path / "repo"
    repo.mkdir()
    git(repo, "init", "-q", "-b", "main")
    commit(repo, {"README.md": "x\n", SCRIPT: SERVE}, "Initial import", "2026-07-01T10:00:00+00:00")
    commit(repo, {SCRIPT: SERVE + PATCH, "docs/waiver/13.md": WAIVER}, "Patch with a waiver (#13)",
           "2026-08-02T10:00:00+00:00")
    commit(repo, {SCRIPT: 'HF="$1"\n' + SERVE.rstrip("\n") + ' --hf-overrides "$HF"\n'}, "Override (#14)",
           "2026-08-03T10:00:00+00:00")
    return repo


def test_a_waiver_the_history_holds_is_a_note_and_what_cannot_be_read_is_undecided(waived_and_undecided, tmp_path):
    out = cli(str(waived_and_undecided), "--json", "--report", str(tmp_path / "report.md"))
    assert out.returncode == 0, out.stderr
    data = json.loads(out.stdout)
    waived, override = data["prs"]
    assert waived["verdict"] == "PASS" and waived["checks"]["10"]["status"] == "PASS"
    assert waived["checks"]["10"]["notes"] == ["the sign-off must link docs/waiver/13.md"]
    assert override["verdict"] == "UNDECIDED" and override["checks"]["8"]["status"] == "UNDECIDED"
    assert override["checks"]["8"]["reason"].startswith(f"cannot decide: {SCRIPT}:2")
    summary = data["summary"]
    assert (summary["passed"], summary["rejected"], summary["undecided"]) == (1, 0, 1)
    assert summary["check_undecided"]["8"] == 1 and summary["check_failures"]["8"] == 0 and summary["notes"] == 1
    report = (tmp_path / "report.md").read_text()
    assert "**0 REJECTED**, **1 UNDECIDED**" in report and "| 8 | 0 | 1 |" in report
    assert "## Undecided PRs\n\n### #14 Override" in report
    assert "- #13 check 10: the sign-off must link docs/waiver/13.md" in report
    table = cli(str(waived_and_undecided)).stdout
    assert "2 PRs: 1 PASS, 0 REJECTED, 1 UNDECIDED, 0 unreadable" in table
