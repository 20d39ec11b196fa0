"""Checkpoint blocks: data-only, checksummed and authenticated.

Every block a checkpoint writes — the main file, each chunk appended to the draws file — is

    "THRIFTY\\0" | kind (4 bytes) | version (u32) | length (u64) | payload
                 | HMAC-SHA256(key, all before) | SHA-256(all before)

and is read back only if the SHA-256 matches (else: *damaged*) and then the HMAC does (else:
*not written with this user's key*), before anything of the payload is parsed.  The payload is
a NumPy ``.npz`` archive read with ``allow_pickle=False``: a JSON tree (``tree``) whose leaves
are JSON numbers and strings or slices of a few typed arrays (``pool<i>``, one per dtype), so
numbers, strings, arrays, lists, tuples and dicts of them round-trip exactly (floats bit for
bit, NumPy scalars with their dtype) without pickle.

Two things need pickle: the chains' trace snapshots (with their kernels' state) and values of
other types (a program output that is an object of the user's class).  They are stored as
bytes inside the block and unpickled only after the block's HMAC has been verified: the trust
model is that of the key.  The key (32 random bytes) is created on first use in the user's
configuration directory, ``$XDG_CONFIG_HOME/thrifty/checkpoint.key`` (default
``~/.config/thrifty/checkpoint.key``), mode 0600; only someone who can read it can write a
checkpoint this user's thrifty will load.  A checkpoint written by another user or machine is
refused unless that key is copied here (which is trusting that user or machine).
"""

from __future__ import annotations

import hashlib
import hmac
import io
import json
import os
import pickle
import secrets
import struct

import numpy as np

from thrifty.core.chain_site import States
from thrifty.errors import CheckpointError
from thrifty.runtime.recorder import PENDING

MAGIC = b"THRIFTY\x00"
_HEAD = struct.Struct("<4sIQ")  # kind, version, payload length
_START = len(MAGIC) + _HEAD.size
_TAIL = 64  # HMAC + SHA-256
KEY_BYTES = 32


# -- the key -----------------------------------------------------------------------------------
def key_path() -> str:
    """Where this user's checkpoint key lives (``$XDG_CONFIG_HOME`` respected)."""
    base = os.environ.get("XDG_CONFIG_HOME") or os.path.join(os.path.expanduser("~"), ".config")
    return os.path.join(base, "thrifty", "checkpoint.key")


def checkpoint_key(create: bool = True) -> bytes:
    """This user's checkpoint key, created (random, mode 0600) on first use (``create``)."""
    path = key_path()
    if not os.path.exists(path) and not create:
        raise CheckpointError(
            f"there is no checkpoint key at {path}, so this checkpoint was written by another "
            "user or machine (or the key was removed): thrifty loads only checkpoints it can "
            "authenticate, because a checkpoint holds pickled trace snapshots. To resume a "
            "checkpoint you trust, copy the key of the machine that wrote it there"
        )
    if not os.path.exists(path):
        try:
            _create_key(path)
        except OSError as e:
            raise CheckpointError(
                f"cannot create the checkpoint key {path} ({type(e).__name__}: {e}); set "
                "XDG_CONFIG_HOME to a directory of yours where thrifty may keep it"
            ) from e
    with open(path, "rb") as f:
        key = f.read()
    if len(key) != KEY_BYTES:
        raise CheckpointError(
            f"the checkpoint key {path} is damaged ({len(key)} bytes, expected {KEY_BYTES}); "
            "remove it (checkpoints written with it can then no longer be resumed)"
        )
    return key


def _create_key(path: str) -> None:
    """32 random bytes at ``path``, mode 0600, published whole (a temporary file linked in)
    and never over a key another process created meanwhile."""
    os.makedirs(os.path.dirname(path), mode=0o700, exist_ok=True)
    tmp = f"{path}.tmp{os.getpid()}"
    if os.path.exists(tmp):
        os.remove(tmp)
    fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
    with os.fdopen(fd, "wb") as f:
        f.write(secrets.token_bytes(KEY_BYTES))
        f.flush()
        os.fsync(f.fileno())
    try:
        os.link(tmp, path)  # published whole, and never over another process's key
    except FileExistsError:
        pass
    except OSError:  # no hard links here
        if not os.path.exists(path):
            os.replace(tmp, path)
    finally:
        if os.path.exists(tmp):
            os.remove(tmp)


