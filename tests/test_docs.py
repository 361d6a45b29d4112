"""The documentation: docs/rules.md is what the rules' docstrings say, the README a front page, every link lands."""

from __future__ import annotations

import re
from pathlib import Path
from types import ModuleType

import pytest

from app.cli import main
from app.rule_docs import COMMAND, SECTIONS, RuleDocError, parse, render, slug
from checks import registry
from checks.result import Severity
from checks.rule import Rule

ROOT = Path(__file__).resolve().parent.parent
RULES_MD = ROOT / "docs" / "rules.md"
PAGES = [ROOT / "README.md", *sorted((ROOT / "docs").glob("*.md"))]


def test_docs_rules_md_is_generated_from_the_rules_docstrings():
    assert RULES_MD.read_text(encoding="utf-8") == render(), f"docs/rules.md is stale: run `{COMMAND}`"


def test_every_registered_rule_is_documented_in_the_one_shape():
    for rule in registry.RULES:
        doc = parse(rule)
        assert len(doc.sections) == len(SECTIONS), rule.id  # parse refuses any other shape
        assert doc.summary in render()


def _rule(doc: str) -> Rule:
    module = ModuleType("checks.example", doc)
    return Rule("example", 0, "example check", Severity.ERROR, lambda ctx: None, "check", module)


def test_a_docstring_out_of_shape_is_refused_naming_the_rule_and_what_is_missing():
    whole = "Check 0: x.\n\n" + "\n\n".join(f"## {s}\n\ntext" for s in SECTIONS)
    assert [h for h, _ in parse(_rule(whole)).sections] == list(SECTIONS)
    with pytest.raises(RuleDocError, match=r"rule example \(checks.example\).*missing: Failing example"):
        parse(_rule(whole.rsplit("## Failing example", 1)[0]))
    with pytest.raises(RuleDocError, match="outside every section"):
        parse(_rule("Check 0: x.\n\nloose text\n\n" + whole.split("\n\n", 1)[1]))
    with pytest.raises(RuleDocError, match="empty section"):
        parse(_rule(whole.replace("## Why\n\ntext", "## Why\n")))


def test_the_command_writes_the_page_and_check_says_when_it_is_stale(tmp_path, capsys):
    out = tmp_path / "docs" / "rules.md"
    assert main(["docs", "rules", "--output", str(out), "--check"]) == 1
    assert f"missing: run `{COMMAND}`" in capsys.readouterr().err
    assert main(["docs", "rules", "--output", str(out)]) == 0
    assert out.read_text(encoding="utf-8") == render()
    assert main(["docs", "rules", "--output", str(out), "--check"]) == 0
    out.write_text(render().replace("## ", "## stale ", 1), encoding="utf-8")
    assert main(["docs", "rules", "--output", str(out), "--check"]) == 1
    assert f"stale: run `{COMMAND}`" in capsys.readouterr().err


def test_the_readme_is_a_front_page_with_the_two_set_up_commands():
    readme = (ROOT / "README.md").read_text(encoding="utf-8")
    assert len(readme.splitlines()) <= 150
    assert "pip install -e . && signoff-bot replay\n" in readme
    # .ci/run runs the README's test command: the two must stay the same
    assert "pip install -e '.[test]' && pytest -q\n" in readme
    assert "pip install -e '.[test]' && pytest -q\n" in (ROOT / ".ci" / "run").read_text(encoding="utf-8")


LINK = re.compile(r"\[[^\]]*\]\(([^)\s]+)\)")
FENCE = re.compile(r"^(```|~~~).*?^\1", re.M | re.S)


def anchors(text: str) -> set[str]:
    """The anchors GitHub gives a page's headings (a repeated one numbered -1, -2, ...)."""
    seen: dict[str, int] = {}
    found = set()
    for heading in re.findall(r"^#{1,6} (.+?)\s*$", FENCE.sub("", text), re.M):
        base = slug(heading)
        found.add(base if base not in seen else f"{base}-{seen[base]}")
        seen[base] = seen.get(base, 0) + 1
    return found


def broken_links(pages: list[Path], root: Path) -> list[str]:
    """Every relative link of `pages` (outside code blocks) whose file or heading does not exist."""
    broken = []
    for page in pages:
        text = page.read_text(encoding="utf-8")
        for target in LINK.findall(FENCE.sub("", text)):
            if re.match(r"[a-z]+:", target):
                continue
            path, _, anchor = target.partition("#")
            dest = (page.parent / path).resolve() if path else page
            if not dest.exists():
                broken.append(f"{page.relative_to(root)}: {target} (no such file)")
            elif anchor and (dest.suffix != ".md" or anchor not in anchors(dest.read_text(encoding="utf-8"))):
                broken.append(f"{page.relative_to(root)}: {target} (no such heading)")
    return broken


def test_every_relative_link_of_the_readme_and_docs_lands_on_a_file_and_anchor():
    assert broken_links(PAGES, ROOT) == []


def test_a_link_to_a_missing_file_or_heading_is_named(tmp_path):
    (tmp_path / "a.md").write_text("# A page\n\n## Part\n\n## Part\n", encoding="utf-8")
    page = tmp_path / "b.md"
    page.write_text("[ok](a.md#part-1) [ok](#b) [gone](c.md) [no heading](a.md#part-2) [web](https://x.y/z)\n\n"
                    "# B\n\n```\n[in code](d.md)\n```\n", encoding="utf-8")
    assert broken_links([page], tmp_path) == ["b.md: c.md (no such file)", "b.md: a.md#part-2 (no such heading)"]
