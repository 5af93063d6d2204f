#!/usr/bin/env python3
"""Checks the shape of src/ (`./tox.sh lint`): no import circles, no oversized files.

1. Import circles. Every file under src/ is a module: `src/a/b.rs` is `a::b`, `src/a/mod.rs`
   is `a`, `src/lib.rs` and `src/main.rs` the crate root. The paths a file names in its
   non-test code (`use crate::...`, `use super::...`, `self::`, and the same paths written
   inline, such as `crate::store::Write::Job(..)`) are resolved to the longest module prefix
   that is a file of src/. The rule, at every folder: its children (each file, and each
   sub-folder counted with everything under it as one module) must form a DAG. An import from
   `api/kube/clusters/plan.rs` of `api/kube/status.rs` is an edge `clusters -> status` among
   the children of `api/kube/`, and, one level up, nothing (both are inside `kube`); an import
   of `crate::store` from `api/kube/watch.rs` is an edge `api -> store` among the children of
   the crate root. A child naming its own folder's `mod.rs` (or a parent naming its children)
   is not an edge: a folder's `mod.rs` is its front door, and what it re-exports is counted
   where the import names it. Test code (everything from a file's first `#[cfg(test)]` on)
   is not read.
2. Size. A file over 800 lines before its first `#[cfg(test)]` is reported.

Run with the repository root as the working directory (tox.sh does). Prints every circle
(each as `a -> b -> a` with one file and line per edge) and every oversized file, and exits 1
when there is any. `--graph` also prints every folder's edges.
"""

import re
import sys
from collections import defaultdict
from pathlib import Path

SRC = Path("src")
MAX_LINES = 800


def module_of(path):
    """The module path (a tuple) of a file under src/."""
    parts = list(path.relative_to(SRC).with_suffix("").parts)
    if parts[-1] == "mod" or (len(parts) == 1 and parts[0] in ("lib", "main")):
        parts = parts[:-1]
    return tuple(parts)


def non_test(text):
    """The text before the first `#[cfg(test)]`, and its line count."""
    at = text.find("#[cfg(test)]")
    head = text if at < 0 else text[:at]
    return head, head.count("\n")


def strip(text):
    """The text with comments and string and char literals blanked, newlines kept."""
    out = []
    i, n = 0, len(text)
    while i < n:
        c = text[i]
        if text.startswith("//", i):
            j = text.find("\n", i)
            j = n if j < 0 else j
            i = j
        elif text.startswith("/*", i):
            depth, j = 1, i + 2
            while j < n and depth:
                if text.startswith("/*", j):
                    depth, j = depth + 1, j + 2
                elif text.startswith("*/", j):
                    depth, j = depth - 1, j + 2
                else:
                    j += 1
            out.append("\n" * text.count("\n", i, j))
            i = j
        elif c == "r" and re.match(r'r#*"', text[i:i + 20]) and not (
            i and (text[i - 1].isalnum() or text[i - 1] == "_")
        ):
            hashes = re.match(r"r(#*)\"", text[i:]).group(1)
            end = text.find('"' + hashes, i + 2 + len(hashes))
            end = n if end < 0 else end + 1 + len(hashes)
            out.append('""' + "\n" * text.count("\n", i, end))
            i = end
        elif c == '"':
            j = i + 1
            while j < n and text[j] != '"':
                j += 2 if text[j] == "\\" else 1
            out.append('""' + "\n" * text.count("\n", i, j))
            i = j + 1
        elif c == "'" and re.match(r"'(\\.|[^\\'])'|'\\u\{[0-9a-fA-F]+\}'", text[i:i + 12]):
            m = re.match(r"'(\\.|[^\\'])'|'\\u\{[0-9a-fA-F]+\}'", text[i:i + 12])
            out.append("' '")
            i += len(m.group(0))
        else:
            out.append(c)
            i += 1
    return "".join(out)


def expand(tree):
    """The paths of one `use` tree: `a::{b, c::{self, d}}` -> [a::b, a::c, a::c::d]."""
    return _expand(re.sub(r"\s+", "", tree))


def _expand(tree):
    if "{" not in tree:
        return [tree]
    i = tree.index("{")
    prefix = tree[:i].rstrip(":")
    inner = tree[i + 1:tree.rindex("}")]
    items, depth, cur = [], 0, ""
    for ch in inner:
        if ch == "," and depth == 0:
            items.append(cur)
            cur = ""
            continue
        depth += ch == "{"
        depth -= ch == "}"
        cur += ch
    items.append(cur)
    paths = []
    for item in filter(None, items):
        for p in _expand(item):
            if p == "self":
                paths.append(prefix)
            else:
                paths.append(f"{prefix}::{p}" if prefix else p)
    return paths


USE = re.compile(r"\buse\s+([^;]+);")
AS = re.compile(r"\s+as\s+\w+")
INLINE = re.compile(r"\b((?:crate|super|self)(?:\s*::\s*(?:super|[A-Za-z_]\w*))+)")


