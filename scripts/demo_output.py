"""What `make demo` shows of the CDK CLI's output, and how it ends (scripts/demo.py; tests/unit/test_demo_output.py).

The CLI prints its validation report (the constructs' annotations) at every command that loads the assembly, one
block per construct: `cdk synth` and `cdk deploy` each printed the kit's 900-character "training image is
unconfirmed" note once per training cluster, each block under a `/tmp/.../lib/program.js:1:5591` line (the jsii
kernel's bundle, taken for user code). ``CliFilter`` shows each note once, with one line per construct it names, drops
the location lines, and says in one line when a later command repeats notes already shown. Errors stay whole.

Modes: ``normal`` also leaves out the deploy's per-resource event lines, the asset build and publish lines, the
stacks' Outputs and the steps around each stack's one line (the demo prints what was deployed itself); ``quiet`` shows
the notes and errors only (the caller prints the command's last lines if it fails); ``verbose`` passes everything
through unchanged.
"""

from __future__ import annotations

import re
import textwrap
from collections.abc import Callable
from dataclasses import dataclass, field

MODES = ("quiet", "normal", "verbose")
WIDTH = 118

_ANSI = re.compile(r"\x1b\[[0-9;]*[A-Za-z]")
_LOCATION = re.compile(r"^(or )?\S+:\d+:\d+$|^\(and \d+ more\.\.\.\)$")
_SEVERITY = re.compile(r"^(INFO|WARNING|WARN|ERROR|FATAL) (.+?)(?: \(([^()]*)\))?$")
_BLOCK_END = re.compile(r"^   (Acknowledge with '[^']*'|Rule \S+)$")
_NOISE = (
    re.compile(r"^\S+ \|\s*\d+/\d+ \|"),  # nf-dev-network |  1/51 | 6:22:51 PM | CREATE_COMPLETE | AWS::... | id
    re.compile(r"^\S+: (start|success): (Building|Built|Publishing|Published) "),  # asset build and publish
    re.compile(r"^Outputs:$|^Stack ARN:$|^arn:aws[\w-]*:cloudformation:|^[\w-]+\.\w+ = "),  # each stack's Outputs
    # the steps around each stack's one line (✅  nf-dev-network), and blank lines
    re.compile(r"^\s*$|^[\w-]+$|^[\w-]+: (creating CloudFormation changeset|deploying)\.\.\.|^✨  (Deployment|Synthesis) "
               r"time: |^Supply a stack id |^Trusted accounts for |^Using default execution policy "),
)


def plain(line: str) -> str:
    return _ANSI.sub("", line)


@dataclass
class Note:
    """One validation-report entry: a severity and a message, for the constructs it was raised on."""

    severity: str
    message: str
    constructs: list[str] = field(default_factory=list)
    extra: list[str] = field(default_factory=list)  # "Suggested fix" lines

    @property
    def error(self) -> bool:
        return self.severity in ("ERROR", "FATAL")


def render_note(note: Note, width: int = WIDTH) -> list[str]:
    """A note once: its severity and message wrapped under four spaces, then one line per construct."""
    head = f"{note.severity} ({len(note.constructs)} construct{'s' * (len(note.constructs) != 1)}): {note.message}"
    lines = textwrap.wrap(head, width=width, initial_indent="    ", subsequent_indent="      ",
                          break_long_words=False, break_on_hyphens=False)
    lines += [f"      - {c}" for c in note.constructs]
    lines += [f"      {x.strip()}" for x in note.extra]
    return lines


class CliFilter:
    """Feed the CLI's lines one at a time (``feed``) and ``close`` at the end; shown lines go to ``emit``. One filter
    serves every CLI command of a demo, so a note shown at synth is not shown again at deploy."""

    def __init__(self, emit: Callable[[str], None], mode: str = "normal", width: int = WIDTH) -> None:
        if mode not in MODES:
            raise ValueError(f"mode: {mode!r} is not one of {', '.join(MODES)}")
        self._out, self.mode, self.width = emit, mode, width
        self.emitted = 0  # lines shown so far
        self.shown: set[tuple[str, str]] = set()
        self._notes: list[Note] = []  # the report being read: consecutive blocks
        self._block: list[str] = []  # the raw lines of the block being read
        self._note: Note | None = None

    def emit(self, text: str) -> None:
        self.emitted += 1
        self._out(text)

    def feed(self, raw: str) -> bool:
        """Take one line of the CLI's output; True when something was shown (this line, or notes it completed)."""
        before = self.emitted
        self._feed(raw)
        return self.emitted > before

    def _feed(self, raw: str) -> None:
        if self.mode == "verbose":
            self.emit(raw)
            return
        line = plain(raw).rstrip()
        if self._note is not None:  # inside a block: its construct, an optional fix, then its end line
            self._block.append(raw)
            if _BLOCK_END.match(line):
                self._notes.append(self._note)
                self._note, self._block = None, []
            elif line.startswith("   ") and not self._note.constructs:
                self._note.constructs.append(line.strip())
            elif line.startswith("   "):
                self._note.extra.append(line)
            else:  # not the report after all: give the lines back as they were
                lines, self._note, self._block = self._block, None, []
                self._flush_notes()
                for text in lines:
                    self._pass(text)
            return
        if _LOCATION.match(line):
            self._block.append(raw)
            return
        found = _SEVERITY.match(line)
        if found:
            self._block.append(raw)
            self._note = Note(found.group(1), found.group(2))
            return
        if not line and self._notes and not self._block:
            return  # the blank line between two blocks
        self._flush_notes()
        for text in self._block:  # location lines not followed by a block: not the report
            self._pass(text)
        self._block = []
        self._pass(raw)

    def close(self) -> None:
        pending, self._block, self._note = self._block, [], None
        self._flush_notes()
        for text in pending:
            self._pass(text)

    def _pass(self, raw: str) -> None:
        line = plain(raw)
        if self.mode == "quiet" or any(p.search(line) for p in _NOISE):
            return
        self.emit(raw)

    def _flush_notes(self) -> None:
        notes, self._notes = self._notes, []
        grouped: dict[tuple[str, str], Note] = {}
        for n in notes:
            if n.error:  # an error is shown whole, every time, on each construct
                for text in render_note(n, self.width):
                    self.emit(text)
                continue
            key = (n.severity, n.message)
            if key in grouped:
                grouped[key].constructs += [c for c in n.constructs if c not in grouped[key].constructs]
            else:
                grouped[key] = Note(n.severity, n.message, list(n.constructs), list(n.extra))
        again = [n for key, n in grouped.items() if key in self.shown]
        for key, n in grouped.items():
            if key not in self.shown:
                self.shown.add(key)
                for text in render_note(n, self.width):
                    self.emit(text)
        if again:
            count = sum(len(n.constructs) for n in again)
            self.emit(f"    (the CDK CLI repeats {len(again)} note{'s' * (len(again) != 1)} shown above, on {count} "
                      f"construct{'s' * (count != 1)}: not printed again)")


def story_block(title: str, story: str, width: int = WIDTH) -> list[str]:
    """The demo's last lines: the phase's story under a rule, wrapped, so it is what a person reads last."""
    rule = "=" * min(width, 100)
    body = textwrap.wrap(story, width=width, initial_indent="    ", subsequent_indent="    ",
                         break_long_words=False, break_on_hyphens=False) or ["    nothing to tell"]
    return ["", rule, f"  {title}", rule, *body, rule]
