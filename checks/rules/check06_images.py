"""Check 6: vLLM/SGLang entries run upstream images, and vLLM/SGLang land before other engines.

## What it enforces

For every master-config entry the PR adds or changes:

(a) Upstream image. An entry of a vLLM or SGLang framework on an
    established SKU must run an image of an upstream Docker Hub org
    (`Policy.upstream_image_orgs`: `vllm/...`, `lmsysorg/...`), not a vendor
    fork (`rocm/sgl-dev`, `ghcr.io#...`).
(b) Engine-first ordering. An entry the PR adds for any other framework
    (trt, dynamo-trt, atom, ...) needs an entry of the vLLM/SGLang family for
    the same model prefix and SKU to exist already.

## Why

InferenceX publishes numbers the community can reproduce from upstream
releases, and asks providers to submit the upstream engines before their own.

## How it decides

The deterministic rules chosen where the spec asks for judgement:

- Framework family: a framework is vLLM/SGLang when one of its `-`-separated
  words is `vllm` or `sglang`: `vllm`, `sglang`, `vllm-disagg`,
  `sglang-disagg`, `dynamo-vllm`, `dynamo-sglang`, `llmd-vllm`. Dynamo and
  llm-d orchestrate the upstream engine, so their image is held to (a) and
  they satisfy (b). (PR #2554's dynamo-sglang entry runs `lmsysorg/sglang`
  and passes.) Any other framework is an additional engine.
- Image: `#` is read as `/`; a `docker.io/` (or `index.docker.io/`) registry
  prefix is dropped; a digest pin (`@sha256:...`) is fine. The org is the
  first path component; any other registry host (ghcr.io, nvcr.io, quay.io)
  is not Docker Hub, so not upstream.
- SKU family of a runner: strip a `cluster:` prefix, keep the text before
  the first `-` (`b200-nscale` -> b200, `cluster:mi355x-amds` -> mi355x).
  (a) applies on `Policy.established_skus`; other SKUs are new hardware.
- (b) applies to added entries, and to changed entries whose framework,
  model prefix or SKU family changed (a new submission under an old key).
  It is satisfied by any entry at head, in any master config, of the
  vLLM/SGLang family with the same `model-prefix` and SKU family
  (`b200` and `b200-multinode` are one SKU): the reading under which the
  LLM verifier passed InferenceX's GB300 submissions.
- Documented exception: the sign-off's additional detail section has a
  paragraph (a bullet is its paragraph; code does not count) that names the entry's config key or image
  and says `exception`, `exempt`, `new hardware` or `new model architecture`
  (not negated as "no exception" / "not an exception"). That item waives (a)
  and (b) for that entry.
- N/A when the PR adds or changes no master-config entry (removals only).

## Passing example

PR #2554:

    dsv4-fp4-b200-dynamo-sglang-mtp:
      image: lmsysorg/sglang:nightly-dev-cu13-20260710-cfc66e05
      runner: b200-nscale          # SKU b200, established
      framework: dynamo-sglang     # SGLang family, upstream org lmsysorg

## Failing example

    glm5.2-fp4-mi355x-sglang:
      image: rocm/sgl-dev:v0.5.16  # FAIL: vendor fork on established MI355X
      runner: mi355x
      framework: sglang
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from checks.context import Context
from checks.facts import hardware
from checks.facts.masterconfig import EntryChange, iter_fields
from checks.facts.yamlload import LineDict
from checks.result import CheckResult, Finding, Severity, Status

NUMBER = 6
NAME = "upstream image / ordering"

RULE_IMAGE = "upstream-image"
RULE_ORDER = "engine-first-ordering"

_UPSTREAM_WORDS = ("vllm", "sglang")
_DOCKER_HUB = ("docker.io", "index.docker.io", "registry-1.docker.io")
_EXCEPTION = re.compile(r"\b(?:exception|exempt(?:ion|ed)?|new hardware|new model architecture)\b", re.IGNORECASE)
_NEGATED = re.compile(r"\bno (?:exception|exemption)\b|\bnot (?:an? )?(?:exception|exempt)", re.IGNORECASE)


def is_upstream_framework(framework: str) -> bool:
    """Whether `framework` runs the vLLM or SGLang engine (see the module docstring)."""
    return any(word in _UPSTREAM_WORDS for word in framework.lower().split("-"))


def image_org(image: str) -> str | None:
    """The Docker Hub org of `image` (`#` read as `/`); None when it is on another registry or empty."""
    name = image.strip().strip("'\"").replace("#", "/").split("@", 1)[0]
    parts = name.split("/")
    if len(parts) > 1 and ("." in parts[0] or ":" in parts[0] or parts[0] == "localhost"):
        if parts[0].lower() not in _DOCKER_HUB:
            return None
        parts = parts[1:]
    if not parts or not parts[0]:
        return None
    return parts[0].lower() if len(parts) > 1 else "library"


@dataclass(frozen=True)
class _Entry:
    path: str
    key: str
    line: int
    image: str
    image_line: int
    framework: str
    prefix: str
    sku: str


def check(ctx: Context) -> CheckResult:
    changes = [c for c in ctx.changed_entries if c.status != "removed"]
    if not changes:
        return CheckResult(NUMBER, NAME, Status.NA, "the PR adds or changes no master-config entries")
    broken = [(c, c.error) for c in changes if c.error is not None]
    if broken:
        c, error = broken[0]
        return _fail([f"{c.path}:{error.line} does not parse ({error.message}); fix the YAML"],
                     [Finding(c.path, error.line, RULE_IMAGE, Severity.ERROR, f"malformed entry: {error.message}")])

    entries = [_entry(c) for c in changes]
    units = ctx.signoff.detail_paragraphs if ctx.signoff else ()
    policy = ctx.policy
    established = {s.lower() for s in policy.established_skus}
    orgs = {o.lower() for o in policy.upstream_image_orgs}
    upstream_by: dict[tuple[str, str], list[str]] | None = None  # scanned only when ordering must be decided

    problems: list[str] = []
    findings: list[Finding] = []
    notes: list[str] = []
    for change, e in zip(changes, entries):
        waived = _exception(e, units)
        if is_upstream_framework(e.framework):
            org = image_org(e.image)
            if e.sku not in established:
                notes.append(f"{e.key} is on {e.sku or 'an unnamed SKU'}, not an established SKU")
            elif org in orgs:
                notes.append(f"{e.key} runs upstream {e.image}")
            elif waived:
                notes.append(f"{e.key} runs {e.image or 'no image'} under the exception documented in the sign-off")
            else:
                what = f"runs non-upstream image {e.image}" if e.image else "names no image"
                msg = (f"{e.key} ({e.framework} on established {e.sku}) {what}; use an image from "
                       f"{_orgs_text(policy.upstream_image_orgs)} or document a new-hardware/new-architecture "
                       f"exception naming {e.key} in the sign-off's additional detail section")
                problems.append(f"{e.path}:{e.image_line} {msg}")
                findings.append(Finding(e.path, e.image_line, RULE_IMAGE, Severity.ERROR, msg))
        elif _new_submission(change, e):
            if upstream_by is None:
                upstream_by = _upstream_index(ctx)
            match = upstream_by.get((e.prefix, e.sku), [])
            if match:
                notes.append(f"{e.key}: engine-first ordering satisfied by {', '.join(match[:3])}")
            elif waived:
                notes.append(f"{e.key}: engine-first ordering waived by the exception documented in the sign-off")
            else:
                msg = (f"{e.key} adds {e.framework or 'a non-vLLM/SGLang framework'} for {e.prefix or '?'} on "
                       f"{e.sku or '?'} but no vLLM/SGLang entry for {e.prefix or '?'} on {e.sku or '?'} exists; "
                       f"land the vLLM/SGLang submission first or document a new-hardware/new-architecture "
                       f"exception naming {e.key} in the sign-off's additional detail section")
                problems.append(f"{e.path}:{e.line} {msg}")
                findings.append(Finding(e.path, e.line, RULE_ORDER, Severity.ERROR, msg))
        else:
            notes.append(f"{e.key} ({e.framework}) is not a new submission; ordering already settled")
    if problems:
        return _fail(problems, findings)
    more = f" (+{len(notes) - 3} more)" if len(notes) > 3 else ""
    return CheckResult(NUMBER, NAME, Status.PASS, "; ".join(notes[:3]) + more)


def _fail(problems: list[str], findings: list[Finding]) -> CheckResult:
    more = f" (+{len(problems) - 1} more)" if len(problems) > 1 else ""
    return CheckResult(NUMBER, NAME, Status.FAIL, problems[0] + more, tuple(sorted(set(findings))))


def _entry(change: EntryChange) -> _Entry:
    head = change.head or LineDict()  # parsed: entries that failed to parse are reported before

    def text(field: str) -> str:
        value = head.get(field)
        return "" if value is None or isinstance(value, (dict, list)) else str(value).strip()

    image_line = head.line_of("image") if "image" in head else change.line
    return _Entry(change.path, change.key, change.line, text("image"), image_line, text("framework"),
                  text("model-prefix").lower(), hardware.sku(text("runner")))


def _new_submission(change: EntryChange, e: _Entry) -> bool:
    """Added, or changed into another (framework, model prefix, SKU): ordering is decided anew."""
    if change.status == "added" or change.base is None:
        return True
    base = change.base
    before = (str(base.get("framework") or "").strip(), str(base.get("model-prefix") or "").strip().lower(),
              hardware.sku(str(base.get("runner") or "")))
    return before != (e.framework, e.prefix, e.sku)


def _upstream_index(ctx: Context) -> dict[tuple[str, str], list[str]]:
    """(model prefix, SKU family) -> keys of vLLM/SGLang-family entries at head, cheaply from raw fields."""
    index: dict[tuple[str, str], list[str]] = {}
    for _path, key, fields in iter_fields(ctx.head_configs):
        if is_upstream_framework(fields.get("framework", "")):
            slot = (fields.get("model-prefix", "").lower(), hardware.sku(fields.get("runner", "")))
            index.setdefault(slot, []).append(key)
    return {slot: sorted(keys) for slot, keys in index.items()}


def _exception(e: _Entry, units: tuple[str, ...]) -> bool:
    names = [e.key.lower()]
    if e.image:
        names += [e.image.lower(), e.image.lower().replace("#", "/")]
    for unit in units:
        low = unit.lower()
        if any(n in low for n in names) and _EXCEPTION.search(unit) and not _NEGATED.search(unit):
            return True
    return False


def _orgs_text(orgs: tuple[str, ...]) -> str:
    return " or ".join(f"{o}/..." for o in orgs) or "an upstream org"
