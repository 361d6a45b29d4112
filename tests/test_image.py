"""The Docker image, built and run by a real engine: non-root, healthy, its database in the volume, and a
signed delivery from the fake GitHub (on the host, reached through the host's network) answered and
verified. docker-compose.yml is checked by Compose itself.

The image is built from the Dockerfile with BASE = $SIGNOFF_BOT_IMAGE_BASE (python:3.11-slim by default;
.ci/run builds a stand-in from Debian's packages where Docker Hub cannot be reached). Without a reachable
engine the tests are skipped, saying why; in CI (CI=true) they fail instead.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import uuid
from collections.abc import Iterator
from pathlib import Path

import httpx
import pytest

from .apphost import E2E_WORLD, KEY, REPO, SECRET, Stack, free_port
from .databases import query

pytestmark = pytest.mark.slow

ROOT = Path(__file__).resolve().parent.parent
BASE = os.environ.get("SIGNOFF_BOT_IMAGE_BASE", "python:3.11-slim")
IMAGE = "signoff-bot:test"
PR, HEAD, SIGNOFF_ID = 42, "b2" * 20, 5001
BUILD_SECONDS = 900
# The legacy builder: Debian's docker.io has no buildx, and a newer client without it refuses to build
# with BuildKit. The Dockerfile needs nothing BuildKit alone has.
DOCKER_ENV = {**os.environ, "DOCKER_BUILDKIT": "0"}


def in_ci() -> bool:
    return os.environ.get("CI", "").lower() == "true"


def missing(reason: str) -> None:
    if in_ci():
        pytest.fail(f"the image must be built and run in CI, but {reason}")
    pytest.skip(reason)


def docker(*args: str, timeout: float = 120, check: bool = True) -> subprocess.CompletedProcess:
    done = subprocess.run(["docker", *args], capture_output=True, text=True, timeout=timeout, env=DOCKER_ENV)
    if check and done.returncode != 0:
        raise AssertionError(f"docker {' '.join(args[:2])} failed ({done.returncode}): {done.stderr[-3000:]}")
    return done


def engine_unavailable() -> str | None:
    if shutil.which("docker") is None:
        return "no docker client (apt-get install docker.io)"
    done = subprocess.run(["docker", "version"], capture_output=True, text=True, timeout=30)
    if done.returncode != 0:
        said = [line.strip() for line in done.stderr.splitlines() if line.strip()]
        return f"no docker engine reachable ({said[-1] if said else f'docker version: exit {done.returncode}'})"
    return None


@pytest.fixture(scope="module")
def image() -> str:
    reason = engine_unavailable()
    if reason:
        missing(reason)
    # the host's network: the build reaches Debian and PyPI whether or not the engine has a NAT bridge
    docker("build", "--network", "host", "--build-arg", f"BASE={BASE}", "-t", IMAGE, str(ROOT),
           timeout=BUILD_SECONDS)
    return IMAGE


@pytest.fixture
def fake_github(tmp_path: Path) -> Iterator[tuple[str, int]]:
    """The fake GitHub on the host's loopback, sending webhooks to the App's port; (its URL, that port)."""
    app_port, fake_port = free_port(), free_port()
    fake = subprocess.Popen(
        [sys.executable, "-m", "app.cli", "fake-github", str(E2E_WORLD), "--port", str(fake_port),
         "--webhook-url", f"http://127.0.0.1:{app_port}/webhook", "--webhook-secret", SECRET],
        stdout=subprocess.PIPE, stderr=open(tmp_path / "fake.log", "wb"), text=True)
    try:
        url = fake.stdout.readline().strip()
        assert url.startswith("http://127.0.0.1:"), "the fake GitHub did not start"
        yield url, app_port
    finally:
        fake.terminate()
        fake.wait(10)


def get(url: str) -> int:
    try:
        return httpx.get(url, timeout=2).status_code
    except httpx.HTTPError:
        return 0


def test_the_image_leaves_no_build_leftovers(image: str) -> None:
    """Only what the wheel installed: no source tree, no build/ directory, no wheel."""
    done = docker("run", "--rm", image, "sh", "-c",
                  "ls -d /app /src /build /tmp/wheels /data/build 2>/dev/null; python -c 'import app, checks, templates'",
                  check=False)
    assert (done.returncode, done.stdout) == (0, ""), done.stderr


def test_the_image_runs_as_a_non_root_user_turns_healthy_and_verifies_a_signed_delivery(
        image: str, fake_github: tuple[str, int]) -> None:
    fake_url, port = fake_github
    name = f"signoff-bot-test-{uuid.uuid4().hex[:8]}"
    volume = docker("volume", "create", name).stdout.strip()
    env = {"SIGNOFF_BOT_APP_ID": "1", "SIGNOFF_BOT_PRIVATE_KEY": KEY, "SIGNOFF_BOT_WEBHOOK_SECRET": SECRET,
           "SIGNOFF_BOT_GITHUB_URL": fake_url, "SIGNOFF_BOT_PORT": str(port), "SIGNOFF_BOT_LEASE_SECONDS": "3",
           "SIGNOFF_BOT_RECONCILE_SECONDS": "3600"}
    try:
        docker("run", "-d", "--name", name, "--network", "host", "-v", f"{volume}:/data",
               "--health-interval", "1s", "--health-retries", "3",  # the image's check, run sooner than 30 s
               *[a for k, v in env.items() for a in ("-e", f"{k}={v}")], image)
        app = f"http://127.0.0.1:{port}"
        state = lambda: json.loads(docker("inspect", "--format", "{{json .State}}", name).stdout)  # noqa: E731
        Stack.wait(lambda: get(f"{app}/healthz") == 200 or not state()["Running"], 120, "/healthz")
        assert state()["Running"], docker("logs", name, check=False).stderr[-3000:]
        Stack.wait(lambda: get(f"{app}/readyz") == 200, 60, "/readyz")
        Stack.wait(lambda: state()["Health"]["Status"] == "healthy", 60, "the image's health check")

        status = docker("exec", name, "cat", "/proc/1/status").stdout  # the server itself, not only `exec`
        assert [line.split()[1:] for line in status.splitlines() if line.startswith("Uid:")] == [["10001"] * 4]
        delivered = httpx.post(f"{fake_url}/_fake/deliver", timeout=60,
                               json={"repo": REPO, "event": "issue_comment", "id": SIGNOFF_ID}).json()
        assert delivered["status"] == 202, delivered

        def verdicts() -> list[dict]:
            comments = httpx.get(f"{fake_url}/repos/{REPO}/issues/{PR}/comments", timeout=30).json()
            return [c for c in comments if c["body"].startswith(f"<!-- codeowner-signoff-verify sha={HEAD}")]

        Stack.wait(verdicts, 120, "the verdict comment")
        assert len(verdicts()) == 1
        mountpoint = Path(docker("volume", "inspect", "--format", "{{.Mountpoint}}", volume).stdout.strip())
        db = mountpoint / "signoff-bot.db"
        assert db.is_file(), "the database is in the volume"
        assert PR in [pr for (pr,) in query(str(db), "SELECT pr FROM audit")], "the decision is in the volume's database"
    finally:
        if docker("ps", "-a", "-q", "--filter", f"name={name}", check=False).stdout.strip():
            print(docker("logs", name, check=False).stderr[-4000:])
        docker("rm", "-f", name, check=False)
        docker("volume", "rm", "-f", volume, check=False)


def test_docker_compose_yml_is_valid_compose() -> None:
    """Compose reads the file (`docker compose config`, or Debian's docker-compose) with the settings
    .env would give it."""
    env = {**os.environ, "POSTGRES_PASSWORD": "pw", "SIGNOFF_BOT_APP_ID": "1", "SIGNOFF_BOT_WEBHOOK_SECRET": "s",
           "SIGNOFF_BOT_PRIVATE_KEY_PATH": str(ROOT / "README.md")}  # any readable file stands for the key
    if shutil.which("docker") and subprocess.run(["docker", "compose", "version"], capture_output=True).returncode == 0:
        command = ["docker", "compose"]
    elif shutil.which("docker-compose"):
        command = ["docker-compose"]
    else:
        missing("neither `docker compose` nor docker-compose is installed (apt-get install docker-compose)")
    done = subprocess.run([*command, "-f", str(ROOT / "docker-compose.yml"), "config"], capture_output=True,
                          text=True, env=env, timeout=60, cwd=ROOT)
    assert done.returncode == 0, done.stderr
    assert "postgresql://signoff:pw@postgres:5432/signoff" in done.stdout
