"""A progress bar on stderr: redrawn in place on a terminal, one line per step otherwise."""
from __future__ import annotations

import shutil
import sys
from typing import TextIO


class Progress:
    """Counts steps out of total; show(label) names the step now running."""

    def __init__(self, total: int, stream: TextIO = sys.stderr, width: int = 30) -> None:
        self.total, self.done, self.stream, self.width = total, 0, stream, width
        self.tty = stream.isatty()

    def show(self, label: str) -> None:
        filled = self.width * self.done // max(1, self.total)
        line = f"[{'#' * filled}{'.' * (self.width - filled)}] {self.done}/{self.total} {label}"
        if self.tty:
            columns = shutil.get_terminal_size().columns
            self.stream.write("\r" + line[: columns - 1].ljust(columns - 1))
        else:
            self.stream.write(line + "\n")
        self.stream.flush()

    def advance(self, steps: int = 1) -> None:
        self.done += steps

    def close(self) -> None:
        if self.tty:
            self.stream.write("\r" + " " * (shutil.get_terminal_size().columns - 1) + "\r")
            self.stream.flush()
