"""The agreement report: built once from a project (:mod:`.build`, with the seed
measures' policy in :mod:`.seed`), held as typed data (:mod:`.model`), explained
(:mod:`.explain`) and rendered as JSON, CSV or the HTML quality page (:mod:`.render`)."""
from .build import build_report, collect_warnings
from .render import render_csv, render_html

__all__ = ["build_report", "collect_warnings", "render_csv", "render_html"]
