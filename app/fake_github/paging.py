"""Pagination as GitHub does it: `per_page` (default 30, at most 100), `page`, and a
`Link` header with next/last/first/prev URLs that clients follow verbatim."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Sequence

from starlette.requests import Request

DEFAULT_PER_PAGE = 30
MAX_PER_PAGE = 100


@dataclass(frozen=True)
class Page:
    items: list[Any]
    total: int
    headers: dict[str, str]


def _int(value: str | None, default: int) -> int:
    try:
        return int(value) if value is not None else default
    except ValueError:
        return default


def paginate(request: Request, items: Sequence[Any]) -> Page:
    per_page = min(max(_int(request.query_params.get("per_page"), DEFAULT_PER_PAGE), 1), MAX_PER_PAGE)
    page = max(_int(request.query_params.get("page"), 1), 1)
    last = max((len(items) + per_page - 1) // per_page, 1)
    rels = []
    if page < last:
        rels += [("next", page + 1), ("last", last)]
    if page > 1:
        rels += [("prev", min(page - 1, last)), ("first", 1)]
    links = [f'<{request.url.include_query_params(page=n, per_page=per_page)}>; rel="{rel}"' for rel, n in rels]
    start = (page - 1) * per_page
    return Page(list(items[start:start + per_page]), len(items), {"Link": ", ".join(links)} if links else {})
