#!/usr/bin/env python3
"""Checks the reStructuredText documentation (`./tox.sh lint`).

1. Renders README.rst, CONTRIBUTING.rst and every docs/**/*.rst to HTML with docutils and
   fails on any warning or error (report and halt level: warning), as a reader's renderer
   would show a broken page.
2. Every page under docs/ must be the target of a link in README.rst, so no page is
   unreachable from the README.
3. Every relative link in those files (``text <path>`_``) must name a file or directory of
   the repository, resolved from the file that holds it.

Run with the repository root as the working directory (tox.sh does); prints one line per
problem and exits 1 when there is any.
"""

import io
import sys
from pathlib import Path
from urllib.parse import urlsplit

import docutils.core
import docutils.nodes
import docutils.utils

ROOT = Path.cwd()
README = Path("README.rst")


def pages():
    """The files checked: the README, CONTRIBUTING and every page under docs/."""
    files = [README, Path("CONTRIBUTING.rst")]
    files += sorted(Path("docs").rglob("*.rst"))
    return files


def render(path):
    """Renders `path` to HTML; returns (its relative links, the problems reported)."""
    stream = io.StringIO()
    overrides = {
        "report_level": docutils.utils.Reporter.WARNING_LEVEL,
        # Keep going so every problem of the file is reported, not only the first.
        "halt_level": docutils.utils.Reporter.SEVERE_LEVEL + 1,
        "warning_stream": stream,
        "file_insertion_enabled": False,
        "raw_enabled": False,
        "input_encoding": "utf-8",
    }
    text = path.read_text(encoding="utf-8")
    doctree = docutils.core.publish_doctree(
        source=text, source_path=str(path), settings_overrides=overrides
    )
    links = list(relative_links(doctree))
    # The writer's own transforms can report too (e.g. an unreferenced target).
    docutils.core.publish_from_doctree(
        doctree, writer_name="html", settings_overrides=overrides
    )
    problems = [line for line in stream.getvalue().splitlines() if line.strip()]
    return links, problems


def relative_links(doctree):
    """The relative targets (path part, no fragment) of every external-style link."""
    for node in doctree.findall(docutils.nodes.reference):
        uri = node.get("refuri")
        if not uri:
            continue
        parts = urlsplit(uri)
        if parts.scheme or parts.netloc or uri.startswith(("#", "/", "mailto:")):
            continue
        if parts.path:
            yield parts.path


def main():
    failures = []
    linked_from_readme = set()
    files = pages()
    for path in files:
        if not path.is_file():
            failures.append(f"{path}: missing")
            continue
        links, problems = render(path)
        failures.extend(problems)
        for target in links:
            resolved = (path.parent / target).resolve()
            try:
                shown = resolved.relative_to(ROOT)
            except ValueError:
                failures.append(f"{path}: link to {target} leaves the repository")
                continue
            if not resolved.exists():
                failures.append(f"{path}: link to {target} names nothing ({shown})")
            if path == README:
                linked_from_readme.add(shown)
    for page in files:
        if page.parts[0] == "docs" and page not in linked_from_readme:
            failures.append(
                f"{README}: {page} is not linked (add it to the Documentation list)"
            )
    for line in failures:
        print(line)
    names = ", ".join(str(p) for p in files)
    if failures:
        print(f"check_docs: {len(failures)} problem(s) in {len(files)} files", file=sys.stderr)
        return 1
    print(f"check_docs: {len(files)} files render cleanly, every link resolves: {names}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
