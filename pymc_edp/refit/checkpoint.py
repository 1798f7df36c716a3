"""A checkpoint folder: each refit saved as it finishes, damaged files set aside and redone."""

from __future__ import annotations

import hashlib
import json
import logging
import os
from pathlib import Path

import numpy as np
import xarray as xr

from pymc_edp.refit.fingerprint import PARTS
from pymc_edp.refit.outcome import RefitOutcome, jsonable

_log = logging.getLogger("pymc_edp")

__all__ = ["Checkpoint", "config_hash", "content_checksum"]


def config_hash(config: dict) -> str:
    """The first 16 hex digits of the SHA-256 of an audit's refit configuration, as canonical JSON.

    Examples
    --------
    >>> from pymc_edp.refit import config_hash
    >>> config_hash({"draws": 1000, "tune": 500}) == config_hash({"tune": 500, "draws": 1000})
    True
    """
    text = json.dumps(config, sort_keys=True, separators=(",", ":"), default=str)
    return hashlib.sha256(text.encode()).hexdigest()[:16]


_STATUSES = ("ok", "diverged", "error")
#: The outcome's own fields covered by the checksum, with the draws.
_CHECKED_ATTRS = ("index", "label", "status", "reason", "seed")


def content_checksum(ds: xr.Dataset, attrs: dict) -> str:
    """SHA-256 of a saved refit: every draw (name, dtype, shape, bytes) and its outcome fields.

    Checked when the file is read, so edited or corrupted draws are refitted, not used.

    Examples
    --------
    >>> from pymc_edp.refit.checkpoint import content_checksum
    >>> ds = xr.Dataset({"mu": (("chain", "draw"), np.zeros((1, 3)))})
    >>> attrs = {"index": 0, "label": "1", "status": "ok", "reason": "", "seed": 5}
    >>> a = content_checksum(ds, attrs)
    >>> ds["mu"][0, 1] = 0.5
    >>> a == content_checksum(ds, attrs), len(a)
    (False, 64)
    """
    h = hashlib.sha256()
    for name in sorted(map(str, ds.data_vars)):
        arr = np.ascontiguousarray(ds[name].values)
        h.update(f"{name}|{arr.dtype.str}|{arr.shape}|".encode())
        h.update(arr.tobytes())
    for key in _CHECKED_ATTRS:
        h.update(f"{key}={attrs.get(key)}|".encode())
    if "fingerprint" in attrs:  # files written before fingerprints keep their checksum
        h.update(f"fingerprint={attrs['fingerprint']}|".encode())
    return h.hexdigest()


#: Where a sampler's message turns into a backtrace (nutpie's Rust errors, Python's).
_BACKTRACE = ("stack backtrace", "traceback (most recent call last)")


def _brief(err: BaseException, limit: int = 200) -> str:
    """``Type: first line of the message`` and a Rust ``Caused by:``'s first cause, on one line."""
    lines = []
    for line in str(err).strip().splitlines():
        if line.strip().lower().startswith(_BACKTRACE):
            break
        if line.strip():
            lines.append(line.strip())
    text = lines[0] if lines else ""
    i = next((i for i, line in enumerate(lines) if line.lower().startswith("caused by")), None)
    if i is not None:
        cause = lines[i][len("caused by") :].lstrip(": ").strip()
        cause = cause or (lines[i + 1] if i + 1 < len(lines) else "")
        if cause and i > 0:
            text = f"{text} (caused by: {cause})"
    if len(text) > limit:
        text = text[: limit - 3] + "..."
    return f"{type(err).__name__}: {text}" if text else type(err).__name__


