"""The fleet report as one self-contained HTML page (for a change ticket).

No scripts, no external stylesheets, fonts or images: one file with inline CSS.  Every value
from a report is escaped (paths and error messages come from the operator's files), and ids
and digests are shown whole (they wrap instead of being cut).
"""

from __future__ import annotations

from html import escape
from pathlib import Path
from typing import Any

from bbg_core.errors import EXIT_CODES, UsageError
from migrate.fleet.results import atomic_write_text
from migrate.fleet.run import torn_tail

_CSS = """
body{font-family:system-ui,-apple-system,"Segoe UI",sans-serif;margin:1.5rem;color:#1b1f23}
h1{font-size:1.4rem;margin:0 0 .3rem}h2{font-size:1.1rem;margin:1.4rem 0 .4rem}
table{border-collapse:collapse;width:100%;font-size:.85rem}
th,td{border:1px solid #d0d7de;padding:.3rem .45rem;text-align:left;vertical-align:top}
th{background:#f6f8fa}
td.hex,td.path{font-family:ui-monospace,Menlo,Consolas,monospace;word-break:break-all}
td.num{text-align:right;font-variant-numeric:tabular-nums}
td.path{width:30%}td.msg{word-break:break-word}span.label{color:#57606a;font-family:system-ui,sans-serif}
tr.ok td.status{background:#dafbe1}tr.failed td.status{background:#ffebe9}
.summary td{font-size:.95rem}.anomaly{background:#fff8c5}
p.meta{color:#57606a;margin:.2rem 0}
"""


def _cell(value: Any, cls: str = "") -> str:
    attr = f' class="{cls}"' if cls else ""
    text = "" if value is None else str(value)
    return f"<td{attr}>{escape(text)}</td>"


def _lines(*pairs: tuple[str, str]) -> str:
    """Labelled lines in one cell: ``label value`` each, the value escaped and whole."""
    return "".join(
        f'<div><span class="label">{escape(label)}</span> {escape(value)}</div>'
        for label, value in pairs
    )


def _job_row(job: dict[str, Any]) -> str:
    receipt = job.get("receipt")
    error = job.get("error")
    ok = job["exit_code"] == 0
    outcome = job["status"] if ok else (error["code"] if error else "failed")
    where = f"<div><b>{escape(job['name'])}</b></div>" + _lines(
        ("source", job["source"]), ("store", job["store"])
    )
    if receipt is not None:
        src = receipt["source"]
        detail = _lines(
            ("import", receipt["import_id"]),
            ("source sha256", src["sha256"])
            if "sha256" in src
            else ("source store", str(src.get("store_id", ""))),
            ("archive digest", receipt["digests"]["source_archive_sha256"]),
        )
        torn = torn_tail(job)
        if torn is not None:
            detail += _lines(("torn tail", f"{torn['discarded_bytes']:,} bytes after byte "
                                           f"{torn['valid_prefix_end']:,} left out"))  # fmt: skip
    else:
        detail = escape(error["message"] if error else "")
    cells = [
        f'<td class="path">{where}</td>',
        _cell(f"{job['exit_code']} {outcome}", "status"),
        _cell(job.get("kind") or ""),
        _cell(job.get("rows", ""), "num"),
        _cell(f"{job['seconds']:.3f}", "num"),
        f'<td class="{"hex" if receipt is not None else "msg"}">{detail}</td>',
    ]
    return f'<tr class="{"ok" if ok else "failed"}">' + "".join(cells) + "</tr>"


def render(doc: dict[str, Any], *, title: str = "bbg-migrate fleet report") -> str:
    """The HTML page of a fleet report document."""
    t = doc["totals"]
    meta = []
    if doc.get("manifest"):
        meta.append(f"manifest: {doc['manifest']}")
    if doc.get("inputs"):
        meta.append("reports merged: " + ", ".join(doc["inputs"]))
    if doc.get("started"):
        meta.append(f"from {doc['started']} to {doc.get('finished', '')}")
    codes = "".join(
        f"<tr>{_cell(code, 'num')}{_cell(EXIT_CODES.get(int(code), ''))}{_cell(n, 'num')}</tr>"
        for code, n in t["by_exit_code"].items()
    )
    anomalies = "".join(
        f'<tr class="anomaly">{_cell(a["code"])}{_cell(a.get("job", ""), "hex")}'
        f"{_cell(a['detail'])}{_cell(', '.join(a.get('files', [])), 'path')}</tr>"
        for a in doc["anomalies"]
    )
    head = (
        "<tr><th>job</th><th>exit / outcome</th><th>kind</th><th>rows</th><th>seconds</th>"
        "<th>receipt (import id, digests) or error</th></tr>"
    )
    parts = [
        "<!DOCTYPE html>",
        '<html lang="en">',
        "<head>",
        '<meta charset="utf-8">',
        '<meta name="viewport" content="width=device-width, initial-scale=1">',
        f"<title>{escape(title)}</title>",
        f"<style>{_CSS}</style>",
        "</head>",
        "<body>",
        f"<h1>{escape(title)}</h1>",
        *(f'<p class="meta">{escape(m)}</p>' for m in meta),
        '<h2>Summary</h2><table class="summary"><tbody>',
        f"<tr><th>exit status</th>{_cell(doc['exit_code'], 'num')}</tr>",
        f"<tr><th>jobs</th>{_cell(t['jobs'], 'num')}</tr>",
        f"<tr><th>succeeded</th>{_cell(t['ok'], 'num')}</tr>",
        f"<tr><th>failed</th>{_cell(t['failed'], 'num')}</tr>",
        f"<tr><th>rows imported</th>{_cell(t['rows'], 'num')}</tr>",
        f"<tr><th>torn tails accepted</th>{_cell(t.get('torn_tails', 0), 'num')}</tr>",
        f"<tr><th>bytes dropped (torn tails)</th>"
        f"{_cell(t.get('torn_bytes_dropped', 0), 'num')}</tr>",
        f"<tr><th>anomalies</th>{_cell(len(doc['anomalies']), 'num')}</tr>",
        "</tbody></table>",
        "<h2>Exit codes</h2><table><thead><tr><th>code</th><th>meaning</th><th>jobs</th></tr>"
        f"</thead><tbody>{codes}</tbody></table>",
    ]
    if anomalies:
        parts.append(
            "<h2>Anomalies</h2><table><thead><tr><th>code</th><th>job</th><th>detail</th>"
            f"<th>files</th></tr></thead><tbody>{anomalies}</tbody></table>"
        )
    parts += [
        f"<h2>Jobs</h2><table><thead>{head}</thead><tbody>",
        *(_job_row(j) for j in doc["jobs"]),
        "</tbody></table>",
        "</body>",
        "</html>",
    ]
    return "\n".join(parts) + "\n"


def write_html(doc: dict[str, Any], path: Path) -> None:
    """Write the page of ``doc`` to ``path`` atomically."""
    try:
        atomic_write_text(path, render(doc))
    except OSError as exc:
        raise UsageError(
            f"{path}: cannot write the HTML report: {exc.strerror}", path=str(path)
        ) from exc