def paths_in(code):
    """(path, line) for every crate-relative path the code names."""
    found = []
    taken = []
    for m in USE.finditer(code):
        line = code.count("\n", 0, m.start()) + 1
        for p in expand(AS.sub("", m.group(1))):
            found.append((p, line))
        taken.append((m.start(), m.end()))
    for m in INLINE.finditer(code):
        if any(a <= m.start() < b for a, b in taken):
            continue
        line = code.count("\n", 0, m.start()) + 1
        found.append((re.sub(r"\s+", "", m.group(1)), line))
    return found


def resolve(path, here, is_folder, modules):
    """The module a path names from module `here`, or None when it leaves the crate."""
    segs = path.split("::")
    if segs[0] == "crate":
        base, segs = [], segs[1:]
    elif segs[0] in ("super", "self"):
        # `super` of a file module is its folder; of a folder's mod.rs, the folder's parent.
        base = list(here)
        while segs and segs[0] in ("super", "self"):
            if segs[0] == "super":
                base = base[:-1]
            segs = segs[1:]
    else:
        # A relative path: a child module of `here` (for a folder's mod.rs), else external.
        if not is_folder or tuple(here) + (segs[0],) not in modules:
            return None
        base = list(here)
    full = tuple(base) + tuple(segs)
    for k in range(len(full), -1, -1):
        if full[:k] in modules:
            return full[:k]
    return None


def main():
    show_graph = "--graph" in sys.argv
    files = sorted(SRC.rglob("*.rs"))
    modules = {module_of(f): f for f in files}
    problems = 0
    # edges[folder][(a, b)] = (file, line) of the first import making the edge
    edges = defaultdict(dict)
    for f in files:
        text = f.read_text(encoding="utf-8")
        head, lines = non_test(text)
        if lines > MAX_LINES:
            print(f"{f}: {lines} lines of non-test code (at most {MAX_LINES})")
            problems += 1
        here = module_of(f)
        is_folder = f.name in ("mod.rs", "lib.rs", "main.rs")
        for path, line in paths_in(strip(head)):
            target = resolve(path, here, is_folder, modules)
            if target is None:
                continue
            k = 0
            while k < min(len(here), len(target)) and here[k] == target[k]:
                k += 1
            if k == len(here) or k == len(target):
                continue  # one contains the other: a folder and its own children
            folder = here[:k]
            edge = (here[k], target[k])
            edges[folder].setdefault(edge, (f, line))
    for folder in sorted(edges):
        graph = defaultdict(set)
        for a, b in edges[folder]:
            graph[a].add(b)
        name = "/".join(("src",) + folder)
        if show_graph:
            for (a, b), (f, line) in sorted(edges[folder].items()):
                print(f"{name}: {a} -> {b}  ({f}:{line})")
        for scc in components(graph):
            cycle = a_cycle(graph, scc)
            steps = " -> ".join(cycle)
            print(f"{name}/: import circle {steps}")
            if len(scc) > len(cycle) - 1:
                print(f"    (and more, among {', '.join(scc)})")
            for a, b in zip(cycle, cycle[1:]):
                f, line = edges[folder][(a, b)]
                print(f"    {a} -> {b}: {f}:{line}")
            problems += 1
    if problems:
        print(f"{problems} problem(s)")
        return 1
    print(f"{len(files)} files under src/: no import circle, none over {MAX_LINES} lines")
    return 0


def components(graph):
    """Strongly connected components of more than one node (Tarjan), in a stable order."""
    index, low, stack, on, out = {}, {}, [], set(), []
    counter = [0]
    nodes = sorted(set(graph) | {b for bs in graph.values() for b in bs})

    def visit(v):
        index[v] = low[v] = counter[0]
        counter[0] += 1
        stack.append(v)
        on.add(v)
        for w in sorted(graph.get(v, ())):
            if w not in index:
                visit(w)
                low[v] = min(low[v], low[w])
            elif w in on:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            comp = []
            while True:
                w = stack.pop()
                on.discard(w)
                comp.append(w)
                if w == v:
                    break
            if len(comp) > 1:
                out.append(sorted(comp))

    for v in nodes:
        if v not in index:
            visit(v)
    return sorted(out)


def a_cycle(graph, scc):
    """One shortest circle through the first node of a component, as a closed list."""
    start = scc[0]
    members = set(scc)
    prev = {start: None}
    queue = [start]
    while queue:
        v = queue.pop(0)
        for w in sorted(graph.get(v, ())):
            if w not in members:
                continue
            if w == start:
                path = [v]
                while prev[path[-1]] is not None:
                    path.append(prev[path[-1]])
                return list(reversed(path)) + [start]
            if w not in prev:
                prev[w] = v
                queue.append(w)
    return scc + [start]


if __name__ == "__main__":
    sys.exit(main())
