"""The report page the sections are written into: headings, paragraphs and figures saved beside the HTML.
Each campaign kind writes its own section through it (host/kinds/*), the report frame the rest (host/views/report.py)."""
from __future__ import annotations

import html
from pathlib import Path

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402

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
