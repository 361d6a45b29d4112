"""Where the recipe links of a sign-off are read from: a merged vllm-project/recipes or sgl-project/sglang pull
request, or a published recipes.vllm.ai / docs.sglang.io cookbook page (check 3 judges them; the fetcher reads
them ahead, `checks.anticipated`).

    accepted:  https://github.com/vllm-project/recipes/pull/7, https://recipes.vllm.ai/moonshotai/Kimi-K3,
               https://docs.sglang.io/cookbook/autoregressive/GLM/GLM-5.2
    ignored:   https://github.com/vllm-project/recipes/tree/main/models (a branch, not a merged document)
"""

from __future__ import annotations

import posixpath
import re
from urllib.parse import unquote, urlsplit

from checks.evidence import UpstreamTarget

MAX_LINKS = 8  # recipe links read per sign-off
RECIPE_ROOT = {"vllm-project/recipes": "", "sgl-project/sglang": "docs_new/"}  # where recipes live upstream
_PR_URL = re.compile(r"^/([^/]+)/([^/]+)/pull/(\d+)(?:/.*)?$")


def target(url: str) -> UpstreamTarget | None:
    """Where an accepted recipe link is read from; None for any other URL."""
    try:
        parts = urlsplit(url.strip())
    except ValueError:
        return None
    host = (parts.hostname or "").lower()
    path = unquote(parts.path)
    if parts.scheme not in ("http", "https") or ".." in path.split("/"):
        return None
    if host in ("github.com", "www.github.com"):
        m = _PR_URL.match(path)
        repo = f"{m.group(1)}/{m.group(2)}".lower() if m else ""
        if m and repo in RECIPE_ROOT:
            number = int(m.group(3))
            return UpstreamTarget(f"https://github.com/{repo}/pull/{number}", "pull", repo, number)
        return None
    if host == "recipes.vllm.ai":
        segments = [s for s in path.split("/") if s]
        if len(segments) >= 2:
            org, model = segments[0], segments[1]
            return UpstreamTarget(f"https://recipes.vllm.ai/{org}/{model}", "page", "vllm-project/recipes",
                                  paths=(f"models/{org}/{model}.yaml",))
        return None
    if host == "docs.sglang.io" and (path + "/").startswith("/cookbook/"):
        rest = re.sub(r"\.(html|md|mdx)$", "", path.strip("/"))
        base = posixpath.join("docs_new", rest)
        return UpstreamTarget(f"https://docs.sglang.io/{rest}", "page", "sgl-project/sglang",
                              paths=(f"{base}.mdx", f"{base}.md", f"{base}/index.mdx", f"{base}/index.md"))
    return None


def targets(links: tuple[str, ...]) -> tuple[UpstreamTarget, ...]:
    """The accepted recipe links among `links`, deduplicated, in order (at most MAX_LINKS)."""
    out: list[UpstreamTarget] = []
    for url in links:
        t = target(url)
        if t is not None and t.url not in {o.url for o in out}:
            out.append(t)
    return tuple(out[:MAX_LINKS])


def upstream_mentions(links: tuple[str, ...]) -> list[str]:
    """Links into the recipe repositories that are not accepted kinds (branches, commits, files)."""
    return [u for u in links if target(u) is None and re.search(
        r"github\.com/(vllm-project/recipes|sgl-project/sglang)\b", u, re.IGNORECASE)]