# -- blocks ------------------------------------------------------------------------------------
def seal(kind: bytes, version: int, payload: bytes, key: bytes) -> bytes:
    """The block of ``payload`` (see the module docstring)."""
    body = MAGIC + _HEAD.pack(kind, version, len(payload)) + payload
    body += hmac.new(key, body, hashlib.sha256).digest()
    return body + hashlib.sha256(body).digest()


def unseal(data: bytes, kind: bytes, version: int, key: bytes, what: str) -> bytes:
    """The payload of the block ``data``, after checking its checksum, kind, version and HMAC;
    :class:`~thrifty.errors.CheckpointError` naming ``what`` otherwise."""
    damaged = CheckpointError(
        f"{what} is damaged (its checksum does not match: truncated, or bytes changed on "
        "disk); it cannot be resumed — remove the checkpoint (and its .draws file) or "
        "choose another checkpoint path"
    )
    if not data.startswith(MAGIC):
        if sum(a != b for a, b in zip(data[: len(MAGIC)], MAGIC)) == 1:
            raise damaged  # one byte of the marker changed
        if data[:1] == b"\x80":
            raise CheckpointError(
                f"{what} is a checkpoint of an earlier thrifty (a pickle): this version does not "
                "load pickled checkpoints, because loading a pickle can run code. Remove it "
                "(and its .draws file) or choose another checkpoint path"
            )
        raise CheckpointError(f"{what} is not a thrifty checkpoint; choose another checkpoint "
                              "path")
    if len(data) < _START + _TAIL or hashlib.sha256(data[:-32]).digest() != data[-32:]:
        raise damaged
    got_kind, got_version, n = _HEAD.unpack_from(data, len(MAGIC))
    if got_kind != kind:
        raise CheckpointError(f"{what} is not a {kind.decode(errors='replace')} block of a "
                              "thrifty checkpoint")
    if got_version != version:
        raise CheckpointError(
            f"{what} has checkpoint format version {got_version}; this thrifty reads version "
            f"{version}. Remove it (and its .draws file) or choose another checkpoint path"
        )
    if _START + n + _TAIL != len(data):
        raise damaged
    mac = hmac.new(key, data[: -_TAIL], hashlib.sha256).digest()
    if not hmac.compare_digest(mac, data[-_TAIL:-32]):
        raise CheckpointError(
            f"{what} was not written with this user's checkpoint key ({key_path()}): it comes "
            "from another user or machine, or was altered. thrifty loads only checkpoints it "
            "can authenticate, because a checkpoint holds pickled trace snapshots (loading a "
            "crafted pickle runs code). To resume a checkpoint you trust, copy the key of the "
            "machine that wrote it"
        )
    return data[_START : _START + n]


# -- data trees as arrays ----------------------------------------------------------------------
class _Encoder:
    def __init__(self):
        self.pools: list[list] = []
        self._pool_of: dict = {}
        self._sizes: list[int] = []

    def put(self, a: np.ndarray) -> list:
        k = self._pool_of.get(a.dtype.str)
        if k is None:
            k = self._pool_of[a.dtype.str] = len(self.pools)
            self.pools.append([])
            self._sizes.append(0)
        off = self._sizes[k]
        self.pools[k].append(a.ravel())
        self._sizes[k] += a.size
        return [k, off, list(a.shape)]

    def encode(self, x):
        t = type(x)
        if x is None or t is bool or t is int or t is float or t is str:
            return x
        if t is list or t is tuple:
            kind = _scalars(x)
            if kind is not None:  # NumPy scalars of one type: one slice of a pool
                return {"G" if t is list else "tG": self.put(np.array(x, dtype=kind))}
            return [self.encode(v) for v in x] if t is list else {"t": [self.encode(v)
                                                                         for v in x]}
        if t is States:  # what th.markov returns (a program's output, often)
            return {"S": self.encode(list(x))}
        if t is dict:
            return {"d": [[self.encode(k), self.encode(v)] for k, v in x.items()]}
        if t is np.ndarray and x.dtype.fields is None and x.dtype.subdtype is None:
            if x.dtype.hasobject:
                return {"o": [list(x.shape), [self.encode(v) for v in x.ravel()]]}
            return {"a": self.put(x)}
        if isinstance(x, np.generic) and not isinstance(x, np.void) and x.dtype != object:
            return {"g": self.put(np.asarray(x).reshape(1))[:2]}
        if t is complex:
            return {"c": [x.real, x.imag]}
        if t is bytes:
            return {"b": self.put(np.frombuffer(x, dtype=np.uint8))[:2] + [len(x)]}
        if x is PENDING:
            return {"P": 1}
        try:  # another type: pickled, loaded only from an authenticated block
            data = pickle.dumps(x, protocol=pickle.HIGHEST_PROTOCOL)
        except Exception as e:
            raise TypeError(f"a value of type {type(x).__qualname__} cannot be stored in a "
                            f"checkpoint ({type(e).__name__}: {e})") from e
        return {"x": self.put(np.frombuffer(data, dtype=np.uint8))[:2] + [len(data)]}


