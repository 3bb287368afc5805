"""Make ``docs/report.png``, the README's picture of a ``report.html``, with headless Chromium.

Usage (after ``python eval.py output_dir=outputs/demo``)::

    python docs/report_picture.py outputs/demo/report.html docs/report.png

It screenshots the page at 1280 px wide and stacks the top (summary, tables, charts of the first
benchmark) over the start of the gallery of misses, at 900 px wide.
"""

from __future__ import annotations

import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

from PIL import Image

GALLERY_BACKGROUND = (0xF1, 0xEC, 0xFA)


def main(page: Path, out: Path) -> None:
    """Screenshot ``page`` and write the stacked picture to ``out``."""
    browser = shutil.which("chromium") or shutil.which("chromium-browser") or shutil.which("google-chrome")
    if browser is None:
        raise SystemExit("needs Chromium (Debian: apt-get install chromium)")
    with tempfile.TemporaryDirectory() as tmp:
        shot = Path(tmp) / "full.png"
        subprocess.run(
            [
                browser,
                "--headless=new",
                "--no-sandbox",
                "--disable-gpu",
                "--disable-dev-shm-usage",
                f"--user-data-dir={tmp}/profile",
                "--hide-scrollbars",
                f"--screenshot={shot}",
                "--window-size=1280,16000",
                page.resolve().as_uri(),
            ],
            check=True,
            capture_output=True,
            timeout=120,
        )
        full = Image.open(shot).convert("RGB")
    w, h = full.size
    gallery = next(
        y for y in range(0, h, 4) if any(full.getpixel((x, y)) == GALLERY_BACKGROUND for x in range(0, w, 40))
    )
    top = full.crop((0, 0, w, 1500))
    bottom = full.crop((0, gallery, w, gallery + 900))
    stacked = Image.new("RGB", (w, top.height + bottom.height), "white")
    stacked.paste(top, (0, 0))
    stacked.paste(bottom, (0, top.height))
    small = stacked.resize((900, round(stacked.height * 900 / w)), Image.Resampling.LANCZOS)
    small.quantize(colors=192, method=Image.Quantize.MEDIANCUT).save(out, optimize=True)
    print(f"wrote {out} ({out.stat().st_size // 1024} KiB)")


if __name__ == "__main__":
    main(Path(sys.argv[1]), Path(sys.argv[2]))
