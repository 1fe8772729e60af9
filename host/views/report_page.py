"""The report page the sections are written into: headings, paragraphs and figures saved beside the HTML.
Each campaign kind writes its own section through it (host/kinds/*), the report frame the rest (host/views/report.py)."""
from __future__ import annotations

import html
import time
from pathlib import Path

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402

from nandrig import __version__  # noqa: E402
from nandrig.host.views.export import export_rows  # noqa: E402
from nandrig.host.storage.store import Campaign, Store  # noqa: E402


def _save(fig, path: Path) -> str:
    fig.tight_layout()
    fig.savefig(path, dpi=100)
    plt.close(fig)
    return path.name


class Report:
    def __init__(self, store: Store, out: Path) -> None:
        self.store, self.out = store, out
        self.sections: list[str] = []
        self.figures = 0

    def fig(self, fig, name: str, caption: str) -> None:
        self.figures += 1
        src = _save(fig, self.out / f"{name}.png")
        self.sections.append(f'<figure><img src="{src}" alt="{html.escape(caption)}">'
                             f"<figcaption>{html.escape(caption)}</figcaption></figure>")

    def subplots(self, *args, **kw):
        return plt.subplots(*args, **kw)

    def export_rows(self, c: Campaign) -> list[dict]:
        return export_rows(self.store, c)

    def h2(self, text: str) -> None:
        self.sections.append(f"<h2>{html.escape(text)}</h2>")

    def p(self, text: str) -> None:
        self.sections.append(f"<p>{text}</p>")

    def img(self, path: Path, caption: str) -> None:
        self.figures += 1
        self.sections.append(f'<figure><img src="{Path(path).name}" alt="{html.escape(caption)}">'
                             f"<figcaption>{html.escape(caption)}</figcaption></figure>")


def page_html(sections: list[str], of: str) -> str:
    """The page around ``sections``; ``of``: what it reports (HTML)."""
    when = time.strftime("%Y-%m-%d %H:%M", time.localtime())
    return f"""<!doctype html>
<html><head><meta charset="utf-8"><title>nandrig report</title>
<style>
body {{ font-family: system-ui, sans-serif; max-width: 72em; margin: 2em auto; color: #222; }}
h1 {{ border-bottom: 2px solid #ccc; }} table {{ border-collapse: collapse; margin: 1em 0; }}
td, th {{ border: 1px solid #ddd; padding: .3em .6em; text-align: left; vertical-align: top; font-size: 90%; }}
figure {{ margin: 1em 0; }} figcaption {{ color: #555; font-size: 90%; }} img {{ max-width: 100%; }}
code {{ font-size: 85%; }}
</style></head><body>
<p>nandrig {__version__} report of {of}, {when}.</p>
{chr(10).join(sections)}
</body></html>
"""
