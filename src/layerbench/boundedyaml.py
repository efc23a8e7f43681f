"""Bounded parsing of a user's YAML (a campaign, an import's mapping file, a kubeconfig; the file itself is read by
bounded_read.py): a loader that refuses duplicate keys, nesting beyond a sane depth, alias/merge expansion beyond
a small budget (so a "billion laughs" or merge-key bomb is refused before it is expanded) and overlong values.

Every refusal is a `BadInput` naming the file, the line when known, and the fix.
"""

from __future__ import annotations

from typing import Any

import yaml
from yaml.nodes import MappingNode, Node, ScalarNode, SequenceNode

from layerbench.errors import BadInput, shown

MAX_DEPTH = 32  # a campaign nests 5 levels deep
MAX_NODES = 50_000  # nodes as written, and after alias and merge expansion
MAX_ALIASES = 200
MAX_SCALAR_CHARS = 10_000  # a campaign's longest value; a kubeconfig's embedded certificates ask for more


class _Refused(Exception):
    """A bound was crossed; carries the one-line reason and the line it was found at."""

    def __init__(self, reason: str, node: Node | None = None) -> None:
        line = f"line {node.start_mark.line + 1}: " if node is not None and node.start_mark else ""
        super().__init__(f"{line}{reason}")


class BoundedLoader(yaml.SafeLoader):
    """SafeLoader that counts depth and aliases while composing and refuses duplicate mapping keys."""

    def __init__(self, stream: str, max_scalar: int = MAX_SCALAR_CHARS) -> None:
        super().__init__(stream)
        self._depth = 0
        self._aliases = 0
        self._nodes = 0
        self._max_scalar = max_scalar

    def compose_node(self, parent: Node | None, index: Any) -> Node | None:
        if self.check_event(yaml.AliasEvent):
            self._aliases += 1
            if self._aliases > MAX_ALIASES:
                raise _Refused(f"more than {MAX_ALIASES} aliases (*name); write the values out")
        self._nodes += 1
        if self._nodes > MAX_NODES:  # while composing: a file of many small values is refused before it is parsed
            raise _Refused(f"more than {MAX_NODES:,} values, far more than such a file holds")
        self._depth += 1
        try:
            if self._depth > MAX_DEPTH:
                raise _Refused(f"nesting deeper than {MAX_DEPTH} levels; a campaign needs about 5")
            return super().compose_node(parent, index)  # type: ignore[no-any-return]
        finally:
            self._depth -= 1

    def compose_mapping_node(self, anchor: Any) -> MappingNode:
        node: MappingNode = super().compose_mapping_node(anchor)
        seen: set[str] = set()
        merges = 0
        for key, _ in node.value:
            if isinstance(key, ScalarNode) and key.tag == "tag:yaml.org,2002:merge":
                merges += 1  # a second one is a duplicate key, and which of them wins is the loader's choice
                if merges > 1:
                    raise _Refused("two merge keys (<<) in one mapping; merge both in one: <<: [*a, *b]", key)
            elif isinstance(key, ScalarNode):
                if key.value in seen:
                    raise _Refused(f"key {shown(key.value)} appears twice in one mapping; keep one", key)
                seen.add(key.value)
        return node

    def compose_scalar_node(self, anchor: Any) -> ScalarNode:
        node: ScalarNode = super().compose_scalar_node(anchor)
        if len(node.value) > self._max_scalar:
            raise _Refused(f"a value of {len(node.value):,} characters; the limit is {self._max_scalar:,}", node)
        return node


def _refuse_tag(loader: BoundedLoader, node: Node) -> None:
    raise _Refused(f"the tag {node.tag.rsplit(':', 1)[-1]} has no place in a campaign; write a plain value", node)


for _tag in ("binary", "set", "omap", "pairs"):
    BoundedLoader.add_constructor(f"tag:yaml.org,2002:{_tag}", _refuse_tag)


def expanded_size(root: Node | None) -> int:
    """How many nodes the document has once every alias and merge is expanded (aliases are shared nodes, so
    a bomb is a small DAG with a huge expansion); raises _Refused past MAX_NODES, and on a recursive alias."""
    sizes: dict[int, int] = {}
    on_path: set[int] = set()

    def size(node: Node) -> int:
        if id(node) in sizes:
            return sizes[id(node)]
        if id(node) in on_path:
            raise _Refused("an alias refers to a node that contains it; remove the recursion", node)
        on_path.add(id(node))
        total = 1
        if isinstance(node, SequenceNode):
            total += sum(size(child) for child in node.value)
        elif isinstance(node, MappingNode):
            total += sum(size(k) + size(v) for k, v in node.value)
        on_path.discard(id(node))
        if total > MAX_NODES:
            raise _Refused(f"aliases and merges expand to more than {MAX_NODES:,} values; write the values out")
        sizes[id(node)] = total
        return total

    return size(root) if root is not None else 0


def load_text(text: str, name: str, max_scalar: int = MAX_SCALAR_CHARS) -> Any:
    """Parse YAML text within the bounds; any problem is a one-line BadInput naming `name`."""
    loader: BoundedLoader | None = None
    try:
        loader = BoundedLoader(text, max_scalar)  # the reader refuses control characters here already
        root = loader.get_single_node()
        expanded_size(root)
        return loader.construct_document(root) if root is not None else None
    except _Refused as error:
        raise BadInput(f"{name}: refused: {error}") from None
    except yaml.YAMLError as error:
        raise BadInput(f"{name}: malformed YAML{_where(error)}: {_problem(error)}; fix the syntax") from None
    except (ValueError, TypeError, OverflowError, RecursionError) as error:  # e.g. an int of 5,000 digits
        raise BadInput(f"{name}: a value cannot be read ({shown(str(error), 80)}); fix it") from None
    finally:
        if loader is not None:
            loader.dispose()


def _where(error: yaml.YAMLError) -> str:
    mark = getattr(error, "problem_mark", None)
    return f" at line {mark.line + 1}, column {mark.column + 1}" if mark else ""


def _problem(error: yaml.YAMLError) -> str:
    return shown(getattr(error, "problem", None) or "not valid YAML", 80, quote=False)
