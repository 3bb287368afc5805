"""Mutation-audit pin: the default data check lists missing screenshots for a policy that reads them."""

from __future__ import annotations

import io

import pytest

from gge.errors import GgeError
from gge.models.registry import kind_of
from gge.types import Absent, Sample


class _Looks:
    needs_images = True

    def predict(self, samples: object) -> list[object]:
        return []


class _Blind:
    def predict(self, samples: object) -> list[object]:
        return []


def test_the_default_check_lists_missing_screenshots_of_a_policy_that_looks_at_them() -> None:
    samples = {"b": [Sample("b", "3", "/gone/a.png", (10, 10), "click", Absent())]}
    kind = kind_of("demo")
    with pytest.raises(GgeError, match=r"/gone/a\.png"):
        kind.check_data(_Looks(), samples, strict_images=True, out=io.StringIO())  # type: ignore[arg-type]
    out = io.StringIO()
    kind.check_data(_Blind(), samples, strict_images=True, out=out)  # type: ignore[arg-type]
    assert out.getvalue() == ""  # a policy that reads no screenshot needs none
