"""report.html: the report's Markdown turned into one self-contained HTML page (charts as
base64 data: URIs, styles inline, no script and no request to the network).

It converts whatever Markdown the report's sections produce, so a section added later
appears in the page with no change here. The subset is the one the reports write:
`#`/`##`/`###` headings, pipe tables, `- ` lists, `![alt](path)` images, paragraphs, and
inline **bold**, *italic* and `code`.
"""

from __future__ import annotations

import base64
import html
import re

STYLE = """
body { font: 15px/1.45 system-ui, sans-serif; max-width: 1100px; margin: 2em auto;
       padding: 0 1em; color: #222; }
table { border-collapse: collapse; margin: 0.6em 0 1.2em; font-size: 13px; }
th, td { border: 1px solid #ccc; padding: 3px 8px; text-align: left; vertical-align: top; }
th { background: #f2f2f2; }
tr:nth-child(even) td { background: #fafafa; }
code { background: #f2f2f2; padding: 0 3px; }
img { max-width: 100%; border: 1px solid #ddd; margin: 0.5em 0; }
h1 { font-size: 1.6em; } h2 { margin-top: 1.6em; border-bottom: 1px solid #ddd; }
"""
_IMAGE = re.compile(r"^!\[([^\]]*)\]\(([^)]+)\)$")


def _inline(text: str) -> str:
    """Escape, then **bold**, *italic*, `code` (escaped pipes \\| become |)."""
    out = html.escape(text.replace("\\|", "|"), quote=False)
    out = re.sub(r"`([^`]+)`", r"<code>\1</code>", out)
    out = re.sub(r"\*\*([^*]+)\*\*", r"<strong>\1</strong>", out)
    return re.sub(r"(?<![\w*])\*([^*\s][^*]*)\*(?![\w*])", r"<em>\1</em>", out)


def _cells(line: str) -> list[str]:
    # split on pipes that are not escaped (\|), then drop the outer empty cells
    parts = re.split(r"(?<!\\)\|", line.strip())
    return [p.strip() for p in parts[1:-1]]


def _table(lines: list[str]) -> str:
    head, body = _cells(lines[0]), [_cells(ln) for ln in lines[2:]]
    rows = ["<tr>" + "".join(f"<th>{_inline(c)}</th>" for c in head) + "</tr>"]
    rows += ["<tr>" + "".join(f"<td>{_inline(c)}</td>" for c in cells) + "</tr>"
             for cells in body]
    return "<table>\n" + "\n".join(rows) + "\n</table>"


def _image(alt: str, path: str, images: dict[str, bytes]) -> str:
    png = images.get(path)
    if png is None:  # never a link to a file beside the page: it must stand alone
        return f"<p><em>[{html.escape(alt)}: not drawn]</em></p>"
    data = base64.b64encode(png).decode("ascii")
    return f'<img alt="{html.escape(alt)}" src="data:image/png;base64,{data}">'


def body(markdown: str, images: dict[str, bytes]) -> str:
    """The HTML of `markdown`; `images` maps each image path in it to its PNG bytes."""
    out: list[str] = []
    lines = markdown.splitlines()
    i = 0
    while i < len(lines):
        line = lines[i]
        if not line.strip():
            i += 1
        elif heading := re.match(r"^(#{1,3}) (.*)$", line):
            level = len(heading.group(1))
            out.append(f"<h{level}>{_inline(heading.group(2))}</h{level}>")
            i += 1
        elif line.startswith("|"):
            block = []
            while i < len(lines) and lines[i].startswith("|"):
                block.append(lines[i])
                i += 1
            out.append(_table(block))
        elif line.startswith("- "):
            items = []
            while i < len(lines) and lines[i].startswith("- "):
                items.append(f"<li>{_inline(lines[i][2:])}</li>")
                i += 1
            out.append("<ul>" + "".join(items) + "</ul>")
        elif image := _IMAGE.match(line.strip()):
            out.append(_image(image.group(1), image.group(2), images))
            i += 1
        else:
            para = []
            while i < len(lines) and lines[i].strip() and not re.match(r"^(#|\||- |!\[)", lines[i]):
                para.append(lines[i])
                i += 1
            out.append(f"<p>{_inline(' '.join(para))}</p>")
    return "\n".join(out)


def page(markdown: str, images: dict[str, bytes], title: str) -> str:
    return ("<!DOCTYPE html>\n<html lang=\"en\">\n<head>\n<meta charset=\"utf-8\">\n"
            f"<title>{html.escape(title)}</title>\n<style>{STYLE}</style>\n</head>\n<body>\n"
            f"{body(markdown, images)}\n</body>\n</html>\n")
