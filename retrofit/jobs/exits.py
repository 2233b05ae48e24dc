"""How a command ends when Hydra is in the way: a config that does not compose or a value whose
interpolation does not resolve in one line, Ctrl-C as `interrupted` with exit status
`INTERRUPTED` (`entry_errors`, around every entry point's Hydra `main`; `retrofit.jobs.launch`),
the same one line from a Hydra callback (`callback_errors`), and a full device named with the
folder on it and the fix (`exit_on_full_disk`)."""

import dataclasses
import difflib
import errno
import re
import shlex
import sys
import typing
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from pathlib import Path

import yaml
from hydra.errors import HydraException
from omegaconf.errors import ConfigKeyError, InterpolationResolutionError, OmegaConfBaseException

from retrofit.errors import exit_on_any_error

INTERRUPTED = 130
"""The exit status of a run stopped by Ctrl-C (128 + SIGINT), as a shell reports it."""


def _interrupt_in(err: BaseException | None) -> bool:
    """Whether `err` is a KeyboardInterrupt or was raised while one was handled (a library's
    clean-up can fail on the half-torn state and hide the interrupt behind its own error)."""
    while err is not None:
        if isinstance(err, KeyboardInterrupt):
            return True
        err = err.__cause__ or err.__context__
    return False


@contextmanager
def exit_on_interrupt() -> Iterator[None]:
    """Ctrl-C in the block: `interrupted` and how to resume on stderr, exit status `INTERRUPTED`,
    no traceback. Finished units are in the store; the same command resumes from them."""
    try:
        yield
    except BaseException as err:
        if not _interrupt_in(err):
            raise
        sys.stderr.write("\ninterrupted: finished units are kept; run the same command again to resume\n")
        raise SystemExit(INTERRUPTED) from None


FULL_ERROR = "HYDRA_FULL_ERROR"
"""Set to `1` by every entry point (`retrofit.jobs.launch`): Hydra then re-raises what it would otherwise print as a
stack trace (an interrupt inside its job loop, a config that does not compose), so `entry_errors`
can say it in one line."""


UNKNOWN_KEY = re.compile(r"Could not override '([^']+)'\. To append to your config use \+\S+")
"""Hydra's message for an override of a key the config lacks, with its advice to add the key (which
the job's schema then refuses)."""


def schema_keys(schema: type, prefix: str = "") -> list[str]:
    """The dotted keys of a config schema (a dataclass; nested dataclass fields spelled `a.b`)."""
    keys = []
    for item in dataclasses.fields(schema):
        kind = typing.get_type_hints(schema).get(item.name)
        nested = kind if dataclasses.is_dataclass(kind) else None
        keys += schema_keys(nested, f"{prefix}{item.name}.") if nested else [f"{prefix}{item.name}"]
    return keys


UNQUOTED = re.compile(r"LexerNoViableAltException: ([\w.+~]+?)=([^\n]*)")
"""Hydra's message for an override whose value holds a character its grammar takes only quoted
(`~`, `!`, `#` ...), with the key and the whole value: the rest of its line, spaces and all (a
column name such as `sale price!`)."""


def _said(err: BaseException, keys: Sequence[str]) -> str:
    """`err`'s message on one line; an unknown key's advice replaced by the closest key of `keys`,
    a value Hydra's grammar refuses unquoted answered with the quoted form that works."""
    interpolation = _unresolved(err)
    if interpolation is not None:
        return unresolved_said(interpolation)
    text = " ".join(str(err).split())
    unquoted = UNQUOTED.search(str(err))
    if unquoted is not None:
        key, value = unquoted.group(1), unquoted.group(2).rstrip()
        what = "a ~" if "~" in value else "a character"
        quoted = shlex.quote(f"{key}={_hydra_quoted(value)}")
        home = " (a path's ~ is then your home directory)" if "~" in value else ""
        return f"{key}={value}: Hydra's override grammar does not take {what} unquoted; quote the value, {quoted}{home}"
    unknown = UNKNOWN_KEY.search(text)
    if unknown is None:
        cause = _cause_line(err)
        return f"{text}{f': {cause}' if cause else ''} (fix the config or the override it names)"
    nested = _new_mapping_key(err)
    if nested is not None and unknown.group(1) in keys:
        key, value = unknown.group(1), text.split(f"+{unknown.group(1)}=", 1)[1]
        return (
            f"{nested} is a new key of the mapping {key}, which an override merges into, not replaces "
            f"(add it with '+{nested}=...', or replace the whole mapping with '++{key}={value}')"
        )
    if unknown.group(1) in keys:  # a key of the job's, which the selected config option does not set
        key, value = unknown.group(1), text.split(f"+{unknown.group(1)}=", 1)[1]
        return f"{key} is not set by the {key.split('.')[0]} option selected; add it with '+{key}={value}'"
    close = difflib.get_close_matches(unknown.group(1), keys, n=1)
    hint = f"did you mean {close[0]}?" if close else "no key of this config is close; see --help"
    return f"{unknown.group(1)} is not a key of this config ({hint})"


