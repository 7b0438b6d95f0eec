"""Label Studio labeling configs and exports -> the common annotation model.

``adapt(config_xml, tasks)`` gives one :class:`ControlData` (a long table item/annotator/
value plus its value kind and candidate distances) per control tag; ``build_report`` runs
the metrics on every control (the JSON contract of ``ls-agreement report``) and
``render_html`` / ``render_csv`` format it. Bad input raises :class:`AdapterError` (strict)
or becomes warnings (lenient, the default).
"""
from .adapt import Adapted, adapt
from .config import ControlSpec, LabelingConfig, parse_config
from .control import ControlData
from .errors import AdapterError
from .render import render_csv, render_html
from .report import build_report
from .settings import ReportSettings, load_settings
from .tasks import load_export, parse_export

__all__ = [
    "adapt", "Adapted", "parse_config", "LabelingConfig", "ControlSpec", "ControlData",
    "AdapterError", "build_report", "render_html", "render_csv", "ReportSettings", "load_settings",
    "load_export", "parse_export",
]
