"""Reading ibt results files (schema "ibt-results", versions 1 and 2) with h5py.

Only what the report needs: every run's attributes, environment and tables, with
strings (which h5py returns as bytes) decoded to str.
"""
import json
import os

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


class Table:
    """Rows of one compound dataset as a dict of NumPy columns (strings decoded), under
    today's column names (OLD_COLUMN_NAMES)."""

    def __init__(self, name, dataset):
        self.name = name
        rows = dataset[:]
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
                self.tables[name] = Table(name, item)

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
