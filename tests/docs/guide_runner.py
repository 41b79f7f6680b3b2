"""Run the code examples of the user guide (docs/) and README.md, so no example can rot.

Why a runner of our own: the examples are Markdown pages for people, not doctests; a page's examples build on
each other (one creates a table, the next reads it), so a page runs top to bottom in ONE namespace and one
working directory, as a reader pasting them into one Python session would.

Conventions in the Markdown (HTML comments: they do not show in the built site):

- `<!-- examples: KIND -->` near the top of a page says what it needs: `embedded` (the default: a temp
  directory as working directory), `spark` (a `spark` variable: the suite's classic session), `connect` (the
  suite's Connect session), `uc` (a Unity Catalog test server; its URL and token replace the page's
  placeholders), `none` (nothing runs: a page without examples).
- `<!-- example: skip REASON -->` right before a fence: that example is not run (REASON is required; used
  sparingly and each says why).
- ```python fences run with exec(); ```bash fences run in bash (`set -e`) in the page's directory, with the
  test interpreter's bin directory first on PATH (so `deltakernel` and `python` are ours). A bash fence made
  only of `deltakernel ...` commands runs each command in this process through `deltakernel.cli.main` (the
  same argument parsing and code; exit status 0 required): a new Python process per command costs 1-5 s, which
  the suite's time budget cannot pay for ~20 commands. Other fences (```text, ```yaml, ...) are output or
  configuration and are not run.
- A Python line ending in `# -> TEXT` states what it prints: the example's output must contain TEXT as a whole
  line, in the order of those comments (so the values a reader is shown are checked, not only that it runs).
"""

from __future__ import annotations

import contextlib
import io
import os
import re
import subprocess
import sys
import textwrap
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

REPO = Path(__file__).resolve().parents[2]
DOCS = REPO / "docs"
RUN_LANGS = {"python", "py", "bash", "sh", "shell"}

_FENCE = re.compile(r"^(?P<indent>[ \t]*)(?P<ticks>`{3,}|~{3,})\s*(?P<info>[^\n]*)$")
_PAGE_KIND = re.compile(r"<!--\s*examples:\s*(?P<kind>[\w-]+)\s*-->")
_SKIP = re.compile(r"<!--\s*example:\s*skip\s+(?P<reason>.+?)\s*-->")


@dataclass
class Example:
    page: Path
    line: int  # 1-based line of the opening fence
    lang: str
    code: str
    skip: str | None = None  # the reason, when the page says not to run it

    @property
    def where(self) -> str:
        return f"{self.page.relative_to(REPO)}:{self.line}"


@dataclass
class Page:
    path: Path
    kind: str
    examples: list[Example] = field(default_factory=list)


def parse(path: Path) -> Page:
    """The page's kind and its fenced examples, in order."""
    text = path.read_text(encoding="utf-8")
    found = _PAGE_KIND.search(text)
    page = Page(path, found.group("kind") if found else "embedded")
    lines = text.splitlines()
    i = 0
    pending_skip: str | None = None
    while i < len(lines):
        m = _FENCE.match(lines[i])
        if m is None:
            skip = _SKIP.search(lines[i])
            if skip:
                pending_skip = skip.group("reason")
            elif lines[i].strip() and not lines[i].lstrip().startswith("<!--"):
                pending_skip = None
            i += 1
            continue
        indent, ticks = m.group("indent"), m.group("ticks")
        lang = (m.group("info").split() or [""])[0].lstrip("{.").rstrip("}").lower()
        start = i
        body: list[str] = []
        i += 1
        while i < len(lines) and not (lines[i].strip().startswith(ticks) and lines[i].strip().strip(ticks[0]) == ""):
            body.append(lines[i][len(indent):] if lines[i].startswith(indent) else lines[i].lstrip())
            i += 1
        i += 1  # the closing fence
        if lang in RUN_LANGS:
            page.examples.append(Example(path, start + 1, "python" if lang in ("python", "py") else "bash",
                                         textwrap.dedent("\n".join(body)) + "\n", pending_skip))
        pending_skip = None
    return page


def guide_pages() -> list[Page]:
    """Every page of the guide (docs/ less the design records, which hold no examples) and README.md."""
    pages = [parse(p) for p in sorted(DOCS.rglob("*.md"))
             if p.name not in ("decisions.md", "benchmark-history.md", "architecture.md")]
    return [*pages, parse(REPO / "README.md")]


