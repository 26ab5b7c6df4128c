"""A student's notebook made into data: what any page shows of it (the formgrader, feedback, the report,
JupyterLab) can hold no markup that runs, loads or pretends.

`clean_notebook(nb, course_cells)` rewrites a notebook in place and returns what it changed. The instructor's own
text stays as it is (a markdown cell whose text is exactly one of `course_cells`: `course_texts` of the course's
source notebook, every markdown cell there but the model answers); code is never touched (it is what is graded, and
every page shows it as code). Everything else is the student's:

* **markdown and raw cells**, and markdown outputs, keep their words: a `<` that would open a tag or an autolink
  gets an invisible word joiner after it (it reads `<img …>` and is text in every renderer, in code spans too);
  a link's or image's target is cut off from its text the same way (`[x](javascript:…)` stays readable and
  leads nowhere), except an image of one of the cell's own attachments; MathJax commands that make links, load
  extensions or set attributes (`\\href`, `\\require`, `\\class` …) are broken alike; bidirectional controls that
  reorder how a line reads become visible (`[U+202E]`); other control characters go; a cell longer than
  `MAX_TEXT` characters is cut, saying so;
* **outputs** keep plain text, PNG, JPEG and GIF images (checked to be what they say) and SVG drawings rebuilt from
  an allowlist of drawing elements and attributes (no script, no event handler, no link but to the drawing's own
  parts, no external reference, no entity); an HTML output holding one drawing (the cluster's picture) becomes
  that drawing as an image, any other HTML keeps its text and its tables (nothing else); JavaScript, widget views
  and any other type are dropped; every output's text is held to `MAX_OUTPUT` characters;
* **attachments** keep PNG, JPEG, GIF and cleaned SVG images under plain names;
* **metadata** keeps what nbgrader and JupyterLab need, in the shapes they expect (nbgrader's cell fields, the
  kernel's name, a cell's tags as plain words); the rest (widget state, a title, anything a template might print)
  goes.

The cleaning is idempotent: a clean notebook comes out unchanged.
"""
from __future__ import annotations

import base64
import binascii
import html
import math
import re
import uuid
from html.parser import HTMLParser
from typing import Any, Collection
from xml.etree.ElementTree import Element, ParseError

#: The invisible character that keeps a `<` or a `](` from being syntax.
JOINER = "\u2060"
#: The longest text a markdown or raw cell keeps, in characters.
MAX_TEXT = 20_000
#: The most characters one cell's outputs keep (the graded kernel's own cap).
MAX_OUTPUT = 200_000
#: The largest image an output or attachment keeps, in bytes (decoded).
MAX_IMAGE = 4 * 2**20
#: The largest SVG drawing kept, its deepest nesting and most elements.
MAX_SVG, MAX_SVG_DEPTH, MAX_SVG_ELEMENTS = 2 * 2**20, 40, 20_000

_TAG_START = re.compile(r"<(?=[A-Za-z/!?])")
_LINK_TARGET = re.compile(r"\](?=[(\[:])(?!\(attachment:([A-Za-z0-9._-]{1,100})\))")
_ATTACHED = re.compile(r"\]\(attachment:([A-Za-z0-9._-]{1,100})\)")
_MATHJAX = re.compile(r"\\(?=(?:href|url|unicode|class|cssId|style|require|data|html|mmlToken|toggle|texttip|"
                      r"tooltip|bbox|enclose|mathtip)(?![A-Za-z]))")
_BIDI = re.compile("[\u061c\u200e\u200f\u202a-\u202e\u2066-\u2069]")
_CONTROL = re.compile("[\x00-\x08\x0b\x0c\x0e-\x1f\x7f]")
_PLAIN_NAME = re.compile(r"[A-Za-z0-9._-]{1,100}")
_CELL_ID = re.compile(r"[A-Za-z0-9_-]{1,64}")
_GRADE_ID = re.compile(r"[A-Za-z0-9_-]{1,100}")
_WORD = re.compile(r"[A-Za-z0-9_.+-]{1,64}")
_CHECKSUM = re.compile(r"[0-9a-f]{16,128}")
_SVG = re.compile(r"<svg\b.*?</svg\s*>", re.DOTALL | re.IGNORECASE)
_MAGIC = {"image/png": (b"\x89PNG\r\n\x1a\n",), "image/jpeg": (b"\xff\xd8\xff",), "image/gif": (b"GIF87a", b"GIF89a")}