def _scalars(x):
    """The dtype of ``x`` if it holds at least two NumPy numbers all of one type, else None."""
    if len(x) < 2:
        return None
    t = type(x[0])
    if not issubclass(t, np.number) and t is not np.bool_:
        return None
    for v in x:
        if type(v) is not t:
            return None
    return np.dtype(t)


def to_arrays(tree) -> dict[str, np.ndarray]:
    """A data tree (see the module docstring) as named arrays: ``tree`` (JSON, uint8) and
    ``pool<i>`` (one typed array per dtype)."""
    enc = _Encoder()
    node = enc.encode(tree)
    out = {"tree": np.frombuffer(json.dumps(node, separators=(",", ":")).encode(), np.uint8)}
    for i, parts in enumerate(enc.pools):
        out[f"pool{i}"] = np.concatenate(parts)
    return out


def from_arrays(arrays) -> object:
    """Inverse of :func:`to_arrays` (call it on arrays of an authenticated block only: values
    of other types are unpickled)."""
    pools = []
    while f"pool{len(pools)}" in arrays:
        pools.append(arrays[f"pool{len(pools)}"])
    return _decode(json.loads(bytes(arrays["tree"])), pools)


def _decode(node, pools):
    t = type(node)
    if t is list:
        return [_decode(v, pools) for v in node]
    if t is not dict:
        return node
    (tag, v), = node.items()
    if tag == "t":
        return tuple(_decode(x, pools) for x in v)
    if tag in ("G", "tG"):
        k, off, (n,) = v
        items = list(pools[k][off : off + n])
        return items if tag == "G" else tuple(items)
    if tag == "S":
        return States.of(_decode(v, pools))
    if tag == "d":
        return {_decode(k, pools): _decode(x, pools) for k, x in v}
    if tag == "a":
        k, off, shape = v
        size = int(np.prod(shape, dtype=np.int64))
        return pools[k][off : off + size].reshape(shape).copy()
    if tag == "g":
        return pools[v[0]][v[1]]
    if tag == "o":
        out = np.empty(len(v[1]), dtype=object)
        for i, x in enumerate(v[1]):
            out[i] = _decode(x, pools)
        return out.reshape(v[0])
    if tag == "c":
        return complex(v[0], v[1])
    if tag == "P":
        return PENDING
    raw = pools[v[0]][v[1] : v[1] + v[2]].tobytes()
    if tag == "b":
        return raw
    if tag == "x":
        return pickle.loads(raw)
    raise CheckpointError(f"unknown value tag {tag!r} in a checkpoint block")


def write_npz(arrays: dict) -> bytes:
    """Named arrays as the bytes of an ``.npz`` archive."""
    buf = io.BytesIO()
    np.savez(buf, **arrays)
    return buf.getvalue()


def read_npz(payload: bytes) -> dict:
    """Inverse of :func:`write_npz`, with ``allow_pickle=False`` (no object arrays)."""
    with np.load(io.BytesIO(payload), allow_pickle=False) as z:
        return {name: z[name] for name in z.files}
