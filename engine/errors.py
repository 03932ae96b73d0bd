"""Exceptions raised by the engine.

Every message names the bad value, what would have been valid and how to fix it, so the CLI
and the UI can show it as it is.
"""

from __future__ import annotations

import logging


class EngineError(Exception):
    """Base class of every error the engine raises on purpose."""


class ConfigError(EngineError, ValueError):
    """An unknown name or an out-of-range parameter."""


class DataFormatError(EngineError, ValueError):
    """A dataset or corpus file that cannot be read: names file, line and field."""

    def __init__(self, path: object, problem: str, *, line: int | None = None,
                 field: str | None = None, fix: str | None = None) -> None:
        where = f"{path}" + (f", line {line}" if line is not None else "")
        what = f"field {field!r}: {problem}" if field else problem
        message = f"{where}: {what}"
        if fix:
            message += f" ({fix})"
        super().__init__(message)
        self.path, self.line, self.field = path, line, field
        self.problem, self.fix = problem, fix


class ResourceMissingError(EngineError, FileNotFoundError):
    """A packaged model or data file is not installed; the message says what to install."""


class TrainingError(EngineError, RuntimeError):
    """Training produced no usable model (it diverged); nothing was saved."""


def log_failure(logger: logging.Logger, what: str, err: BaseException) -> None:
    """Log that `what` failed with `err`. A refusal (an EngineError: a bad input, a missing
    file; its message names the fix) is one WARNING line: its traceback would only show
    where the check is. Anything else is a bug and keeps its traceback, as an ERROR."""
    if isinstance(err, EngineError):
        logger.warning("%s failed: %s", what, " ".join(str(err).split()))
    else:
        logger.error("%s failed", what, exc_info=err)


def check_choice(kind: str, value: str, choices: object) -> str:
    """Return `value` if it is one of `choices`, else raise ConfigError listing them."""
    valid = sorted(choices)  # type: ignore[arg-type]
    if value not in valid:
        raise ConfigError(f"Unknown {kind} {value!r}. Choose from: {', '.join(valid)}.")
    return value


def check_range(name: str, value: float, low: float, high: float) -> float:
    """Return `value` if low <= value <= high, else raise ConfigError naming the range."""
    if not low <= value <= high:
        raise ConfigError(f"{name}={value!r} is out of range; allowed: {low} to {high}.")
    return value