def run_page(page: Page, workdir: Path, namespace: dict[str, object] | None = None,
             replacements: dict[str, str] | None = None, env: dict[str, str] | None = None) -> list[str]:
    """Run the page's examples in order in one namespace with `workdir` as the working directory.

    `replacements` are literal text substitutions (a test server's URL for the page's placeholder one); `env`
    adds environment variables for the shell examples. Raises AssertionError naming the failing example.
    Returns the skipped examples' locations and reasons (for the test's report)."""
    ns: dict[str, object] = {"__name__": "__guide__"}
    ns.update(namespace or {})
    skipped: list[str] = []
    old_cwd, old_env = Path.cwd(), dict(os.environ)
    os.chdir(workdir)
    try:
        for ex in page.examples:
            if ex.skip:
                skipped.append(f"{ex.where}: {ex.skip}")
                continue
            code = ex.code
            for old, new in (replacements or {}).items():
                code = code.replace(old, new)
            if ex.lang == "python":
                out = io.StringIO()
                try:
                    with contextlib.redirect_stdout(_Tee(out, sys.stdout)):
                        exec(compile(code, ex.where, "exec"), ns)
                except Exception as exc:
                    raise AssertionError(f"example at {ex.where} failed: {type(exc).__name__}: {exc}\n{code}") from exc
                _check_outputs(ex, code, out.getvalue())
            else:
                _run_shell(ex, code, workdir, env)
    finally:
        os.chdir(old_cwd)
        os.environ.clear()
        os.environ.update(old_env)
    return skipped


_SHOWS = re.compile(r"#\s*->\s*(?P<text>.+?)\s*$")


class _Tee(io.TextIOBase):
    def __init__(self, *streams: Any) -> None:
        self.streams = streams

    def write(self, text: str) -> int:
        for s in self.streams:
            s.write(text)
        return len(text)


def _check_outputs(ex: Example, code: str, output: str) -> None:
    """Each `# -> TEXT` comment's TEXT is a whole line of the output, in order."""
    lines = [" ".join(line.split()) for line in output.splitlines()]
    pos = 0
    for m in (_SHOWS.search(line) for line in code.splitlines()):
        if m is None:
            continue
        want = " ".join(m.group("text").split())
        try:
            pos = lines.index(want, pos) + 1
        except ValueError:
            raise AssertionError(f"example at {ex.where} should print {want!r}; it printed:\n{output[-3000:]}") from None


def _cli_commands(code: str) -> list[list[str]] | None:
    """The argument lists of a fence made only of `deltakernel ...` commands (comments and `\\` continuations
    allowed), else None."""
    import shlex

    joined = re.sub(r"\\\n", " ", code)
    commands = []
    for line in joined.splitlines():
        words = shlex.split(line, comments=True)
        if not words:
            continue
        if words[0] != "deltakernel" or any(w in ("|", ">", "&&", ";") for w in words):
            return None
        commands.append(words[1:])
    return commands or None


def _run_shell(ex: Example, code: str, workdir: Path, env: dict[str, str] | None) -> None:
    commands = _cli_commands(code)
    if commands is not None:
        from deltakernel.cli import main

        for argv in commands:
            out = io.StringIO()
            with contextlib.redirect_stdout(out), contextlib.redirect_stderr(out):
                try:
                    status = main(argv)
                except SystemExit as exc:  # argparse errors
                    status = exc.code if isinstance(exc.code, int) else 1
            if status not in (0, None):
                raise AssertionError(f"example at {ex.where}: `deltakernel {' '.join(argv)}` exited {status}:\n"
                                     f"{out.getvalue()[-3000:]}")
        return
    bindir = str(Path(sys.executable).parent)
    full_env = {**os.environ, **(env or {}), "PATH": bindir + os.pathsep + os.environ.get("PATH", "")}
    src = str(REPO / "src")
    full_env["PYTHONPATH"] = src + (os.pathsep + full_env["PYTHONPATH"] if full_env.get("PYTHONPATH") else "")
    proc = subprocess.run(["bash", "-e", "-o", "pipefail", "-c", code], cwd=workdir, env=full_env,
                          capture_output=True, text=True, timeout=300)
    if proc.returncode != 0:
        raise AssertionError(f"example at {ex.where} exited {proc.returncode}:\n{code}\n"
                             f"stdout:\n{proc.stdout[-3000:]}\nstderr:\n{proc.stderr[-3000:]}")
