"""The one Markdown reader (checks/facts/markdown.py) and what the sign-off and the checklist template read with it."""

from __future__ import annotations

from checks.facts import markdown, signoff
from tests.builders import SIGNOFF_HEAD, comment

BODY = f"""{SIGNOFF_HEAD}
- [x] Verified one thing
  that wraps onto a second line
  - [ ] a sub-item
* [X] a starred item
1. [x] a numbered item
> - [x] a quoted item

```
- [x] an item in a code block
```

    - [x] an item indented into a code block

<!-- - [x] an item in an HTML comment -->
"""


def test_task_items_with_their_state_depth_and_line_and_nothing_a_reader_does_not_see_as_one():
    items = markdown.task_items(markdown.read(BODY))
    assert [(i.checked, i.text, i.depth, i.line) for i in items] == [
        (True, "Verified one thing that wraps onto a second line", 0, 2),
        (False, "a sub-item", 1, 4),
        (True, "a starred item", 0, 5),
        (True, "a numbered item", 0, 6),
    ]


def test_a_table_is_rows_of_cells_each_on_its_line():
    doc = markdown.read("# T\n\nintro\n| A | B |\n|---|:-:|\n| `x` | [y](z) |\n| 3 |\n\nafter\n")
    [table] = [b for b in doc.blocks if b.kind == "table"]
    assert table.rows == ((4, ("A", "B")), (6, ("`x`", "[y](z)")), (7, ("3", "")))
    assert [(b.kind, b.line) for b in doc.blocks] == [("heading", 1), ("paragraph", 3), ("table", 4),
                                                      ("paragraph", 9)]


def test_only_the_first_characters_are_read_cut_at_a_line_end():
    doc = markdown.read("- [x] a\n- [x] b\n- [x] c\n", limit=12)
    assert doc.lines == ("- [x] a",) and len(markdown.task_items(doc)) == 1


def test_links_become_their_text():
    assert markdown.unlink("see [MODELS.md](MODELS.md) and ![img](a.png)") == "see MODELS.md and img"


def signed(body: str) -> signoff.SignOff:
    return signoff.parse(comment(body))


def test_the_detail_section_runs_from_its_heading_to_signed_and_its_paragraphs_leave_code_out():
    s = signed(f"{SIGNOFF_HEAD}\n- [x] last item\n**Additional detail section**:\n- exception for key-a:\n"
               "  new hardware\n- see https://example.com/w.md.\n\n```\nexception for key-b\n```\nSigned: me\n")
    assert [i.text for i in s.items] == ["last item"]  # the heading runs on from the item: it ends it
    assert s.has_detail_section
    assert s.detail == "- exception for key-a:\n  new hardware\n- see https://example.com/w.md.\n\n```\n" \
                       "exception for key-b\n```"
    assert s.detail_paragraphs == ("- exception for key-a: new hardware", "- see https://example.com/w.md.")
    assert s.detail_links == ("https://example.com/w.md",)


def test_a_sign_off_without_a_detail_section_has_only_items():
    s = signed(f"{SIGNOFF_HEAD}\n- [x] one\n- [ ] two\n")
    assert [(i.checked, i.text) for i in s.items] == [(True, "one"), (False, "two")]
    assert (s.detail, s.has_detail_section, s.detail_paragraphs) == ("", False, ())


def test_the_template_is_the_fenced_block_under_the_template_heading_with_lines_of_the_file():
    text = ("# Checklist\n\n```\n- [ ] not the template\n```\n\n## Template\n```\n"
            f"{SIGNOFF_HEAD}\n- [ ] first\n  - [ ] sub\n\n### Additional detail section:\n- placeholder\n\n"
            "Signed: `X`\n```\n\n## Example\n- [ ] not the template either\n")
    t = signoff.template(text)
    assert t.line == 9 and t.detail == "- placeholder"
    assert [(i.text, i.depth, i.line) for i in t.items] == [("first", 0, 10), ("sub", 1, 11)]


def test_a_template_section_without_a_code_block_is_its_text_and_no_heading_is_no_template():
    t = signoff.template("## PR template\n- [ ] one\n- [ ] two\n## Next\n- [ ] other\n")
    assert t.line == 2 and [(i.text, i.line) for i in t.items] == [("one", 2), ("two", 3)]
    assert signoff.template("# Checklist\n- [ ] one\n") is None
    assert signoff.template("```\n## Template\n- [ ] one\n```\n") is None  # a heading in code is no heading


def test_table_rows_split_as_markdown_it_splits_them():
    """`split_cells` stands in for markdown-it's `escapedSplit` in the table rule: the same cells for every
    row, escaped pipes and backslash runs included, so a table reads as the stock parser reads it."""
    import itertools

    from markdown_it import MarkdownIt

    stock_split = markdown.stock_table.__globals__["escapedSplit"]
    for n in range(7):
        for chars in itertools.product("|\\a ", repeat=n):
            row = "".join(chars)
            assert markdown.split_cells(row) == stock_split(row), row
    stock = MarkdownIt("commonmark").enable("table").disable("inline")
    text = "| a \\| b | c | d |\n|---|:-:|---|\n| x\\|y | z\\\\\\|w | v \\\\| u |\n\npara | graph\n"
    fields = ("type", "map", "content")
    assert [[getattr(t, f) for f in fields] for t in markdown._markdown().parse(text)] == \
        [[getattr(t, f) for f in fields] for t in stock.parse(text)]
    assert markdown.read(text).blocks[0].rows[1][1] == ("x|y", "z\\\\|w", "v \\| u")


def test_a_lone_carriage_return_breaks_a_line_as_markdown_it_reads_it():
    """markdown-it takes CR LF and a lone CR as line breaks: the document's lines are cut at the same places,
    so every block's lines are lines of the document (a lone CR used to number blocks past its last line)."""
    body = BODY.replace("\n", "\r", 3)
    doc = markdown.read(body)
    assert doc.blocks == markdown.read(BODY).blocks and doc.lines == markdown.read(BODY).lines
    assert signoff.parse(comment(body)).items == signoff.parse(comment(BODY)).items
