"""Survivors of the issue-26 mutation audit in the benchmark loaders' image helpers.

The loader survivors of that audit are pinned next to their loaders' other tests: showdown-clicks' id
(``test_showdown_bad_cells``), CAGUI's unreadable screenshot and VenusBench-GD's null label
(test_new_loaders.py), the records loader's swapped and fractional width/height (test_records.py).
"""

from __future__ import annotations

import base64
import io

import pytest
from PIL import Image

from gge.benchmarks.images import decode_base64


def _png() -> bytes:
    buf = io.BytesIO()
    Image.new("RGB", (3, 2)).save(buf, format="PNG")
    return buf.getvalue()


def test_decode_base64_reads_a_valid_cell() -> None:
    png = _png()
    assert decode_base64(base64.b64encode(png).decode("ascii")) == png


@pytest.mark.parametrize(
    "cell",
    [
        "iVBORw0KGgo*not*base64",  # without validate=True the '*' are dropped and 20 letters decode
        "iVBORw0K Ggo=",  # a space inside
        "iVBORw0KGgo",  # not padded to a multiple of 4
    ],
)
def test_decode_base64_refuses_what_is_not_base64(cell: str) -> None:
    with pytest.raises(OSError, match=r"^not base64: "):
        decode_base64(cell)
