"""Entry points of plug-ins, under a group and under the names that group had before.

A group's earlier names are declared in the distribution's own metadata (the entry-point group
`typed_eval.group_aliases`: an alias's name is the group, its value the earlier name), so a plug-in registered
before the package was renamed keeps working, with a one-line notice to move it.
"""

from __future__ import annotations

import os
import sys
import warnings
from importlib.metadata import EntryPoint, EntryPoints, entry_points
from typing import Protocol

__all__ = ["ALIASES_GROUP", "PluginGroupWarning", "plugin_points"]

ALIASES_GROUP = "typed_eval.group_aliases"


class PluginGroupWarning(FutureWarning):
    """A plug-in is registered under a group's earlier name."""


def _path_state() -> tuple[tuple[str, int], ...]:
    """Each folder (or archive) of the import path with the time it last changed: installing or removing a package
    there changes it, as `importlib.metadata`'s own cache of a folder's listing assumes."""
    state = []
    for entry in sys.path:
        try:
            state.append((entry, os.stat(entry or ".").st_mtime_ns))
        except OSError:
            state.append((entry, -1))
    return tuple(state)


class _Installed(Protocol):
    """What `entry_points()` gives (`SelectableGroups` on Python 3.11, `EntryPoints` from 3.12)."""

    def select(self, *, group: str) -> EntryPoints: ...


_read: dict[tuple[tuple[str, int], ...], _Installed] = {}
"""The entry points last read, under the import path's state then (one, replaced when the path changes): a command
looks its suites up several times, and each read is a pass over every installed distribution (20 ms here)."""


def _installed() -> _Installed:
    state = _path_state()
    found = _read.get(state)
    if found is None:
        found = entry_points()
        _read.clear()
        _read[state] = found
    return found


def plugin_points(group: str) -> list[EntryPoint]:
    """The entry points of `group`, then those of its earlier names that it does not already have, sorted by name
    (a name two packages register is there twice); each of the latter warns (`PluginGroupWarning`) once."""
    installed = _installed()
    found = list(installed.select(group=group))  # two packages may register one name: both kept, to be told apart
    names = {point.name for point in found}
    for alias in installed.select(group=ALIASES_GROUP):
        if alias.name != group:
            continue
        for point in installed.select(group=alias.value):
            if point.name in names:
                continue
            owner = f" of {point.dist.name}" if point.dist else ""
            warnings.warn(
                f"the plug-in {point.name!r}{owner} is registered under the entry-point group {alias.value!r}, "
                f"which is now {group!r}: register it there",
                PluginGroupWarning,
                stacklevel=2,
            )
            names.add(point.name)
            found.append(point)
    return sorted(found, key=lambda point: (point.name, point.value))
