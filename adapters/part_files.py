"""An export read in parts, each part's controls kept in files until their values are built.

Issue 24: the report reads a big export in parts side by side (``read_part`` on each byte
range of ``export_stream.split_export``). Joining whole parts in one process before any
value was built held every control's cells at once: at 100,000 demo tasks that process
peaked at 0.9 GB and ran alone for 8 s while the other cores waited; at 1,000,000 tasks it
was the process tree's peak (8.7 GB). Here each part's reader writes its cells to files
instead (:func:`write_part`), one file per group of controls, and keeps only the part's
facts (task ids, annotators' names, counts, warnings). :class:`SpilledParts` is then the
mapping of the adapted controls: reading one back joins that control's pieces of every
part, in the parts' order, and builds its values (``adapt.build_control``) — in the
process that measures it. The controls equal those of ``adapt`` over the whole export.

A control that points at regions by id (``Relations``, ``perRegion`` answers) holds, per
annotation, the very lists of parsed results the region controls hold, and a plan may
rewrite those in place (``intervals.plan_cells``). So it shares one file per part with the
controls that have a plan: unpickled together, the references hold, and its reading plans
them before it is built.
"""
from __future__ import annotations

import os
import pickle
from dataclasses import dataclass
from typing import Any, Iterable, Iterator, Mapping, MutableMapping, Sequence

from .adapt import (FAMILIES, ControlPiece, PartRead, build_control, in_first_forms, join_control, join_facts,
                    plan_control, planned, pointing, project_warnings)
from .config import LabelingConfig
from .control import ControlData
from .fields import MISSING
from .gc_pause import gc_paused

__all__ = ["PartFiles", "SpilledParts", "write_part"]


@dataclass
class PartFiles:
    """What the reading of one part keeps once its cells are in files.

    Attributes
    ----------
    facts : PartRead
        The part without its controls' cells, distinct values, texts, offered answers and
        ground truth.
    paths : dict
        Group of controls (:func:`_groups`) -> the file holding their pieces of this part.
    answers : dict
        Control -> its answers in this part (cells with a value).
    tasks_of : dict
        Annotator -> the distinct tasks they answered in this part, over every control.
    """

    facts: PartRead
    paths: dict[str, str]
    answers: dict[str, int]
    tasks_of: dict[str, int]


def _groups(cfg: LabelingConfig) -> dict[str, str]:
    """Control -> the group whose file holds it: each control alone, except that the
    controls pointing at regions share one with the controls that have a plan."""
    linked = pointing(cfg)
    if linked:
        linked |= set(planned(cfg))
    return {n: "linked" if n in linked else f"control-{k}" for k, n in enumerate(cfg.controls)}


def write_part(cfg: LabelingConfig, part: PartRead, directory: str, index: int) -> PartFiles:
    """Write part ``index``'s pieces of every control under ``directory`` and keep its facts.

    The part's per-control lists are emptied: only the files hold them afterwards.

    Raises
    ------
    OSError
        A file could not be written.
    """
    answers: dict[str, int] = {}
    tasks: dict[str, set] = {}
    for n, cells in part.cells.items():
        kept = 0
        for t, a, v in cells:
            if v is not MISSING:      # the eager controls' unanswered cells never become answers
                kept += 1
                tasks.setdefault(a, set()).add(t)
        answers[n] = kept
    groups: dict[str, list[str]] = {}
    for n, g in _groups(cfg).items():
        groups.setdefault(g, []).append(n)
    paths: dict[str, str] = {}
    with gc_paused():    # pickling makes a state tuple per object and no cycles
        for g, members in groups.items():
            path = os.path.join(directory, f"part-{index}-{g}.pickle")
            with open(path, "wb") as fh:
                pickle.dump({n: part.piece(n) for n in members}, fh, protocol=pickle.HIGHEST_PROTOCOL)
            paths[g] = path
    part.cells = {n: [] for n in part.cells}
    part.shared = {}
    part.texts = {n: {} for n in part.texts}
    part.offers = {n: {} for n in part.offers}
    part.gt = {n: set() for n in part.gt}
    return PartFiles(facts=part, paths=paths, answers=answers,
                     tasks_of={a: len(ts) for a, ts in tasks.items()})


