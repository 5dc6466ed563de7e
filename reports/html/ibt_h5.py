"""Reading ibt results files (schema "ibt-results", versions 1 and 2) with h5py.

Only what the report needs: every run's attributes, environment and tables, with
strings (which h5py returns as bytes) decoded to str.
"""
import json
import os
import zlib

import h5py
import numpy as np

from writer_liveness import mark_if_interrupted

SCHEMA = "ibt-results"
SCHEMA_VERSION = 2  # 2: variable-length string columns (1: fixed-length); both read


class InputError(Exception):
    """A file that is missing, not HDF5 or not ibt's: reported in one line, exit status 2."""


def _text(value):
    if isinstance(value, bytes):
        return value.decode("utf-8", "replace")
    if isinstance(value, np.generic):
        return value.item()
    return value


# Columns renamed so that each unit word has one meaning (GBps = 1e9 bytes/s, Gbps = 1e9
# bits/s): files written before keep their old names, read under the new ones.
OLD_COLUMN_NAMES = {
    "scale_out_gbps": "scale_out_Gbps",  # crossover: Gb/s
    "gbps": "write_GBps",  # checkpoint_ranks
    "rank_gbps_min": "rank_GBps_min",
    "rank_gbps_median": "rank_GBps_median",
    "aggregate_gbps": "aggregate_GBps",
    **{f"{what}_gbps": f"{what}_GBps" for what in (
        "write", "read", "per_rank_median", "per_rank_min", "per_rank_max",
        "aggregate_median", "aggregate_min", "aggregate_max")},  # checkpoint_bench
}


# The table digest (reports/store/table_digest.hpp), computed as ibt's reader computes it:
# per row, per column, the value's type (0 int64, 1 uint64, 2 float64, 3 string: the index
# in core/columns.hpp's Value) and 8 little-endian bytes (the number's bits, or a string's
# length followed by its bytes), folded into one running CRC-32.
DIGEST_ATTRIBUTE = "ibt_crc32"
DIGEST_ROWS_ATTRIBUTE = "ibt_crc32_rows"


def _value_blocks(rows, count):
    """Per column: (9-byte heads as a (count, 9) uint8 array, the string bytes or None)."""
    blocks = []
    for col in rows.dtype.names or ():
        data = rows[col][:count]
        heads = np.empty((count, 9), dtype=np.uint8)
        strings = None
        kind = data.dtype.kind
        if kind in "iu":
            heads[:, 0] = 0 if kind == "i" else 1
            bits = data.astype("<i8" if kind == "i" else "<u8")
        elif kind == "f":
            heads[:, 0] = 2
            bits = data.astype("<f8")
        else:
            strings = [s if isinstance(s, bytes) else str(s).encode("utf-8") for s in data]
            heads[:, 0] = 3
            bits = np.array([len(s) for s in strings], dtype="<u8")
        heads[:, 1:] = bits.view(np.uint8).reshape(count, 8)
        blocks.append((heads, strings))
    return blocks


def _table_crc(rows, count):
    blocks = _value_blocks(rows, count)
    if all(strings is None for _, strings in blocks):
        return zlib.crc32(np.hstack([heads for heads, _ in blocks]).tobytes()) if blocks else 0
    crc = 0
    for r in range(count):
        for heads, strings in blocks:
            crc = zlib.crc32(heads[r].tobytes(), crc)
            if strings is not None:
                crc = zlib.crc32(strings[r], crc)
    return crc


def check_digest(path, run_id, name, dataset, rows):
    """InputError naming the table when its rows no longer match the digest ibt wrote with
    them, as ibt's own reader refuses it (reports/store/store_reader.cpp): a writer killed
    between a row and its digest leaves the digest one row short, which is taken as written.
    Tables from before digests have none and are read unchecked."""
    if DIGEST_ATTRIBUTE not in dataset.attrs or DIGEST_ROWS_ATTRIBUTE not in dataset.attrs:
        return
    stored_crc = int(dataset.attrs[DIGEST_ATTRIBUTE])
    stored_rows = int(dataset.attrs[DIGEST_ROWS_ATTRIBUTE])
    n = len(rows)
    intact = stored_rows in (n, n - 1) and stored_rows >= 0 and _table_crc(rows, stored_rows) == stored_crc
    if not intact:
        raise InputError(f"{path}: /runs/{run_id}/{name} is damaged: its {n} rows do not match the CRC-32 written "
                         "with them (the file was changed after ibt wrote it); nothing in it is read")