# --- text -------------------------------------------------------------------------------------------------------
def neutral_text(text: str) -> str:
    """Line ends made plain, control characters gone, bidirectional controls made visible."""
    text = text.replace("\r\n", "\n").replace("\r", "\n")
    text = _CONTROL.sub("", text)
    return _BIDI.sub(lambda m: f"[U+{ord(m.group(0)):04X}]", text)


def neutral_markdown(text: str, limit: int = MAX_TEXT, attachments: Collection[str] = ()) -> str:
    """Markdown whose every word still reads as written, but that opens no tag, autolink, link or MathJax command
    (see the module's docstring); an image of one of `attachments` (the cell's own) stays an image."""
    text = cut(neutral_text(text), limit)
    text = _TAG_START.sub("<" + JOINER, text)
    text = _LINK_TARGET.sub("]" + JOINER, text)
    text = _ATTACHED.sub(lambda m: m.group(0) if m.group(1) in attachments else "]" + JOINER + m.group(0)[1:], text)
    return _MATHJAX.sub("\\\\" + JOINER, text)


def neutral_latex(text: str) -> str:
    """LaTeX output without the MathJax commands that make links or load code."""
    return _MATHJAX.sub("\\\\" + JOINER, neutral_text(text))


def cut(text: str, limit: int) -> str:
    """Text held to `limit` characters in all, the last of them saying how much was cut."""
    if len(text) <= limit:
        return text
    keep = max(0, limit - 64)
    return (text[:keep] + f"\n[cut: {len(text) - keep} more characters]\n")[:max(limit, 0)]


def joined(value: Any) -> str | None:
    """A notebook's multiline string (a string or a list of strings) as one string; None when it is neither."""
    if isinstance(value, str):
        return value
    if isinstance(value, list) and all(isinstance(v, str) for v in value):
        return "".join(value)
    return None


# --- images -----------------------------------------------------------------------------------------------------
def clean_image(mime: str, data: Any) -> str | None:
    """A base64 PNG, JPEG or GIF image as one base64 string, when it decodes and starts as that format says."""
    text = joined(data)
    if text is None:
        return None
    compact = re.sub(r"\s+", "", text)
    if len(compact) > MAX_IMAGE * 4 // 3 + 4:
        return None
    try:
        raw = base64.b64decode(compact, validate=True)
    except (binascii.Error, ValueError):
        return None
    if not raw.startswith(_MAGIC[mime]):
        return None
    return base64.b64encode(raw).decode("ascii")


SVG_NS = "http://www.w3.org/2000/svg"
XLINK_NS = "http://www.w3.org/1999/xlink"
#: The drawing elements an SVG keeps.
SVG_ELEMENTS = frozenset({"svg", "g", "defs", "title", "desc", "rect", "circle", "ellipse", "line", "polyline",
                          "polygon", "path", "text", "tspan", "marker", "linearGradient", "radialGradient", "stop",
                          "clipPath", "mask", "pattern", "symbol"})
#: The attributes they keep (presentation and geometry; no event, no style sheet, no external reference).
SVG_ATTRIBUTES = frozenset({
    "id", "class", "x", "y", "x1", "y1", "x2", "y2", "cx", "cy", "r", "rx", "ry", "width", "height", "d", "points",
    "viewBox", "preserveAspectRatio", "transform", "fill", "fill-opacity", "fill-rule", "stroke", "stroke-width",
    "stroke-opacity", "stroke-dasharray", "stroke-dashoffset", "stroke-linecap", "stroke-linejoin", "opacity",
    "font-family", "font-size", "font-weight", "font-style", "text-anchor", "dominant-baseline", "dx", "dy",
    "letter-spacing", "refX", "refY", "markerWidth", "markerHeight", "markerUnits", "orient", "marker-start",
    "marker-mid", "marker-end", "offset", "stop-color", "stop-opacity", "gradientUnits", "gradientTransform",
    "clip-path", "clipPathUnits", "mask", "patternUnits", "visibility", "display", "version", "style"})
