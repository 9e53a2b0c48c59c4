"""Charts of the migration report as inline SVG, drawn in Python: no script, no font or stylesheet from elsewhere, so
the page reads the same offline, from an S3 link and in a mail client that shows HTML.

Pure: data in, an SVG string out. Every text is XML-escaped. Each series is a ``<g data-series="...">`` and each mark
carries ``data-value`` (the figure it draws, as the report shows it), so a test reads the chart back as data.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from decimal import Decimal
from xml.sax.saxutils import escape, quoteattr

FAMILY_COLOURS = {"trainium": "#E69F00", "inferentia": "#0072B2", "gpu": "#D55E00"}
"""Okabe-Ito colours (told apart with the common colour-vision deficiencies): one per accelerator family."""
NEURON_COLOUR, GPU_COLOUR = "#0072B2", "#D55E00"
OTHER_COLOUR = "#999999"
FONT = "font-family=\"system-ui,-apple-system,'Segoe UI',Roboto,sans-serif\""
WIDTH = 760


def _t(text: object) -> str:
    return escape(str(text))


def _money(value: Decimal) -> str:
    """$1,234 for whole-dollar scales, $12.34 under $100, 4 significant digits under $1."""
    if value >= 100:
        return f"${value:,.0f}"
    if value >= 1:
        return f"${value:,.2f}"
    return f"${value:.4g}" if value else "$0"


def nice_ceiling(value: Decimal) -> Decimal:
    """The smallest 1, 2, 2.5 or 5 times a power of ten at or above ``value`` (the axis' top); 1 for 0."""
    if value <= 0:
        return Decimal(1)
    exponent = value.adjusted()
    for step in (Decimal(1), Decimal(2), Decimal("2.5"), Decimal(5), Decimal(10)):
        top = step.scaleb(exponent)
        if top >= value:
            return top
    return Decimal(10).scaleb(exponent)  # pragma: no cover: 10 x 10^e always reaches it


def _svg(height: int, title: str, body: str, *, kind: str) -> str:
    return (f'<svg xmlns="http://www.w3.org/2000/svg" viewBox="0 0 {WIDTH} {height}" width="{WIDTH}" '
            f'height="{height}" role="img" aria-label={quoteattr(title)} data-chart="{kind}" {FONT} font-size="12">'
            f"<title>{_t(title)}</title>{body}</svg>")


def _legend(items: Sequence[tuple[str, str]], x: int, y: int) -> str:
    out = []
    for label, colour in items:
        out.append(f'<rect x="{x}" y="{y - 10}" width="12" height="12" fill="{colour}"/>'
                   f'<text x="{x + 16}" y="{y}">{_t(label)}</text>')
        x += 24 + 7 * len(label)
    return "".join(out)


def spend_by_day(days: Sequence[str], by_family: Mapping[str, Sequence[Decimal]], *, title: str) -> str:
    """Stacked bars, one per day, one colour per family (``by_family[family][i]`` is ``days[i]``'s spend)."""
    families = [f for f in by_family if any(v > 0 for v in by_family[f])]
    totals = [sum((by_family[f][i] for f in families), Decimal(0)) for i in range(len(days))]
    top = nice_ceiling(max(totals, default=Decimal(0)))
    left, right, plot_top, plot_h = 70, 10, 30, 200
    plot_w = WIDTH - left - right
    slot = plot_w / max(len(days), 1)
    bar = max(slot * 0.75, 1.0)
    body = [_legend([(f, FAMILY_COLOURS.get(f, OTHER_COLOUR)) for f in families], left, 16)]
    for k in range(5):  # the axis: 0, 1/4, ... top
        value = top * k / 4
        y = plot_top + plot_h - plot_h * k / 4
        body.append(f'<line x1="{left}" x2="{WIDTH - right}" y1="{y:.1f}" y2="{y:.1f}" stroke="#ddd"/>'
                    f'<text x="{left - 6}" y="{y + 4:.1f}" text-anchor="end">{_t(_money(value))}</text>')
    base = [Decimal(0)] * len(days)
    for f in families:
        marks = []
        for i, day in enumerate(days):
            v = by_family[f][i]
            if v <= 0:
                continue
            h = float(v / top) * plot_h
            y = plot_top + plot_h - float(base[i] / top) * plot_h - h
            x = left + i * slot + (slot - bar) / 2
            marks.append(f'<rect x="{x:.1f}" y="{y:.1f}" width="{bar:.1f}" height="{h:.1f}" data-day="{_t(day)}" '
                         f'data-value="{v}"><title>{_t(day)}: {_t(f)} {_t(_money(v))}</title></rect>')
            base[i] += v
        body.append(f'<g data-series={quoteattr(f)} fill="{FAMILY_COLOURS.get(f, OTHER_COLOUR)}">{"".join(marks)}</g>')
    for i in sorted({0, len(days) // 2, len(days) - 1}) if days else ():
        x = left + i * slot + slot / 2
        anchor = "start" if i == 0 and len(days) > 1 else "end" if i == len(days) - 1 and i else "middle"
        x = left if anchor == "start" else WIDTH - right if anchor == "end" else x
        body.append(f'<text x="{x:.1f}" y="{plot_top + plot_h + 16}" text-anchor="{anchor}">{_t(days[i])}</text>')
    return _svg(plot_top + plot_h + 26, title, "".join(body), kind="spend-by-day")


@dataclass(frozen=True)
class UnitCost:
    """One model's pair of bars: the Neuron variant's cost per million units and the GPU's (None: nothing to draw,
    ``gpu_note`` says why)."""

    model: str
    neuron: Decimal | None
    gpu: Decimal | None
    gpu_note: str = ""


def unit_costs(rows: Sequence[UnitCost], *, unit: str, title: str) -> str:
    """Horizontal bars, Neuron above GPU, per model, on one scale; a missing figure is a line of text, not a bar."""
    left, right, row_h, bar_h = 150, 130, 46, 16
    plot_w = WIDTH - left - right
    top = nice_ceiling(max([v for r in rows for v in (r.neuron, r.gpu) if v is not None], default=Decimal(0)))
    body = [_legend([("Neuron", NEURON_COLOUR), ("GPU", GPU_COLOUR)], left, 16)]
    neuron_marks: list[str] = []
    gpu_marks: list[str] = []
    for i, r in enumerate(rows):
        y0 = 28 + i * row_h
        body.append(f'<text x="{left - 8}" y="{y0 + bar_h + 4}" text-anchor="end" font-weight="600">'
                    f"{_t(r.model)}</text>")
        for j, (value, marks, label) in enumerate(((r.neuron, neuron_marks, "Neuron"), (r.gpu, gpu_marks, "GPU"))):
            y = y0 + j * (bar_h + 2)
            if value is None:
                note = r.gpu_note if label == "GPU" else "no figure"
                body.append(f'<text x="{left + 4}" y="{y + 12}" fill="#555" font-style="italic">'
                            f"{_t(label)}: {_t(note)}</text>")
                continue
            w = max(float(value / top) * plot_w, 1.0)
            marks.append(f'<rect x="{left}" y="{y}" width="{w:.1f}" height="{bar_h}" data-model={quoteattr(r.model)} '
                         f'data-value="{value}"><title>{_t(r.model)}: {label} {_t(_money(value))} per million '
                         f"{_t(unit)}</title></rect>")
            body.append(f'<text x="{left + w + 6:.1f}" y="{y + 12}">{_t(_money(value))}/M</text>')
    body.append(f'<g data-series="neuron" fill="{NEURON_COLOUR}">{"".join(neuron_marks)}</g>'
                f'<g data-series="gpu" fill="{GPU_COLOUR}">{"".join(gpu_marks)}</g>')
    return _svg(36 + len(rows) * row_h, title, "".join(body), kind="unit-costs")
