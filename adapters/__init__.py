"""Label Studio labeling configs and exports -> the common annotation model.

``adapt(config_xml, tasks)`` gives one :class:`ControlData` (a long table item/annotator/
value plus its value kind and candidate distances) per control tag. Bad input raises
:class:`AdapterError` (strict) or becomes warnings (lenient, the default). What is done
with the model — reports, settings, rendering — lives in :mod:`ls_agreement.plugin`.
"""
from .adapt import Adapted, adapt
from .config import ControlSpec, LabelingConfig, parse_config
from .control import ControlData
from .errors import AdapterError
from .export_shape import parse_export
from .export_stream import load_export

__all__ = [
    "adapt", "Adapted", "parse_config", "LabelingConfig", "ControlSpec", "ControlData",
    "AdapterError", "load_export", "parse_export",
]
