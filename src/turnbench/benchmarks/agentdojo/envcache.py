"""A suite's environment parsed once, then handed out fresh per conversation.

Why: upstream builds a conversation's environment by formatting the suite's whole YAML text
with the injections and parsing it again (`TaskSuite.load_and_inject_default_environment`):
about 55 ms of pure-Python YAML for workspace, 28 ms for travel, on every conversation. The
text is fixed; only the scalars that hold an injection placeholder change.

How, and why the result is upstream's own: the template (upstream's `read_suite_file`, the
text after its YAML round trip) is composed once to find each scalar whose source holds a
placeholder, with its path and its exact source text. Every placeholder sits inside a
double-quoted scalar, where YAML folds line breaks and strips the white space around them,
so the value an injection produces depends on the text around it: it is not the injection
string. We therefore never splice strings: for a conversation we format *that scalar's own
source* with the injections and parse it with the same YAML loader, which gives the value a
parse of the whole formatted text gives it (a flow scalar's content does not depend on the
lines around it). The parsed data of the default text is kept; the patched scalars replace
theirs on a copy of only the containers along their paths, and upstream's environment type
validates the result, as upstream does after its parse.

Anything this cannot show to be equal falls back to upstream's own loading for that call:
a scalar whose formatted source is not exactly one double-quoted scalar (an injection holding
a `"` ends the scalar early, which changes the whole document), or a template whose composed
values do not match its parsed data at build time. `tests/agentdojo` compares the result with
upstream's loading for every pair of every attack.
"""

from __future__ import annotations

import string
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

import yaml

if TYPE_CHECKING:
    from agentdojo.functions_runtime import TaskEnvironment
    from agentdojo.task_suite.task_suite import TaskSuite


@dataclass(frozen=True)
class _Spot:
    """A scalar of the template that holds at least one placeholder."""

    path: tuple[Any, ...]
    source: str  # its exact text in the template, quotes included
    vectors: frozenset[str]


def parse_flow_scalar(source: str) -> str | None:
    """The string a YAML document made of exactly this one double-quoted scalar holds, or
    None when the text is not exactly that (then the caller uses upstream's whole parse)."""
    loader = yaml.SafeLoader(source)
    try:
        node = loader.get_single_node()
        if (
            not isinstance(node, yaml.ScalarNode)
            or node.style != '"'
            or node.start_mark.index != 0
            or node.end_mark.index != len(source)
        ):
            return None
        value = loader.construct_document(node)
    except yaml.YAMLError:
        return None
    finally:
        loader.dispose()
    return value if isinstance(value, str) else None


def _fields(source: str) -> frozenset[str]:
    """The replacement fields `str.format` fills in `source` (what upstream's format sees)."""
    try:
        return frozenset(name for _, name, _, _ in string.Formatter().parse(source) if name)
    except ValueError:
        return frozenset()


def _spots(text: str, vectors: frozenset[str]) -> list[_Spot] | None:
    """Every scalar of the composed template holding a placeholder of `vectors`; None when the
    template has a shape this module does not handle (a recursive alias, a complex key)."""
    root = yaml.compose(text, Loader=yaml.SafeLoader)
    keys = yaml.SafeLoader("")
    found: list[_Spot] = []
    stack: set[int] = set()

    def walk(node: yaml.Node, path: tuple[Any, ...]) -> bool:
        if id(node) in stack:
            return False
        if isinstance(node, yaml.ScalarNode):
            source = text[node.start_mark.index : node.end_mark.index]
            names = _fields(source) & vectors
            if names:
                if node.style != '"':
                    return False
                found.append(_Spot(path, source, names))
            return True
        stack.add(id(node))
        try:
            if isinstance(node, yaml.SequenceNode):
                return all(walk(item, (*path, i)) for i, item in enumerate(node.value))
            if isinstance(node, yaml.MappingNode):
                for key_node, value_node in node.value:
                    if not isinstance(key_node, yaml.ScalarNode):
                        return False
                    key = keys.construct_object(key_node, deep=True)
                    if key == "<<" or not walk(value_node, (*path, key)):
                        return False
                return True
            return False
        finally:
            stack.discard(id(node))

    try:
        return found if root is not None and walk(root, ()) else None
    finally:
        keys.dispose()


def _get(data: Any, path: Sequence[Any]) -> Any:
    for key in path:
        data = data[key]
    return data


def _patched(data: Any, patches: Sequence[tuple[tuple[Any, ...], str]]) -> Any:
    """`data` with each path set to its value, copying only the containers along the paths
    (the rest is shared with the cached parse, which nothing mutates: upstream's types
    validate it into new containers)."""
    root = _shallow(data)
    copied = {id(root)}
    for path, value in patches:
        node = root
        for key in path[:-1]:
            child = node[key]
            if id(child) not in copied:
                child = _shallow(child)
                node[key] = child
                copied.add(id(child))
            node = child
        node[path[-1]] = value
    return root


def _shallow(container: Any) -> Any:
    if isinstance(container, dict):
        return dict(container)
    if isinstance(container, list):
        return list(container)
    raise TypeError(f"cannot copy a {type(container).__name__} on an environment path")


class EnvironmentTemplate:
    """A suite's environment, parsed once; `environment(injections)` is a fresh one."""

    def __init__(self, suite: TaskSuite) -> None:
        from agentdojo.task_suite.task_suite import read_suite_file

        self._suite = suite
        self.defaults: dict[str, str] = suite.get_injection_vector_defaults()
        self._default_environment = suite.load_and_inject_default_environment({})
        text = read_suite_file(suite.name, "environment.yaml", suite.data_path)
        self._data: Any = yaml.safe_load(text.format(**self.defaults))
        spots = _spots(text, frozenset(self.defaults))
        self.fast = spots is not None and all(
            _get(self._data, spot.path) == parse_flow_scalar(spot.source.format(**self.defaults))
            for spot in spots
        )
        self._spots: list[_Spot] = spots or []

    def environment(self, injections: Mapping[str, str]) -> TaskEnvironment:
        """What `suite.load_and_inject_default_environment(injections)` returns, built
        without parsing the suite's text again. Unknown vectors raise upstream's ValueError."""
        from agentdojo.task_suite.task_suite import validate_injections

        injections = dict(injections)
        validate_injections(injections, self.defaults)
        changed = {k for k, v in injections.items() if v != self.defaults[k]}
        if not changed:
            return self._default_environment.model_copy(deep=True)
        if not self.fast:
            return self._suite.load_and_inject_default_environment(injections)
        values = {**self.defaults, **injections}
        patches: list[tuple[tuple[Any, ...], str]] = []
        for spot in self._spots:
            if spot.vectors.isdisjoint(changed):
                continue
            value = parse_flow_scalar(spot.source.format(**values))
            if value is None:
                return self._suite.load_and_inject_default_environment(injections)
            patches.append((spot.path, value))
        return self._suite.environment_type.model_validate(_patched(self._data, patches))

    def pristine(self) -> bool:
        """Whether the cached parse still equals a new parse of the default text (a check for
        tests: no conversation may have mutated the shared data)."""
        from agentdojo.task_suite.task_suite import read_suite_file

        text = read_suite_file(self._suite.name, "environment.yaml", self._suite.data_path)
        return bool(self._data == yaml.safe_load(text.format(**self.defaults)))
