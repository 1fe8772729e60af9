"""``nandrig serve``: a live page of a database's campaigns, refreshed while they run.

Each campaign shows its state and progress, the P/E of every block it holds, and the RBER of its latest
checkpoints per page type (with 95 % Garwood intervals) as a table and a plot. The server renders the page
(the first view needs no script) and the page fetches its live part again every few seconds
(``/live.html``; the same data as JSON at ``/api/campaigns``); the server opens the database read-only per request (SQLite's WAL
lets a running campaign write meanwhile), so it never holds a lock a campaign needs. It listens on the
loopback interface unless told otherwise: the page has no login.
"""
from __future__ import annotations

import html
import io
import json
import re
import statistics
import threading
import time
from collections.abc import Callable
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

import numpy as np

from nandrig.characterization.measurements import poisson_interval
from nandrig.errors import NandrigError
from nandrig.host.engine.campaigns import summaries
from nandrig.host.storage.databases import database_errors
from nandrig.host.storage.store import Store

LATEST = 12  # checkpoints shown per campaign
PLOT_PATH = re.compile(r"^/campaign/(\d+)/rber\.png$")


def _latest(store: Store, campaign_id: int, chip_id: int) -> list[dict]:
    """The latest checkpoints' RBER per page type (lower/upper, from the chip's page map)."""
    pm = store.page_map(chip_id)
    points: dict[tuple[int, str, float], dict] = {}
    for step, label, ret_h, page, pe, errors, bits in store.checkpoint_errors(campaign_id, LATEST):
        p = points.setdefault((step, label, ret_h), {"step": step, "label": label, "retention_h": ret_h, "pe": [],
                                                     "errors": {"lower": 0, "upper": 0}, "bits": {"lower": 0, "upper": 0}})
        kind = "upper" if pm.is_upper(page) else "lower"
        p["errors"][kind] += int(errors)
        p["bits"][kind] += int(bits)
        p["pe"].append(float(pe))
    out = []
    labels = [p["label"] for p in points.values()]
    for p in points.values():
        pe = round(statistics.mean(p["pe"]))
        # the same label at several wear levels (a retention time): each row says which
        label = p["label"] if labels.count(p["label"]) == 1 else f"{p['label']}, P/E {pe}"
        row = {"step": p["step"], "label": label, "retention_h": p["retention_h"], "pe": pe}
        for kind in ("lower", "upper"):
            k, n = p["errors"][kind], p["bits"][kind]
            if n:
                lo, hi = poisson_interval(np.array([k]), np.array([n]))
                row[kind] = {"rber": k / n, "lo": float(lo[0]), "hi": float(hi[0]), "errors": k}
        out.append(row)
    return out


def snapshot(db: str) -> dict:
    """What the page shows, as JSON."""
    store = Store(db, read_only=True)
    try:
        campaigns = []
        for line in summaries(store):
            c = store.campaign(line["id"])
            pe = store.pe_counts(c.chip_id, list(c.blocks))
            campaigns.append({**line, "pe": {str(b): n for b, n in pe.items()},
                              "pe_range": [min(pe.values()), max(pe.values())] if pe else None,
                              "latest": _latest(store, c.id, c.chip_id),
                              "events": [{"ts": ts, "kind": k, "detail": d} for ts, k, d in store.events(c.id)[-3:]]})
    finally:
        store.close()
    return {"db": store.name, "time": time.time(), "campaigns": campaigns}