_DECLARATION = r"[A-Za-z-]+\s*:\s*[#A-Za-z0-9.,%\s()'\"-]*"
_SAFE_STYLE = re.compile(rf"{_DECLARATION}(;\s*{_DECLARATION})*;?\s*")
_URL = re.compile(r"url\s*\(", re.IGNORECASE)


def _safe_value(name: str, value: str) -> bool:
    if len(value) > 100_000 or "<" in value or "javascript" in value.lower() or "\\" in value:
        return False
    for match in _URL.finditer(value):
        if not value[match.end():].lstrip(" '\"").startswith("#"):
            return False
    if name == "style":
        return bool(_SAFE_STYLE.fullmatch(value)) and "expression" not in value.lower()
    return True


def _local_name(tag: str) -> tuple[str | None, str]:
    if tag.startswith("{"):
        namespace, _, name = tag[1:].partition("}")
        return namespace, name
    return None, tag


def _svg_markup(element: Element, depth: int, budget: list[int]) -> str:
    namespace, name = _local_name(element.tag) if isinstance(element.tag, str) else (None, "")
    budget[0] -= 1
    if budget[0] < 0 or depth > MAX_SVG_DEPTH or namespace not in (SVG_NS, None) or name not in SVG_ELEMENTS:
        return ""
    attrs = []
    for key, value in element.attrib.items():
        space, attr = _local_name(key)
        if space == XLINK_NS and attr == "href" or space is None and attr == "href":
            if re.fullmatch(r"#[A-Za-z0-9_.-]{1,100}", value or ""):
                attrs.append(f' href="{html.escape(value)}"')
            continue
        if space is not None or attr not in SVG_ATTRIBUTES or not _safe_value(attr, value):
            continue
        attrs.append(f' {attr}="{html.escape(value)}"')
    if name == "svg" and depth == 0:
        attrs.insert(0, f' xmlns="{SVG_NS}"')
    inner = html.escape(element.text or "", quote=False)
    for child in element:
        inner += _svg_markup(child, depth + 1, budget) + html.escape(child.tail or "", quote=False)
    return f"<{name}{''.join(attrs)}>{inner}</{name}>"


def clean_svg(text: Any) -> str | None:
    """An SVG drawing rebuilt from the allowlisted elements and attributes only; None when it is not a drawing
    (no `<svg>` root, a document type or entity, too large or too deep)."""
    text = joined(text)
    if text is None or len(text) > MAX_SVG:
        return None
    from defusedxml import DefusedXmlException
    from defusedxml.ElementTree import fromstring
    try:
        root = fromstring(text.strip(), forbid_dtd=True)
    except (ParseError, DefusedXmlException, ValueError, RecursionError):
        return None
    if _local_name(root.tag)[1] != "svg":
        return None
    try:
        return _svg_markup(root, 0, [MAX_SVG_ELEMENTS])
    except RecursionError:
        return None


# --- HTML ---------------------------------------------------------------------------------------------------------
#: What an HTML output keeps: its text and its tables, nothing that links, loads or styles.
HTML_TAGS = frozenset({"p", "br", "hr", "div", "span", "pre", "code", "b", "strong", "i", "em", "u", "s", "sub",
                       "sup", "small", "ul", "ol", "li", "dl", "dt", "dd", "h1", "h2", "h3", "h4", "h5", "h6",
                       "blockquote", "kbd", "samp", "var", "table", "thead", "tbody", "tfoot", "tr", "th", "td",
                       "caption", "colgroup", "col"})
HTML_ATTRIBUTES = {"th": ["colspan", "rowspan"], "td": ["colspan", "rowspan"]}


