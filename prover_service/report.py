"""One self-contained HTML page: sections of text, tables and PNG charts (embedded), no script, no
external resource, readable in any browser or from disk."""
from __future__ import annotations

import base64
import html
from dataclasses import dataclass, field
from typing import Sequence

_STYLE = """
body { font: 14px/1.45 system-ui, sans-serif; margin: 2em auto; max-width: 60em; color: #222; }
h1 { font-size: 1.5em; } h2 { font-size: 1.2em; margin-top: 2em; border-bottom: 1px solid #ccc; }
table { border-collapse: collapse; margin: 0.8em 0; } th, td { border: 1px solid #ccc; padding: 0.25em 0.6em; }
th { background: #f3f3f3; text-align: left; } td.n { text-align: right; font-variant-numeric: tabular-nums; }
img { max-width: 100%; border: 1px solid #eee; } p.note { color: #555; font-size: 0.92em; }
"""


@dataclass
class Table:
    headers: Sequence[str]
    rows: Sequence[Sequence[object]]


@dataclass
class Section:
    title: str
    paragraphs: list[str] = field(default_factory=list)
    tables: list[Table] = field(default_factory=list)
    images: list[tuple[str, bytes]] = field(default_factory=list)  # (alt text, PNG bytes)


def _cell(value: object) -> str:
    numeric = isinstance(value, (int, float)) and not isinstance(value, bool)
    text = f"{value:.4g}" if isinstance(value, float) else str(value)
    return f"<td{' class=n' if numeric else ''}>{html.escape(text)}</td>"


def render(title: str, sections: Sequence[Section]) -> str:
    """The page: a title, then each section's paragraphs, tables and images, in order."""
    out = ["<!DOCTYPE html>", '<html lang="en"><head><meta charset="utf-8">',
           f"<title>{html.escape(title)}</title><style>{_STYLE}</style></head><body>",
           f"<h1>{html.escape(title)}</h1>"]
    for section in sections:
        out.append(f"<section><h2>{html.escape(section.title)}</h2>")
        out += [f"<p>{html.escape(p)}</p>" for p in section.paragraphs]
        for table in section.tables:
            out.append("<table><thead><tr>" + "".join(f"<th>{html.escape(h)}</th>" for h in table.headers)
                       + "</tr></thead><tbody>")
            out += ["<tr>" + "".join(_cell(v) for v in row) + "</tr>" for row in table.rows]
            out.append("</tbody></table>")
        for alt, png in section.images:
            if png[:8] != b"\x89PNG\r\n\x1a\n":
                raise ValueError(f"image {alt!r} is not a PNG")
            data = base64.b64encode(png).decode("ascii")
            out.append(f'<p><img alt="{html.escape(alt, quote=True)}" src="data:image/png;base64,{data}"></p>')
        out.append("</section>")
    out.append("</body></html>")
    return "\n".join(out) + "\n"
