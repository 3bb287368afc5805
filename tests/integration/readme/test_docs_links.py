"""Every relative link in README.md and docs/*.md resolves: the file exists, and its ``#anchor`` is a heading.

Anchors follow GitHub's rule for a heading's slug: the heading's text (inline code and links reduced to
their text), lower-cased, punctuation other than ``-`` and ``_`` dropped, each space turned into ``-``;
a heading whose slug repeats gets ``-1``, ``-2``... Headings inside fenced code blocks are not headings.
"""

from __future__ import annotations

import re
from pathlib import Path

import pytest
from paths import ROOT

PAGES = [ROOT / "README.md", *sorted((ROOT / "docs").glob("*.md"))]
"""The Markdown files whose links are checked."""

LINK = re.compile(r"!?\[(?:[^\]\[]|\[[^\]]*\])*\]\(([^)\s]+)(?:\s+\"[^\"]*\")?\)")
"""An inline link or image: ``[text](target)`` or ``![alt](target "title")``."""


def outside_code(text: str) -> list[str]:
    """The lines of a Markdown text that are not inside a fenced code block.

    Args:
        text: The Markdown text.

    Returns:
        Its lines, fenced blocks (fence lines included) left out.
    """
    kept: list[str] = []
    fence: str | None = None
    for line in text.splitlines():
        mark = re.match(r"\s*(`{3,}|~{3,})", line)
        if mark:
            if fence is None:
                fence = mark.group(1)[0] * 3
            elif mark.group(1).startswith(fence):
                fence = None
            continue
        if fence is None:
            kept.append(line)
    return kept


def slug(heading: str) -> str:
    """GitHub's anchor for a heading's text.

    Args:
        heading: The heading's text, without the leading ``#`` marks.

    Returns:
        The anchor, without the ``#``.

    Example:
        >>> slug("Why two figures differ: `gge explain`")
        'why-two-figures-differ-gge-explain'
    """
    text = re.sub(r"!?\[([^\]]*)\]\([^)]*\)", r"\1", heading)  # a link counts by its text
    text = text.replace("`", "").strip().lower()
    text = re.sub(r"[^\w\- ]", "", text)
    return text.replace(" ", "-")


def anchors(path: Path) -> set[str]:
    """The anchors a Markdown file's headings give, duplicates numbered as GitHub numbers them.

    Args:
        path: The Markdown file.

    Returns:
        Every anchor of the file.
    """
    seen: dict[str, int] = {}
    out: set[str] = set()
    for line in outside_code(path.read_text(encoding="utf-8")):
        heading = re.match(r"#{1,6}\s+(.*?)\s*#*\s*$", line)
        if not heading:
            continue
        base = slug(heading.group(1))
        count = seen.get(base, 0)
        seen[base] = count + 1
        out.add(base if count == 0 else f"{base}-{count}")
    return out


def links(path: Path) -> list[str]:
    """The link targets of a Markdown file, outside code blocks and inline code.

    Args:
        path: The Markdown file.

    Returns:
        Each target as written.
    """
    found: list[str] = []
    for line in outside_code(path.read_text(encoding="utf-8")):
        line = re.sub(r"`[^`]*`", "", line)
        found += LINK.findall(line)
    return found


def relative(target: str) -> bool:
    """Whether a link target is inside the repository (not a URL or a mail address)."""
    return not re.match(r"[a-z][a-z0-9+.-]*:", target, re.IGNORECASE)


def test_the_pages_have_links() -> None:
    """The check sees the links (a regex that matched nothing would pass every page)."""
    readme = [t for t in links(ROOT / "README.md") if relative(t)]
    assert any(t.startswith("docs/") for t in readme), readme
    assert any(t.startswith("#") for t in readme), readme


@pytest.mark.parametrize("page", PAGES, ids=lambda p: p.relative_to(ROOT).as_posix())
def test_relative_links_resolve(page: Path) -> None:
    """Each relative link names a file of the repository and, with ``#anchor``, one of its headings."""
    broken: list[str] = []
    for target in links(page):
        if not relative(target):
            continue
        file_part, _, anchor = target.partition("#")
        dest = (page.parent / file_part).resolve() if file_part else page
        if not dest.exists():
            broken.append(f"{target}: no file {dest}")
            continue
        if ROOT not in dest.parents and dest != ROOT:
            broken.append(f"{target}: outside the repository")
            continue
        if anchor:
            if dest.suffix != ".md" or dest.is_dir():
                broken.append(f"{target}: an anchor into a file that is not Markdown")
            elif anchor not in anchors(dest):
                broken.append(f"{target}: no heading '#{anchor}' in {dest.relative_to(ROOT)}")
    assert not broken, "\n".join(broken)