def clean_html(text: str) -> str:
    """An HTML output kept as its text and tables: every other tag (and every attribute but a cell's span) removed,
    its words kept as text."""
    import bleach
    return bleach.clean(text, tags=HTML_TAGS, attributes=HTML_ATTRIBUTES, protocols=[], strip=True,
                        strip_comments=True)


class _Text(HTMLParser):
    def __init__(self) -> None:
        super().__init__(convert_charrefs=True)
        self.parts: list[str] = []
        self.skip = 0

    def handle_starttag(self, tag: str, attrs: Any) -> None:
        if tag in ("script", "style"):
            self.skip += 1
        elif tag in ("br", "p", "div", "tr", "li", "h1", "h2", "h3", "h4", "h5", "h6"):
            self.parts.append("\n")
        elif tag in ("td", "th"):
            self.parts.append("\t")

    def handle_endtag(self, tag: str) -> None:
        if tag in ("script", "style") and self.skip:
            self.skip -= 1

    def handle_data(self, data: str) -> None:
        if not self.skip:
            self.parts.append(data)


def html_text(text: str) -> str:
    """The words of an HTML text, without its tags, scripts and style sheets."""
    parser = _Text()
    parser.feed(text)
    parser.close()
    return re.sub(r"\n{3,}", "\n\n", "".join(parser.parts)).strip()


# --- outputs ------------------------------------------------------------------------------------------------------
def clean_bundle(data: Any, notes: list[str]) -> dict[str, str]:
    """A display's MIME bundle with only what may be shown (see the module's docstring)."""
    if not isinstance(data, dict):
        return {}
    out: dict[str, str] = {}
    plain = joined(data.get("text/plain"))
    for mime, value in data.items():
        if mime in _MAGIC:
            image = clean_image(mime, value)
            if image is not None:
                out[mime] = image
            else:
                notes.append(f"an {mime} output that is not one")
        elif mime == "image/svg+xml":
            svg = clean_svg(value)
            if svg is not None:
                out[mime] = svg
            else:
                notes.append("an SVG output that is not a plain drawing")
        elif mime == "text/html":
            text = joined(value)
            if text is None:
                continue
            drawings = _SVG.findall(text)
            svg = clean_svg(drawings[0]) if len(drawings) == 1 else None
            if svg is not None:
                out.setdefault("image/svg+xml", svg)
            else:
                out["text/html"] = clean_html(text)
            if plain is None:
                plain = html_text(_SVG.sub("", text)) or "<picture>"
        elif mime == "text/markdown":
            text = joined(value)
            if text is not None:
                out[mime] = neutral_markdown(text)
        elif mime == "text/latex":
            text = joined(value)
            if text is not None:
                out[mime] = neutral_latex(text)
        elif mime != "text/plain":
            notes.append(f"a {mime} output (dropped)")
    if plain is not None:
        out["text/plain"] = neutral_text(plain)
    return out


def _image_metadata(metadata: Any) -> dict:
    out: dict[str, Any] = {}
    if not isinstance(metadata, dict):
        return out
    for mime, value in metadata.items():
        if mime in (*_MAGIC, "image/svg+xml") and isinstance(value, dict):
            sizes = {k: v for k, v in value.items() if k in ("width", "height") and isinstance(v, (int, float))
                     and not isinstance(v, bool) and math.isfinite(v) and 0 < v < 100_000}
            if sizes:
                out[mime] = sizes
    return out


