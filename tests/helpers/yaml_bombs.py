"""YAML that costs a reader far more than its size (issue 34): an alias bomb and nesting too
deep for PyYAML's recursive composer, as a mapping upload or file would hold them."""

from __future__ import annotations


def alias_bomb(levels: int = 9) -> str:
    """`levels` lines of `aN: &aN [*aN-1, ... nine times]` over nine scalars: under 400 bytes
    that stand for 9**9 values once every alias is followed."""
    lines = [f"a0: &a0 [{','.join('x' * 9)}]"]
    lines += [f"a{n}: &a{n} [{','.join([f'*a{n - 1}'] * 9)}]" for n in range(1, levels)]
    return "\n".join(lines) + "\n"


def nested(levels: int) -> str:
    """A mapping whose `record_id` (line 2) is a path inside `levels` lists, flow style."""
    return f"platform: hubspot\nrecord_id: {'[' * levels}id{']' * levels}\n"


ALIAS_BOMB = alias_bomb()
DEEP = nested(1000)