class SpilledParts(MutableMapping[str, ControlData]):
    """The adapted controls of an export read in parts (:func:`write_part`), each built
    when it is read back: equal to :func:`~.adapt.adapt` of the whole export.

    Parameters
    ----------
    cfg : LabelingConfig
    parts : sequence of PartFiles
        In the export's order.
    strict : bool
        As the reading was (the warnings' form).
    annotator_names : mapping, optional
        Annotator id -> display name, added to each control's names where it has the
        annotator (the export's own names come from its ``completed_by`` objects).

    Raises
    ------
    PartsDiffer
        The parts cannot stand for the whole export (``adapt.join_facts``).

    Attributes
    ----------
    n_tasks : int
    warnings : list of str
        The warnings not tied to one control, as :func:`~.adapt.adapt` gives them.
    answers : dict
        Control -> its answers (its table's length once built).
    tasks_of : dict
        Annotator -> the distinct tasks they answered over all controls.
    names : dict
        Annotator id -> display name, for every annotator with an answer.
    """

    def __init__(self, cfg: LabelingConfig, parts: Sequence[PartFiles], *, strict: bool = False,
                 annotator_names: Mapping[str, str] | None = None) -> None:
        self._cfg = cfg
        self._facts = join_facts([p.facts for p in parts])
        self.n_tasks = len(self._facts.task_ids)
        self._facts.task_ids = []          # checked and counted: not carried to the workers
        self.warnings = project_warnings(cfg, self._facts, strict)
        self.answers = {n: sum(p.answers[n] for p in parts) for n in cfg.controls}
        self.tasks_of: dict[str, int] = {}
        for p in parts:
            for a, k in p.tasks_of.items():
                self.tasks_of[a] = self.tasks_of.get(a, 0) + k
        self._extra = {a: n for a, n in (annotator_names or {}).items() if n}
        self.names = {a: self._facts.names[a] for a in self.tasks_of if a in self._facts.names}
        self.names.update({a: n for a, n in self._extra.items() if a in self.tasks_of})
        self._group = _groups(cfg)
        self._paths = [p.paths for p in parts]
        self._left = list(cfg.controls)

    def _load(self, group: str) -> Iterator[dict[str, ControlPiece]]:
        """Each part's pieces of the controls of ``group`` (control -> piece), in order,
        one part at a time."""
        for paths in self._paths:
            with open(paths[group], "rb") as fh, gc_paused():
                pieces = pickle.load(fh)
            yield pieces

    def _stream(self, name: str) -> Iterator[ControlPiece]:
        """Control ``name``'s pieces, in the parts' order, one part at a time."""
        for pieces in self._load(self._group[name]):
            yield pieces.pop(name)

    def __getitem__(self, name: str) -> ControlData:
        if name not in self._left:
            raise KeyError(name)
        cfg = self._cfg
        family = FAMILIES[cfg.controls[name].family]
        with gc_paused():
            # a control without a plan builds its regions from None, as in adapt's build
            states: dict[str, Any] = dict.fromkeys(cfg.controls)
            notes: list[str] = []
            if name in pointing(cfg):
                # unpickled part by part together: its answers hold the region controls' lists
                whole: dict[str, list[ControlPiece]] = {}
                for pieces in self._load(self._group[name]):
                    for n, piece in pieces.items():
                        whole.setdefault(n, []).append(piece)
                for c in planned(cfg):
                    states[c], _ = plan_control(cfg, c, join_control(whole.pop(c)).cells)
                pieces_in: Iterable[ControlPiece] = [join_control(whole.pop(name))]
                del whole
            elif hasattr(family, "plan_cells"):     # planned on all the cells, rewritten in place
                piece = join_control(self._stream(name))
                states[name], notes = plan_control(cfg, name, piece.cells)
                pieces_in = [piece]
            else:
                # planned over one pass of the files, then built a part at a time: a part's
                # parsed results are gone before the next part's arrive (the build's peak
                # is the values and one part, not the values and every part)
                if hasattr(family, "plan"):
                    states[name], notes = plan_control(cfg, name, (c for p in self._stream(name) for c in p.cells))
                pieces_in = in_first_forms(self._stream(name))
            ctl = build_control(cfg, name, pieces_in, self._facts, states, notes)
        if self._extra and len(ctl.table):
            seen = set(map(str, ctl.table["annotator"].unique()))
            ctl.annotator_names.update({a: n for a, n in self._extra.items() if a in seen})
        return ctl

    def __setitem__(self, name: str, ctl: ControlData) -> None:
        raise TypeError("controls read in parts are built from their files only")

    def __delitem__(self, name: str) -> None:
        """Forget ``name``; its files go once no control left reads them."""
        self._left.remove(name)
        needed = {self._group[n] for n in self._left}
        for paths in self._paths:
            for g in [g for g in paths if g not in needed]:
                try:
                    os.remove(paths.pop(g))
                except OSError:
                    pass        # the caller's directory goes anyway

    def __iter__(self) -> Iterator[str]:
        return iter(list(self._left))

    def __len__(self) -> int:
        return len(self._left)

    def kinds(self) -> dict[str, tuple[str, str]]:
        """Control -> (kind of values, tag)."""
        return {n: (s.kind, s.tag) for n, s in self._cfg.controls.items()}