def clean_outputs(outputs: Any, notes: list[str], limit: int = MAX_OUTPUT) -> list[dict]:
    """A code cell's outputs with only what may be shown, their text `limit` characters at most in all."""
    if not isinstance(outputs, list):
        return []
    kept: list[dict] = []
    room = limit
    for output in outputs:
        if not isinstance(output, dict) or room <= 0:
            continue
        kind = output.get("output_type")
        if kind == "stream":
            text = joined(output.get("text")) or ""
            name = output.get("name") if output.get("name") in ("stdout", "stderr") else "stdout"
            text = cut(neutral_text(text), room)
            room -= len(text)
            kept.append({"output_type": "stream", "name": name, "text": text})
        elif kind == "error":
            ename = neutral_text(str(output.get("ename", "Error")))[:200]
            evalue = cut(neutral_text(str(output.get("evalue", ""))), max(0, room))
            lines = output.get("traceback") if isinstance(output.get("traceback"), list) else []
            traceback = []
            for line in lines[:200]:
                line = cut(neutral_text(str(line)), max(0, room - len(evalue)))
                room -= len(line)
                traceback.append(line)
            room -= len(evalue)
            kept.append({"output_type": "error", "ename": ename, "evalue": evalue, "traceback": traceback})
        elif kind in ("display_data", "execute_result"):
            data = clean_bundle(output.get("data"), notes)
            size = sum(len(v) for k, v in data.items() if not k.startswith("image/"))
            if size > room:
                data = {"text/plain": cut(data.get("text/plain", ""), max(0, room))}
                notes.append("an output over the output cap")
            room -= sum(len(v) for v in data.values() if isinstance(v, str))
            if not data:
                continue
            item: dict[str, Any] = {"output_type": kind, "data": data, "metadata": _image_metadata(
                output.get("metadata"))}
            if kind == "execute_result":
                count = output.get("execution_count")
                item["execution_count"] = count if isinstance(count, int) and not isinstance(count, bool) else None
            kept.append(item)
        else:
            notes.append(f"an output of type {str(kind)[:40]!r} (dropped)")
    if room <= 0 and len(kept) < len(outputs):
        kept.append({"output_type": "stream", "name": "stdout",
                     "text": f"\n[output cut: more than {limit} characters]\n"})
    return kept


# --- cells and metadata -----------------------------------------------------------------------------------------
def clean_attachments(attachments: Any, notes: list[str]) -> dict:
    """A markdown cell's attachments: images under plain names only."""
    if not isinstance(attachments, dict):
        return {}
    out = {}
    for name, bundle in attachments.items():
        if not isinstance(name, str) or not _PLAIN_NAME.fullmatch(name) or not isinstance(bundle, dict):
            notes.append("an attachment with an odd name (dropped)")
            continue
        kept = {}
        for mime, value in bundle.items():
            if mime in _MAGIC:
                image = clean_image(mime, value)
            elif mime == "image/svg+xml":
                image = clean_svg(value)
            else:
                image = None
            if image is not None:
                kept[mime] = image
            else:
                notes.append(f"an attachment {name!r} of type {str(mime)[:40]!r} (dropped)")
        if kept:
            out[name] = kept
    return out


def _bool(value: Any) -> bool | None:
    return value if isinstance(value, bool) else None


def clean_grading(meta: Any) -> dict | None:
    """nbgrader's fields of a cell, in the types nbgrader gives them; None when they name no plain cell id."""
    if not isinstance(meta, dict):
        return None
    out: dict[str, Any] = {}
    grade_id = meta.get("grade_id")
    if grade_id is not None:
        if not isinstance(grade_id, str) or not _GRADE_ID.fullmatch(grade_id):
            return None
        out["grade_id"] = grade_id
    for key in ("grade", "solution", "locked", "task"):
        if _bool(meta.get(key)) is not None:
            out[key] = meta[key]
    points = meta.get("points")
    if isinstance(points, (int, float)) and not isinstance(points, bool) and math.isfinite(points) \
            and 0 <= points <= 1e6:
        out["points"] = points
    version = meta.get("schema_version")
    if isinstance(version, int) and not isinstance(version, bool):
        out["schema_version"] = version
    checksum = meta.get("checksum")
    if isinstance(checksum, str) and _CHECKSUM.fullmatch(checksum):
        out["checksum"] = checksum
    if meta.get("cell_type") in ("code", "markdown"):
        out["cell_type"] = meta["cell_type"]
    return out