def _hydra_quoted(value: str) -> str:
    """`value` as a double-quoted string of Hydra's override grammar (its double quotes escaped)."""
    escaped = value.replace('"', '\\"')
    return f'"{escaped}"'


def _cause_line(err: BaseException) -> str:
    """The first line of the OmegaConf error under Hydra's "Error merging override ..." (what is
    wrong with the value, and its key), or "" when there is none."""
    cause = err.__cause__ or err.__context__
    if not isinstance(cause, OmegaConfBaseException):
        return ""
    key = getattr(cause, "full_key", None)
    return reason(cause) + (f" (key {key})" if key else "")


HYDRA_UNSET = "HydraConfig was not set"
"""OmegaConf's reason for a `${hydra:...}` value read outside a running job."""


def _unresolved(err: BaseException | None) -> InterpolationResolutionError | None:
    """The interpolation that did not resolve in `err` or the errors it was raised from, or None."""
    while err is not None:
        if isinstance(err, InterpolationResolutionError):
            return err
        err = err.__cause__ or err.__context__
    return None


def unresolved_said(err: InterpolationResolutionError) -> str:
    """One line for a config value whose interpolation does not resolve: its key, the value as
    written, why, and what to do."""
    key = err.full_key or "a value of the config"
    written = f"={err.child_node}" if err.child_node is not None else ""
    if HYDRA_UNSET in str(err):
        fix = (
            f"a ${{hydra:...}} value exists only inside a running job, and {key} is read before one runs "
            f"(by the checks of a run or a sweep); give {key} a plain path"
        )
    else:
        fix = f"fix the interpolation, or give {key} a plain value"
    return f"{key}{written} does not resolve: {reason(err)}; {fix}"


def reason(err: OmegaConfBaseException) -> str:
    """What an OmegaConf error says is wrong, on one line (its message without the lines naming
    the key and the node's type, which OmegaConf appends)."""
    return str(err).splitlines()[0]


def _new_mapping_key(err: BaseException | None) -> str | None:
    """The full key of a new entry that an override tried to merge into a mapping of the config
    (OmegaConf's 'not in struct' under Hydra's composition), None when `err` is something else."""
    while err is not None:
        if isinstance(err, ConfigKeyError) and "not in struct" in str(err) and err.full_key:
            return str(err.full_key)
        err = err.__cause__ or err.__context__
    return None


@contextmanager
def entry_errors(keys: Sequence[str] = ()) -> Iterator[None]:
    """Around an entry point's Hydra `main` (with `FULL_ERROR=1`): Ctrl-C anywhere as in
    `exit_on_interrupt`; a config that does not compose (an unknown group option or key, named with
    the closest of `keys`, the config's keys, which may be filled in while the block runs; a
    malformed or unsafe YAML file such as a `!!python/object` tag, which is never constructed) as
    one line `error: ...`, exit status 1. Any other error keeps its traceback: it is a bug."""
    with exit_on_interrupt():
        try:
            yield
        except (HydraException, OmegaConfBaseException, yaml.YAMLError) as err:
            if _interrupt_in(err):
                raise
            sys.stderr.write(f"error: {_said(err, keys)}\n")
            raise SystemExit(1) from None


@contextmanager
def callback_errors() -> Iterator[None]:
    """Around a Hydra callback's work, which must end the command itself (Hydra turns an exception in
    a callback into a warning, which would let a failed check pass): a `RetrofitError` or a config
    value that does not resolve as one line `error: ...`, any other error (a bug) with its
    traceback, exit status 1 (`retrofit.errors.exit_on_any_error`)."""
    with exit_on_any_error():
        try:
            yield
        except InterpolationResolutionError as err:
            raise SystemExit(f"error: {unresolved_said(err)}") from None


FULL_DISK = (errno.ENOSPC, errno.EDQUOT)
"""The errors of a write to a device with no space (or quota) left."""


@contextmanager
def exit_on_full_disk(fix: str, folder: Path | None = None) -> Iterator[None]:
    """A write to a full device in the block as one line naming the file (or else the folder
    `folder` as far as it exists, or else "the job's outputs") and `fix`, exit status 1, no traceback."""
    try:
        yield
    except OSError as err:
        if err.errno not in FULL_DISK:
            raise
        existing = folder and next((path for path in (folder, *folder.parents) if path.exists()), folder)
        where = err.filename or existing or "the job's outputs"
        sys.stderr.write(f"error: no space left on the device holding {where} ({err.strerror}); {fix}\n")
        raise SystemExit(1) from None