def rber_png(db: str, campaign_id: int, drawn: dict | None = None) -> bytes | None:
    """The latest checkpoints' RBER per page type with their intervals; None for no such campaign. ``drawn``
    keeps each campaign's last plot: drawn again only once the campaign has moved (a page's viewers ask for the
    same plots at once, and drawing one is most of a request's time)."""
    from matplotlib.figure import Figure  # no pyplot: its global state is not for a threaded server

    store = Store(db, read_only=True)
    try:
        ids = {c.id: c for c in store.campaigns()}
        if campaign_id not in ids:
            return None
        c = ids[campaign_id]
        key = (c.step, c.state, c.updated)
        if drawn is not None and (hit := drawn.get(campaign_id)) is not None and hit[0] == key:
            return hit[1]
        rows = _latest(store, campaign_id, c.chip_id)
    finally:
        store.close()
    fig = Figure(figsize=(6.4, 3.4), dpi=100)
    ax = fig.subplots()
    x = np.arange(len(rows))
    for kind, colour, dx in (("lower", "tab:blue", -0.08), ("upper", "tab:red", 0.08)):
        pts = [(i, r[kind]) for i, r in enumerate(rows) if kind in r and r[kind]["errors"] > 0]
        if pts:
            i, v = np.array([p[0] for p in pts]), [p[1] for p in pts]
            y = np.array([p["rber"] for p in v])
            err = np.array([[p["rber"] - p["lo"] for p in v], [p["hi"] - p["rber"] for p in v]])
            ax.errorbar(i + dx, y, yerr=err, fmt="o", color=colour, capsize=3,
                        label=f"campaign {campaign_id}, {kind} pages")
        zeros = [(i, r[kind]["hi"]) for i, r in enumerate(rows) if kind in r and r[kind]["errors"] == 0]
        if zeros:  # no error seen: only an upper bound
            ax.plot([z[0] + dx for z in zeros], [z[1] for z in zeros], "v", color=colour, mfc="none",
                    label=f"campaign {campaign_id}, {kind} pages: 0 errors (upper bound)")
    ax.set_yscale("log")
    ax.set_xticks(x, [r["label"] for r in rows], rotation=30, ha="right", fontsize=7)
    ax.set_ylabel("RBER (95 % interval)")
    ax.set_title(f"campaign {campaign_id}: latest checkpoints", fontsize=9)
    if ax.get_legend_handles_labels()[0]:
        ax.legend(fontsize=7)
    fig.tight_layout()
    buf = io.BytesIO()
    fig.savefig(buf, format="png")
    if drawn is not None:
        drawn[campaign_id] = (key, buf.getvalue())
    return buf.getvalue()


PAGE = """<!doctype html>
<html lang="en"><head><meta charset="utf-8">
<meta name="viewport" content="width=device-width, initial-scale=1">
<title>nandrig: campaigns</title>
<link rel="icon" href="data:,">
<style>
body { font: 15px/1.4 system-ui, sans-serif; margin: 0; padding: 0.8em; background: #f6f7f9; color: #222; }
h1 { font-size: 1.2em; margin: 0 0 0.3em; }
#meta { color: #666; font-size: 0.85em; margin-bottom: 0.8em; }
.card { background: #fff; border: 1px solid #ddd; border-radius: 6px; padding: 0.7em; margin: 0 0 0.8em;
        max-width: 900px; }
.head { display: flex; flex-wrap: wrap; gap: 0.2em 1em; align-items: baseline; }
.state { font-weight: 600; } .running { color: #0a7d2c; } .interrupted, .failed { color: #b3261e; }
.bar { height: 8px; background: #e4e6ea; border-radius: 4px; margin: 0.4em 0; }
.bar > div { height: 100%; background: #3b7ddd; border-radius: 4px; }
table { border-collapse: collapse; font-size: 0.85em; margin: 0.3em 0; display: block; overflow-x: auto; }
caption { text-align: left; color: #555; font-size: 0.95em; }
td, th { padding: 0.15em 0.6em 0.15em 0; text-align: right; white-space: nowrap; }
th { color: #555; font-weight: 500; } td:first-child, th:first-child { text-align: left; }
img { max-width: 100%; height: auto; }
details { margin: 0.3em 0; font-size: 0.85em; }
</style></head>
<body><h1>nandrig campaigns</h1><div id="live">__LIVE__</div>
<script>
// the server renders the page; this only fetches it again every REFRESH_S seconds
const REFRESH_S = __REFRESH__;
async function refresh() {
  try {
    const r = await fetch("/live.html", {cache: "no-store"});
    if (!r.ok) throw new Error("HTTP " + r.status);
    document.getElementById("live").innerHTML = await r.text();
  } catch (e) {
    document.getElementById("meta").textContent = "the server does not answer (" + e + "); retrying";
  }
  setTimeout(refresh, REFRESH_S * 1000);
}
setTimeout(refresh, REFRESH_S * 1000);
</script></body></html>
"""


def _rate(v: dict | None) -> str:
    return "-" if v is None else f"{v['rber']:.2e} [{v['lo']:.1e}, {v['hi']:.1e}]"


