"""The migration report's page in a real browser: headless Chromium loads it from a file (as from S3: no network),
parses its inline SVG as SVG, and paints every chart's series in its colour.

Skipped only when no Chromium binary is installed and NEURONFLEET_REQUIRE_BROWSER is not 1 (.ci/run installs Debian's
chromium and sets it, so CI fails rather than skips); the pure structure tests in tests/unit/test_report_page.py
always run and fail on a broken chart.
"""

from __future__ import annotations

import os
import re
import shutil
import struct
import subprocess
import zlib
from pathlib import Path

import pytest

from neuronfleet.lambdas.cost.logic import charts
from neuronfleet.lambdas.cost.logic.report_page import render_html
from tests.unit.test_report_page import judged, prod_report

BROWSER = next((b for b in ("chromium", "chromium-headless-shell", "google-chrome", "chrome") if shutil.which(b)), None)
REQUIRED = os.environ.get("NEURONFLEET_REQUIRE_BROWSER") == "1"
"""CI (.ci/run) installs Chromium and sets this: there the tests fail, not skip, without a browser."""
pytestmark = pytest.mark.skipif(BROWSER is None and not REQUIRED, reason=(
    "no Chromium binary on PATH (chromium, chromium-headless-shell, google-chrome): install one, e.g. apt-get install "
    "chromium"))


def chromium(*args: str, tmp: Path) -> subprocess.CompletedProcess[str]:
    assert BROWSER is not None
    return subprocess.run([BROWSER, "--headless", "--no-sandbox", "--disable-gpu", "--hide-scrollbars",
                           "--no-first-run", f"--user-data-dir={tmp / 'profile'}", *args],
                          capture_output=True, text=True, timeout=120)


def pixels(png: bytes) -> tuple[int, int, list[bytes]]:
    """A PNG's width, height and rows of RGB(A) bytes (8-bit, non-interlaced: what Chromium writes)."""
    assert png[:8] == b"\x89PNG\r\n\x1a\n"
    pos, idat, header = 8, b"", b""
    while pos < len(png):
        length, kind = struct.unpack(">I4s", png[pos:pos + 8])
        data = png[pos + 8:pos + 8 + length]
        header = data if kind == b"IHDR" else header
        idat += data if kind == b"IDAT" else b""
        pos += 12 + length
    width, height, depth, colour, _, _, interlace = struct.unpack(">IIBBBBB", header)
    assert depth == 8 and colour in (2, 6) and interlace == 0, (depth, colour, interlace)
    bpp = 4 if colour == 6 else 3
    raw, stride, rows, prev = zlib.decompress(idat), width * bpp, [], bytearray(width * bpp)
    for y in range(height):
        kind, line = raw[y * (stride + 1)], bytearray(raw[y * (stride + 1) + 1:(y + 1) * (stride + 1)])
        for i in range(stride):
            a = line[i - bpp] if i >= bpp else 0
            b, c = prev[i], prev[i - bpp] if i >= bpp else 0
            if kind == 1:
                line[i] = (line[i] + a) & 255
            elif kind == 2:
                line[i] = (line[i] + b) & 255
            elif kind == 3:
                line[i] = (line[i] + (a + b) // 2) & 255
            elif kind == 4:
                p = a + b - c
                pa, pb, pc = abs(p - a), abs(p - b), abs(p - c)
                line[i] = (line[i] + (a if pa <= pb and pa <= pc else b if pb <= pc else c)) & 255
        rows.append(bytes(line))
        prev = line
    return width, height, rows


def colour_counts(width: int, rows: list[bytes], colours: dict[str, str]) -> dict[str, int]:
    bpp = len(rows[0]) // width
    wanted = {name: bytes.fromhex(hex_.lstrip("#")) for name, hex_ in colours.items()}
    counts = dict.fromkeys(colours, 0)
    for r in rows:
        for i in range(0, len(r), bpp):
            px = r[i:i + 3]
            for name, rgb in wanted.items():
                if all(abs(px[k] - rgb[k]) <= 8 for k in range(3)):
                    counts[name] += 1
    return counts


@pytest.fixture(scope="module")
def page(tmp_path_factory: pytest.TempPathFactory) -> Path:
    path = tmp_path_factory.mktemp("report") / "migration-report.html"
    path.write_text(render_html(prod_report(verdicts=[judged()], synthetic="test figures")))
    return path


def test_chromium_parses_every_chart_as_svg(page: Path, tmp_path: Path) -> None:
    run = chromium("--dump-dom", page.as_uri(), tmp=tmp_path)
    assert run.returncode == 0, run.stderr[-2000:]
    dom = run.stdout
    assert dom.count("<svg") == page.read_text().count("<svg") >= 3  # spend per day, cost per million (2 units)
    for kind in ("spend-by-day", "unit-costs"):  # the standby share is a percentage now (its dollars are the net's)
        assert f'data-chart="{kind}"' in dom
    assert len(re.findall(r'data-series="(trainium|inferentia|gpu)"', dom)) >= 3


def test_chromium_paints_each_series_in_its_colour(page: Path, tmp_path: Path) -> None:
    shot = tmp_path / "report.png"
    # half scale: the pure-Python PNG decoder below reads a quarter of the pixels (a few seconds, not a minute)
    run = chromium(f"--screenshot={shot}", "--window-size=1000,2800", "--force-device-scale-factor=0.5",
                   page.as_uri(), tmp=tmp_path)
    assert run.returncode == 0 and shot.is_file(), run.stderr[-2000:]
    width, height, rows = pixels(shot.read_bytes())
    assert (width, height) == (500, 1400)
    counts = colour_counts(width, rows, {**charts.FAMILY_COLOURS, "neuron": charts.NEURON_COLOUR})
    assert all(n > 50 for n in counts.values()), counts  # every family's bars, and the Neuron bars, were painted