class Table:
    """Rows of one compound dataset as a dict of NumPy columns (strings decoded), under
    today's column names (OLD_COLUMN_NAMES), checked against their digest."""

    def __init__(self, name, dataset, path="", run_id=""):
        self.name = name
        rows = dataset[:]
        check_digest(path, run_id, name, dataset, rows)
        self.units = {OLD_COLUMN_NAMES.get(k[len("unit:"):], k[len("unit:"):]): _text(v)
                      for k, v in dataset.attrs.items() if k.startswith("unit:")}
        self.columns = {}
        for col in rows.dtype.names or ():
            data = rows[col]
            # Fixed-length strings (older files) come as bytes_, variable-length ones as
            # bytes objects in an object array: both decoded to str.
            if data.dtype.kind in "SO":
                data = np.array([_text(s) for s in data], dtype=object)
            self.columns[OLD_COLUMN_NAMES.get(col, col)] = data
        self.length = len(rows)

    def has(self, *names):
        return all(n in self.columns for n in names)

    def __getitem__(self, column):
        return self.columns[column]


class Run:
    def __init__(self, path, run_id, group):
        self.path = path
        self.file = os.path.basename(path)
        self.id = run_id
        self.attrs = {k: _text(v) for k, v in group.attrs.items()}
        mark_if_interrupted(self.attrs)  # a dead writer's "running" run reads as interrupted, as in `ibt show`
        self.environment = {}
        if "environment" in group:
            self.environment = {k: _text(v) for k, v in group["environment"].attrs.items()}
        self.tables = {}
        for name, item in group.items():
            if isinstance(item, h5py.Dataset) and item.dtype.names:
                self.tables[name] = Table(name, item, path, run_id)

    @property
    def kind(self):
        return self.attrs.get("kind", "?")

    @property
    def status(self):
        return self.attrs.get("status", "?")

    @property
    def system(self):
        """The hardware a run measured or projected, in words: "dgx-h100 (H100 SXM5 80GB)" for a
        projection on a topology, the GPU for a measured cuda run, "CPU (hosts)" for a CPU run."""
        topology = self.attrs.get("topology")
        if topology and self.attrs.get("backend") == "sim":
            try:
                device = json.loads(self.attrs.get("topology_json", "{}")).get("device", {}).get("name", "")
            except ValueError:
                device = ""
            return f"{topology} ({device})" if device else str(topology)
        if self.attrs.get("gpu_name"):
            return str(self.attrs["gpu_name"])
        hosts = self.attrs.get("hosts")
        return f"CPU ({hosts})" if hosts else "unknown system"

    @property
    def oversubscription(self):
        """"" unless the run recorded that its ranks outnumbered a host's cores."""
        if str(self.attrs.get("oversubscribed", "0")) != "1":
            return ""
        return str(self.attrs.get("oversubscription", "oversubscribed"))

    @property
    def label(self):
        """file:run, with the status when the run did not complete, so no figure hides it."""
        tag = "" if self.status == "complete" else f" [{self.status}]"
        return f"{self.file}:{self.id}{tag}"


def load_runs(path):
    if not os.path.exists(path):
        raise InputError(f"{path}: no such file")
    try:
        f = h5py.File(path, "r")
    except OSError as e:
        raise InputError(f"{path}: not a readable HDF5 file ({e})")
    with f:
        schema = _text(f.attrs.get("ibt_schema", ""))
        if schema != SCHEMA:
            raise InputError(f"{path}: not an ibt results file (attribute ibt_schema is '{schema}')")
        version = int(_text(f.attrs.get("ibt_schema_version", 0)))
        if version > SCHEMA_VERSION:
            raise InputError(f"{path}: schema version {version} is newer than this report reads ({SCHEMA_VERSION})")
        if "runs" not in f:
            return []
        return [Run(path, run_id, f["runs"][run_id]) for run_id in sorted(f["runs"])]
