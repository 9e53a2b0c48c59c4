"""Reads rows of the Service Authorization Reference copied verbatim under tests/data/iam/ (tests/data/iam/README.md):
the tests that pin the kit's IAM facts (neuronfleet.capacity.iam, neuronfleet.inference.scaling_iam) to them."""

from __future__ import annotations

import html
import re
from pathlib import Path

IAM_DATA = Path(__file__).resolve().parent / "data" / "iam"


def cells(rows: str, row_id: str) -> list[list[str]]:
    """The text of each cell of the row whose first cell has ``id=row_id`` and of its rowspan continuation rows:
    per cell, its paragraphs (or its whole text)."""
    start = rows.index(f'id="{row_id}"')
    start = rows.rindex("<tr", 0, start)
    nxt = re.compile(r'<tr>\s*<td id="').search(rows, start + 3)
    chunk = rows[start:nxt.start() if nxt else len(rows)]
    out = []
    for cell in re.findall(r"<td[^>]*>(.*?)</td>", chunk, re.S):
        paras = re.findall(r"<p>(.*?)</p>", cell, re.S) or [cell]
        out.append([t for t in (html.unescape(re.sub(r"<[^>]+>|\s+", " ", p)).strip() for p in paras) if t])
    return out


def action_row(rows: str, row_id: str) -> tuple[tuple[str, ...], tuple[str, ...], tuple[str, ...]]:
    """(resource types, condition keys, dependent actions) of an action's rows."""
    found = cells(rows, row_id)
    # first row: action, description, access level, resource types, condition keys, dependent actions;
    # each continuation row (rowspan): resource types, condition keys, dependent actions
    columns: list[list[str]] = [[], [], []]
    for i, cell in enumerate(found[3:]):
        columns[i % 3] += cell
    return tuple(columns[0]), tuple(columns[1]), tuple(columns[2])