def clean_cell_metadata(meta: Any, cell_type: str) -> dict:
    """A cell's metadata with only nbgrader's fields and the view flags JupyterLab uses."""
    if not isinstance(meta, dict):
        return {}
    out: dict[str, Any] = {}
    grading = clean_grading(meta.get("nbgrader"))
    if grading:
        out["nbgrader"] = grading
    for key in ("deletable", "editable", "collapsed"):
        if _bool(meta.get(key)) is not None:
            out[key] = meta[key]
    if cell_type == "code" and (_bool(meta.get("scrolled")) is not None or meta.get("scrolled") == "auto"):
        out["scrolled"] = meta["scrolled"]
    tags = meta.get("tags")
    if isinstance(tags, list):
        words = [t for t in tags if isinstance(t, str) and _WORD.fullmatch(t)][:20]
        if words:
            out["tags"] = words
    view = meta.get("jupyter")
    if isinstance(view, dict):
        flags = {k: v for k, v in view.items() if k in ("source_hidden", "outputs_hidden") and isinstance(v, bool)}
        if flags:
            out["jupyter"] = flags
    return out


def clean_notebook_metadata(meta: Any) -> dict:
    """The notebook's metadata: the kernel's and the language's names, nothing else."""
    out: dict[str, Any] = {}
    if not isinstance(meta, dict):
        return out
    spec = meta.get("kernelspec")
    if isinstance(spec, dict):
        kept = {k: v for k, v in spec.items() if k in ("name", "display_name", "language") and isinstance(v, str)
                and re.fullmatch(r"[A-Za-z0-9 _.+()-]{1,64}", v)}
        if "name" in kept:
            kept.setdefault("display_name", kept["name"])
            out["kernelspec"] = kept
    info = meta.get("language_info")
    if isinstance(info, dict):
        kept = {}
        for key in ("name", "version", "mimetype", "file_extension", "pygments_lexer", "nbconvert_exporter"):
            value = info.get(key)
            if isinstance(value, str) and re.fullmatch(r"[A-Za-z0-9_.+/-]{1,64}", value):
                kept[key] = value
        mode = info.get("codemirror_mode")
        if isinstance(mode, str) and _WORD.fullmatch(mode):
            kept["codemirror_mode"] = mode
        elif isinstance(mode, dict) and isinstance(mode.get("name"), str) and _WORD.fullmatch(mode["name"]):
            kept["codemirror_mode"] = {"name": mode["name"], **({"version": mode["version"]} if isinstance(
                mode.get("version"), int) and not isinstance(mode.get("version"), bool) else {})}
        if kept:
            out["language_info"] = kept
    return out


def course_text(text: str) -> str:
    """The form a cell's text is compared in with the course's own cells."""
    return text.replace("\r\n", "\n")


def clean_cell(cell: Any, course_cells: Collection[str], notes: list[str], index: int,
               grade_ids: Collection[str] | None = None) -> dict | None:
    """One cell, cleaned (None: not a cell at all); nbgrader's fields only for a cell whose id is one of
    `grade_ids` (when given: the course's own cells)."""
    if not isinstance(cell, dict) or cell.get("cell_type") not in ("code", "markdown", "raw"):
        notes.append(f"cell {index + 1}: not a code, markdown or raw cell (dropped)")
        return None
    kind = cell["cell_type"]
    source = joined(cell.get("source"))
    if source is None:
        notes.append(f"cell {index + 1}: a source that is not text (emptied)")
        source = ""
    out: dict[str, Any] = {"cell_type": kind, "metadata": clean_cell_metadata(cell.get("metadata"), kind),
                           "source": source}
    grading = out["metadata"].get("nbgrader")
    if grading is not None and grade_ids is not None and grading.get("grade_id") not in grade_ids:
        del out["metadata"]["nbgrader"]
        notes.append(f"cell {index + 1}: nbgrader fields of a cell the course does not have (dropped)")
    if isinstance(cell.get("id"), str) and _CELL_ID.fullmatch(cell["id"]):
        out["id"] = cell["id"]
    if kind == "code":
        count = cell.get("execution_count")
        out["execution_count"] = count if isinstance(count, int) and not isinstance(count, bool) else None
        out["outputs"] = clean_outputs(cell.get("outputs"), notes)
        return out
    if kind == "markdown" and course_text(source) in course_cells:
        out["source"] = source
        if cell.get("attachments"):
            out["attachments"] = clean_attachments(cell.get("attachments"), notes)
        return out
    attachments = clean_attachments(cell.get("attachments"), notes) if kind == "markdown" else {}
    cleaned = neutral_markdown(source, attachments=attachments)
    if cleaned != source:
        notes.append(f"cell {index + 1}: the student's markup made text")
    out["source"] = cleaned
    if attachments:
        out["attachments"] = attachments
    return out


