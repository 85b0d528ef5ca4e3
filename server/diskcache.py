"""Tables built from installed packages, kept on disk between processes.

The place tables take seconds of CPU to build, and every process that looks places up (each
gunicorn worker, the connector's worker, each of the importer's converters) would pay that at
start. The first process saves what it built as a pickle in the cache directory
(`CONTACTDATA_CACHE_DIR`, by default `$XDG_CACHE_HOME/contactdata` or `~/.cache/contactdata`);
the others load it in a tenth of the time. A file's name carries a fingerprint of what it was
built from, so an upgrade of a package or a change of the builder makes a new file.

A pickle runs code when loaded, so only a file this user owns and nobody else can write is
read; a cache that cannot be read or written is built in memory, as if there were none.
"""

from __future__ import annotations

import contextlib
import gc
import logging
import os
import pickle
import tempfile
from collections.abc import Callable
from pathlib import Path
from typing import Any, TypeVar

from server import config

T = TypeVar("T")
log = logging.getLogger(__name__)


def directory() -> Path | None:
    """Where tables are kept; None when the cache is turned off (`CONTACTDATA_CACHE_DIR=off`)."""
    setting = str(config.load()["CACHE_DIR"])
    if setting == "off":
        return None
    if setting:
        return Path(setting)
    base = os.environ.get("XDG_CACHE_HOME") or Path.home() / ".cache"
    return Path(base) / "contactdata"


def load_or_build(name: str, fingerprint: str, build: Callable[[], T]) -> T:
    """The table `name` as saved for `fingerprint`, else `build()` saved for the next process."""
    folder = directory()
    if folder is None:
        return build()
    path = folder / f"{name}-{fingerprint}.pickle"
    found = _load(path)
    if found is not None:
        return found  # type: ignore[no-any-return]
    table = build()
    _save(folder, path, table)
    return table


def _load(path: Path) -> Any:
    try:
        with path.open("rb") as file:
            status = os.fstat(file.fileno())
            if status.st_uid != os.getuid() or status.st_mode & 0o022:
                log.warning("not loading %s: another user owns it or can write it", path)
                return None
            collecting = gc.isenabled()
            gc.disable()  # a pickle of many small objects loads three times as fast without
            try:
                return pickle.load(file)
            finally:
                if collecting:
                    gc.enable()
    except FileNotFoundError:
        return None
    except Exception as error:  # a damaged or foreign file: build again, never fail a start
        log.warning("not loading %s (%s): building it again", path, error)
        return None


def _save(folder: Path, path: Path, table: Any) -> None:
    """Write atomically (processes starting together each save a whole file, the last wins)
    and remove the files of other fingerprints of the same table."""
    try:
        folder.mkdir(mode=0o700, parents=True, exist_ok=True)
        with tempfile.NamedTemporaryFile(dir=folder, prefix=f".{path.name}.", delete=False) as f:
            try:
                pickle.dump(table, f, protocol=pickle.HIGHEST_PROTOCOL)
            except BaseException:
                os.unlink(f.name)
                raise
        os.replace(f.name, path)
    except OSError as error:
        log.warning("cannot save %s (%s): each process builds it", path, error)
        return
    name = path.name.rsplit("-", 1)[0]
    for stale in folder.glob(f"{name}-*.pickle"):
        if stale != path:
            with contextlib.suppress(OSError):
                stale.unlink()