def _card(c: dict) -> str:
    e = html.escape
    pct = 100 * c["step"] / c["steps"] if c["steps"] else 0.0
    lo_hi = c["pe_range"]
    pe_range = "-" if not lo_hi else f"{lo_hi[0]}" + (f"-{lo_hi[1]}" if lo_hi[1] != lo_hi[0] else "")
    rows = "".join(f"<tr><td>{e(r['label'])}</td><td>{r['pe']}</td><td>{r['retention_h']:.1f}</td>"
                   f"<td>{_rate(r.get('lower'))}</td><td>{_rate(r.get('upper'))}</td></tr>" for r in c["latest"])
    checkpoints = (f"<table><caption>campaign {c['id']}: latest checkpoints, RBER with 95 % intervals</caption>"
                   "<tr><th>checkpoint</th><th>P/E</th><th>ret. h</th><th>RBER lower</th><th>RBER upper</th></tr>"
                   f"{rows}</table><img alt=\"RBER of campaign {c['id']}\" "
                   f"src=\"/campaign/{c['id']}/rber.png?step={c['step']}\">") if rows else "<p>no checkpoint yet</p>"
    pe = "".join(f"<tr><td>block {b}</td><td>{n}</td></tr>" for b, n in c["pe"].items())
    ev = "; ".join(f"{e(x['kind'])}: {e(x['detail'])}" for x in c["events"])
    return (f"<div class=\"card\" id=\"c{c['id']}\"><div class=\"head\"><b>#{c['id']} {e(c['kind'])}</b>"
            f"<span class=\"state {e(c['state'])}\">{e(c['state'])}</span>"
            + (f"<span class=\"where\">in {e(c['running_in'])}</span>" if c["running_in"] else "")
            + f"<span>chip {e(c['chip'])}</span><span>on {e(c['rig'])}</span><span>blocks {e(c['blocks'])}</span>"
            + (f"<span class=\"steps\">step {c['step']} / {c['steps']}</span>" if c["steps"] else
               f"<span class=\"steps\">{c['step']} rig requests</span>")
            + f"<span>P/E {pe_range}</span></div>"
            f"<div class=\"bar\"><div style=\"width:{pct:.1f}%\"></div></div>{checkpoints}"
            f"<details><summary>P/E per block</summary><table>{pe}</table></details>"
            + (f"<div class=\"events\">{ev}</div>" if ev else "") + "</div>")


def live_html(snap: dict, refresh_s: float) -> str:
    """The page's live part from a :func:`snapshot`: what the first view shows, and each refresh."""
    when = time.strftime("%H:%M:%S", time.localtime(snap["time"]))
    n = len(snap["campaigns"])
    return (f"<div id=\"meta\">{html.escape(snap['db'])} - {n} campaign{'s' if n != 1 else ''}, updated {when}, "
            f"every {refresh_s:g} s</div><div id=\"campaigns\">"
            + ("".join(_card(c) for c in snap["campaigns"]) or "<p>no campaigns yet</p>") + "</div>")


def handler(db: str, refresh_s: float) -> type[BaseHTTPRequestHandler]:
    page = PAGE.replace("__REFRESH__", repr(refresh_s))
    plotting = threading.Lock()  # matplotlib's text layout (mathtext, font cache) is not thread-safe
    drawn: dict[int, tuple] = {}  # campaign -> (its state when drawn, the plot), under the same lock

    class Handler(BaseHTTPRequestHandler):
        def do_GET(self) -> None:  # noqa: N802 (the stdlib's name)
            path = self.path.split("?", 1)[0]
            try:
                if path in ("/", "/index.html"):
                    live = live_html(snapshot(db), refresh_s)
                    return self._send(200, "text/html; charset=utf-8", page.replace("__LIVE__", live).encode())
                if path == "/live.html":
                    return self._send(200, "text/html; charset=utf-8", live_html(snapshot(db), refresh_s).encode())
                if path == "/api/campaigns":
                    return self._send(200, "application/json", json.dumps(snapshot(db)).encode())
                if m := PLOT_PATH.match(path):
                    with plotting:
                        png = rber_png(db, int(m.group(1)), drawn)
                    if png is not None:  # its URL names the campaign's step, so a cached plot is never stale
                        return self._send(200, "image/png", png, cache="max-age=3600")
                self._send(404, "application/json", b'{"error": "not found"}')
            except (NandrigError, *database_errors()) as e:  # e.g. the database went away: say so, keep serving
                self._send(503, "application/json", json.dumps({"error": str(e)}).encode())

        def _send(self, code: int, ctype: str, body: bytes, cache: str = "no-store") -> None:
            self.send_response(code)
            self.send_header("Content-Type", ctype)
            self.send_header("Content-Length", str(len(body)))
            self.send_header("Cache-Control", cache)
            self.end_headers()
            self.wfile.write(body)

        def log_message(self, *args) -> None:  # requests are not news
            pass

    return Handler


def serve(db: str, host: str, port: int, refresh_s: float, echo: Callable[[str], None]) -> None:
    store = Store(db, read_only=True)  # what is not a nandrig database is refused before listening
    store.close()
    try:
        server = ThreadingHTTPServer((host, port), handler(db, refresh_s))
    except OSError as e:
        raise NandrigError(f"cannot listen on {host}:{port}: {e.strerror or e}") from None
    echo(f"serving {store.name} on http://{host}:{server.server_address[1]}/ (Ctrl-C stops)")
    try:
        server.serve_forever()
    except KeyboardInterrupt:
        pass
    finally:
        server.server_close()
