"""Entry points of plug-ins, under a group and under the names that group had before.

A group's earlier names are declared in the distribution's own metadata (the entry-point group
`typed_eval.group_aliases`: an alias's name is the group, its value the earlier name), so a plug-in registered
before the package was renamed keeps working, with a one-line notice to move it.
"""

from __future__ import annotations

import warnings
from importlib.metadata import EntryPoint, entry_points

__all__ = ["ALIASES_GROUP", "PluginGroupWarning", "plugin_points"]

ALIASES_GROUP = "typed_eval.group_aliases"


class PluginGroupWarning(FutureWarning):
    """A plug-in is registered under a group's earlier name."""


def plugin_points(group: str) -> list[EntryPoint]:
    """The entry points of `group`, then those of its earlier names that it does not already have, sorted by name
    (a name two packages register is there twice); each of the latter warns (`PluginGroupWarning`) once."""
    installed = entry_points()  # one pass over the installed distributions for the group and its earlier names
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