class Checkpoint:
    """A folder where each finished refit is written as it completes (netCDF).

    ``manifest.json`` holds the configuration of the audit that wrote it; each
    ``refit_<index>.nc`` its :func:`config_hash`, the fingerprint of what it was computed
    from (:mod:`pymc_edp.refit.fingerprint`) and the :func:`content_checksum` of its draws. A
    refit fingerprinted otherwise (or not at all) is moved aside as ``.stale``, one that
    cannot be read or fails its checksum as ``.damaged``, and that neighbour is refitted; a
    damaged manifest is written afresh. :attr:`messages` says what was repaired.

    Parameters
    ----------
    path : str or path-like
        The folder (created if needed).
    config : dict
        What the refits depend on (JSON-serialisable).

    Raises
    ------
    ValueError
        If the folder was written by an audit with a different configuration.

    Examples
    --------
    A zero-byte refit file (a full disk, a killed copy) is set aside, not fatal:

    >>> import tempfile, pathlib
    >>> from pymc_edp.refit import Checkpoint
    >>> folder = pathlib.Path(tempfile.mkdtemp())
    >>> _ = Checkpoint(folder, {"draws": 10})
    >>> (folder / "refit_000001.nc").write_bytes(b"")
    0
    >>> ckpt = Checkpoint(folder, {"draws": 10})
    >>> ckpt.load(1) is None, (folder / "refit_000001.nc.damaged").exists()
    (True, True)
    >>> print(ckpt.messages[0][:60])
    checkpoint refit file refit_000001.nc is damaged and was mov
    """

    def __init__(self, path, config: dict):
        self.path = Path(path)
        self.path.mkdir(parents=True, exist_ok=True)
        self.config_hash = config_hash(config)
        #: what was repaired, one sentence each (returned by ``refit_neighbours``)
        self.messages: list[str] = []
        #: False when the manifest was damaged and rewritten: refit files without a stored
        #: configuration hash can then not be verified and are refitted
        self.manifest_intact = True
        #: saved refits not reused, by what differed: (their message's place, their labels)
        self._stale: dict[str, tuple[int, list]] = {}
        manifest = self.path / "manifest.json"
        if not manifest.exists():
            manifest.write_text(json.dumps(config, indent=1, sort_keys=True))
            return
        try:
            old = json.loads(manifest.read_text())
            if not isinstance(old, dict):
                raise ValueError(f"expected a JSON object, found a {type(old).__name__}")
        except Exception as err:  # unreadable, truncated, garbled
            self._replace_manifest(manifest, config, _brief(err))
            return
        if old != config:
            diff = sorted(k for k in set(old) | set(config) if old.get(k) != config.get(k))
            raise ValueError(
                f"checkpoint {self.path} was written by a different audit (differs in "
                f"{diff}); use a new checkpoint path or the same settings"
            )

    def _replace_manifest(self, manifest: Path, config: dict, problem: str) -> None:
        # refuse a folder of another audit before touching anything in it
        for f in sorted(self.path.glob("refit_*.nc")):
            try:
                with xr.open_dataset(f) as ds:
                    stored = ds.attrs.get("config_hash")
            except Exception:  # damaged: set aside when loaded
                continue
            if stored is not None and str(stored) != self.config_hash:
                raise ValueError(
                    f"checkpoint {self.path} has a damaged manifest ({manifest.name}: "
                    f"{problem}) and its refit files were written by a different audit "
                    f"({f.name} has configuration hash {stored}, this audit "
                    f"{self.config_hash}); use a new checkpoint path or the same settings"
                )
        aside = manifest.with_name(manifest.name + ".damaged")
        os.replace(manifest, aside)
        manifest.write_text(json.dumps(config, indent=1, sort_keys=True))
        self.manifest_intact = False
        self.messages.append(
            f"checkpoint manifest {manifest} is damaged ({problem}); moved it to "
            f"{aside.name} and wrote a new one from this audit's settings. Saved refits are "
            "reused only where their stored configuration hash matches this audit"
        )

    def _file(self, index: int) -> Path:
        return self.path / f"refit_{index:06d}.nc"

    def _set_aside(self, f: Path, suffix: str) -> str:
        aside = f.with_name(f.name + suffix)
        try:
            os.replace(f, aside)  # replaces an older file set aside under the same name
        except OSError as err:
            f.unlink(missing_ok=True)
            return f"could not be moved aside ({err}) and was deleted"
        return f"was moved to {aside.name}"

    def load(self, index: int, fingerprint: dict | None = None) -> RefitOutcome | None:
        """The saved outcome of refit ``index``, or None (missing, damaged, not ``fingerprint``'s).

        Raises ``ValueError`` if the file's configuration hash is not this audit's.
        """
        f = self._file(index)
        if not f.exists():
            return None
        try:
            with xr.open_dataset(f) as ds:
                ds = ds.load()
            saved_print = ds.attrs.get("fingerprint")  # _parse clears the attributes
            out, stored = self._parse(ds, index)
        except Exception as err:  # truncated, zero bytes, missing or garbled attributes
            where = self._set_aside(f, ".damaged")
            self.messages.append(
                f"checkpoint refit file {f.name} is damaged and {where} ({_brief(err)}); "
                "refitting that neighbour"
            )
            return None
        if stored is None and not self.manifest_intact:  # older than configuration hashes
            where = self._set_aside(f, ".unverified")
            self.messages.append(
                f"checkpoint refit file {f.name} has no configuration hash and the manifest "
                f"was damaged, so it cannot be checked against this audit; it {where} and "
                "that neighbour is refitted"
            )
            return None
        if stored is not None and stored != self.config_hash:
            raise ValueError(
                f"checkpoint {self.path}: {f.name} was written by a different audit "
                f"(configuration hash {stored}, this audit {self.config_hash}); use a new "
                "checkpoint path or the same settings"
            )
        if fingerprint is not None and not self._fits(f, saved_print, out, fingerprint):
            return None
        return out

    def _fits(self, f: Path, saved_print, out: RefitOutcome, fingerprint: dict) -> bool:
        """Whether ``out`` (``saved_print`` from ``f``) is ``fingerprint``'s; else set aside."""
        try:
            saved = json.loads(saved_print) if saved_print is not None else None
        except (TypeError, ValueError):
            saved = None
        if not isinstance(saved, dict):
            why = (
                "written by an older version of pymc_edp, which did not record the model, "
                "data and neighbours they were computed from"
            )
        else:
            keys = [*PARTS, *sorted((set(saved) | set(fingerprint)) - set(PARTS))]
            differ = [PARTS.get(k, k) for k in keys if saved.get(k) != fingerprint.get(k)]
            if not differ:
                return True
            why = f"computed from {' and '.join(differ)} than this audit's"
        where = self._set_aside(f, ".stale")
        at, labels = self._stale.setdefault(why, (len(self.messages), []))
        labels.append(out.label)
        shown = ", ".join(map(str, labels[:10])) + ("..." if len(labels) > 10 else "")
        message = (
            f"checkpoint {self.path}: the saved refits of {len(labels)} neighbour(s) ({shown}) "
            f"were {why}, so they are not reused: each was refitted, its file set aside "
            f"(the last one, {f.name}, {where}). Keep one checkpoint folder per model and data"
        )
        if at == len(self.messages):
            self.messages.append(message)
        else:
            self.messages[at] = message
        return False

    @staticmethod
    def _parse(ds: xr.Dataset, index: int) -> tuple[RefitOutcome, str | None]:
        a = dict(ds.attrs)
        missing = [k for k in (*_CHECKED_ATTRS, "seconds") if k not in a]
        if missing:
            raise ValueError(f"missing attribute(s) {missing}")
        if "checksum" not in a:
            raise ValueError("no checksum: written by an older version or edited")
        if content_checksum(ds, a) != str(a["checksum"]):
            raise ValueError("its draws do not match their checksum (edited or corrupted)")
        if int(a["index"]) != index:
            raise ValueError(f"holds refit {int(a['index'])}, not {index}")
        status = str(a["status"])
        if status not in _STATUSES:
            raise ValueError(f"unknown status {status!r}")
        post = None
        if status != "error":
            if not ds.data_vars:
                raise ValueError(f"status {status!r} but no posterior draws")
            post = ds
            post.attrs = {}
        label, seed, seconds = json.loads(a["label"]), int(a["seed"]), float(a["seconds"])
        out = RefitOutcome(index, label, status, str(a["reason"]), seed, seconds, post)
        stored = a.get("config_hash")
        return out, None if stored is None else str(stored)

    def save(self, out: RefitOutcome, fingerprint: dict | None = None) -> None:
        """Write one outcome atomically, with the configuration hash and ``fingerprint``."""
        ds = out.posterior.copy() if out.posterior is not None else xr.Dataset()
        ds.attrs = {
            "index": out.index,
            "label": json.dumps(jsonable(out.label)),
            "status": out.status,
            "reason": out.reason,
            "seed": out.seed,
            "seconds": out.seconds,
            "config_hash": self.config_hash,
        }
        if fingerprint is not None:
            ds.attrs["fingerprint"] = json.dumps(fingerprint, sort_keys=True)
        ds.attrs["checksum"] = content_checksum(ds, ds.attrs)
        tmp = self._file(out.index).with_suffix(".tmp")
        ds.to_netcdf(tmp)
        os.replace(tmp, self._file(out.index))