def clean_notebook(nb: Any, course_cells: Collection[str] = frozenset(),
                   grade_ids: Collection[str] | None = None) -> list[str]:
    """Clean a notebook (a dict, or nbformat's NotebookNode) in place; what was changed, for the log. `grade_ids`,
    when given, are the ids of the course's graded and locked cells: a cell claiming another is an ordinary cell."""
    notes: list[str] = []
    cells = nb.get("cells") if isinstance(nb.get("cells"), list) else []
    course = {course_text(text) for text in course_cells}
    kept = []
    for index, cell in enumerate(cells):
        cleaned = clean_cell(cell, course, notes, index, grade_ids)
        if cleaned is not None:
            kept.append(cleaned)
    seen: set[str] = set()
    for cell in kept:
        if "id" in cell and cell["id"] in seen:
            del cell["id"]
        if "id" not in cell and nb.get("nbformat_minor", 0) >= 5:
            cell["id"] = uuid.uuid4().hex[:12]
        seen.add(cell.get("id", ""))
    metadata = clean_notebook_metadata(nb.get("metadata"))
    if isinstance(nb.get("metadata"), dict) and set(nb["metadata"]) - set(metadata):
        notes.append("notebook metadata: " + ", ".join(sorted(str(k)[:40] for k in set(nb["metadata"])
                                                                    - set(metadata))) + " (dropped)")
    nb["cells"] = [_node(nb, cell) for cell in kept]
    nb["metadata"] = _node(nb, metadata)
    return notes


def _node(nb: Any, value: Any) -> Any:
    """A value in the notebook's own kind of mapping (nbformat's NotebookNode when the notebook is one)."""
    if type(nb) is dict:
        return value
    from nbformat.notebooknode import from_dict
    return from_dict(value)


def course_grade_ids(source_nb: Any) -> frozenset[str]:
    """The nbgrader ids of the cells of the course's source notebook."""
    cells = source_nb.get("cells") if isinstance(source_nb, dict) else None
    found = set()
    for cell in cells if isinstance(cells, list) else []:
        grade_id = ((cell.get("metadata") or {}).get("nbgrader") or {}).get("grade_id")
        if isinstance(grade_id, str):
            found.add(grade_id)
    return frozenset(found)


def course_texts(source_nb: Any) -> frozenset[str]:
    """The texts of the instructor's own markdown cells in the course's source notebook (every markdown cell but
    the model answers of written questions)."""
    cells = source_nb.get("cells") if isinstance(source_nb, dict) else None
    found = set()
    for cell in cells if isinstance(cells, list) else []:
        meta = (cell.get("metadata") or {}).get("nbgrader") or {}
        text = joined(cell.get("source"))
        if cell.get("cell_type") == "markdown" and text is not None and not meta.get("solution"):
            found.add(course_text(text))
    return frozenset(found)


__all__ = ["clean_notebook", "clean_cell", "clean_outputs", "clean_bundle", "clean_svg", "clean_html",
           "clean_image", "clean_attachments", "clean_cell_metadata", "clean_notebook_metadata", "clean_grading",
           "neutral_markdown", "neutral_text", "neutral_latex", "html_text", "course_texts", "course_grade_ids", "cut",
           "JOINER",
           "MAX_TEXT", "MAX_OUTPUT"]
