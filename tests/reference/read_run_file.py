#!/usr/bin/python3
"""Independent reader and writer of the relpos run file (docs/hdf5-schema.md), with h5py.

  read_run_file.py check RUN.h5        validate a run file written by relpos against schema v1
                                       and print a summary; exit status 1 on any violation
  read_run_file.py write-fixture OUT   write the small schema-v1 file that the C++ test
                                       "run file: a file written by h5py ..." reads
                                       (tests/fixtures/io/h5py_run_v1.h5)

ctest runs `check` on the run.h5 of a tiny `relpos train` of every variant and on the
writer's round-trip sample (tests/test_h5py_reader.cpp). By hand:

  /usr/bin/python3 tests/reference/read_run_file.py check results/quickstart/rope/run.h5

Written from the schema document, not from the C++ code.
"""
import re
import sys

import h5py
import numpy as np

SCHEMA_VERSION = 1
STRING_ATTRS = ["config", "position_types", "torch_version", "git_commit", "created"]
INT_ATTRS = ["schema_version", "seed"]


class Checker:
    def __init__(self, path):
        self.path = path
        self.errors = []
        self.datasets = 0

    def fail(self, where, what):
        self.errors.append(f"{where}: {what}")

    def expect(self, cond, where, what):
        if not cond:
            self.fail(where, what)
        return cond

    def dims_of(self, ds):
        if "dims" not in ds.attrs:
            self.fail(ds.name, "no 'dims' attribute")
            return None
        d = ds.attrs["dims"]
        if isinstance(d, bytes):
            d = d.decode("utf-8")
        names = d.split(",") if d else []
        self.expect(len(names) == ds.ndim, ds.name,
                    f"dims '{d}' names {len(names)} axes, the dataset has {ds.ndim}")
        return names

    def dataset(self, ds, dtypes, ndim=None, dims=None):
        self.datasets += 1
        self.expect(ds.dtype in [np.dtype(t) for t in dtypes], ds.name,
                    f"dtype {ds.dtype}, expected one of {dtypes}")
        if ndim is not None:
            self.expect(ds.ndim == ndim, ds.name, f"{ds.ndim} axes, expected {ndim}")
        names = self.dims_of(ds)
        if dims is not None and names is not None:
            self.expect(names == dims, ds.name, f"dims {names}, expected {dims}")

    def run(self):
        with h5py.File(self.path, "r") as f:
            self.root(f)
            if "metrics" in f:
                self.metrics(f["metrics"])
            if "probe" in f:
                self.probe(f["probe"])
            if "snapshots" in f:
                self.snapshots(f["snapshots"], f)
            if "weights" in f:
                self.weights(f["weights"])
            if "eval" in f:
                self.eval(f["eval"])
            if "split" in f:
                self.split(f["split"])
            if "init_from" in f:
                self.init_from(f["init_from"])
            unknown = set(f.keys()) - {"metrics", "probe", "snapshots", "weights", "eval", "split",
                                       "init_from"}
            self.expect(not unknown, "/", f"unknown groups {sorted(unknown)}")
        return self.errors

    def root(self, f):
        for name in INT_ATTRS:
            if self.expect(name in f.attrs, "/", f"no attribute '{name}'"):
                v = f.attrs[name]
                self.expect(np.asarray(v).dtype == np.int64, "/", f"'{name}' is {np.asarray(v).dtype}")
        for name in STRING_ATTRS:
            if self.expect(name in f.attrs, "/", f"no attribute '{name}'"):
                self.expect(isinstance(f.attrs[name], str), "/",
                            f"'{name}' is {type(f.attrs[name]).__name__}, expected a UTF-8 string")
        if "positional_parameters" in f.attrs:  # optional: older files lack it
            v = f.attrs["positional_parameters"]
            self.expect(np.asarray(v).dtype == np.int64 and int(v) >= 0, "/",
                        f"'positional_parameters' is {np.asarray(v).dtype} {v}, expected int64 >= 0")
        if "schema_version" in f.attrs:
            self.expect(int(f.attrs["schema_version"]) == SCHEMA_VERSION, "/",
                        f"schema_version {f.attrs['schema_version']}")
        if isinstance(f.attrs.get("created"), str):
            self.expect(re.fullmatch(r"\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d(\.\d+)?Z", f.attrs["created"]),
                        "/", f"created '{f.attrs['created']}' is not ISO 8601 UTC")

    def metrics(self, g):
        for name, m in g.items():
            if not self.expect(isinstance(m, h5py.Group), m.name, "a metric must be a group"):
                continue
            if not (self.expect("step" in m, m.name, "no 'step'") and
                    self.expect("value" in m, m.name, "no 'value'")):
                continue
            s, v = m["step"], m["value"]
            self.dataset(s, ["int64"], 1, ["point"])
            self.dataset(v, ["float64"], 1, ["point"])
            self.expect(s.shape == v.shape, m.name, f"step {s.shape} and value {v.shape} differ")
            self.expect(s.maxshape == (None,), s.name, f"maxshape {s.maxshape}, expected (None,)")
            steps = s[()]
            self.expect(np.all(np.diff(steps) > 0), s.name, "steps are not increasing")

    def probe(self, g):
        t = g["tokens"]
        self.dataset(t, ["int64"], 2, ["probe", "token"])
        if "key_mask" in g:
            self.dataset(g["key_mask"], ["uint8"], 2, ["probe", "token"])
            self.expect(g["key_mask"].shape == t.shape, g.name, "key_mask and tokens differ in shape")

    def snapshots(self, g, f):
        for name, s in g.items():
            m = re.fullmatch(r"step_(\d+)", name)
            if not self.expect(m is not None, s.name, "snapshot groups are named step_<N>"):
                continue
            self.expect(int(s.attrs.get("step", -1)) == int(m.group(1)), s.name,
                        f"attribute step {s.attrs.get('step')}")
            # attention is left out only by a run without a probe (`relpos import`).
            self.expect("attention" in s or "probe" not in f, s.name,
                        "no 'attention' although the file has a probe")
            a = s["attention"] if "attention" in s else None
            if a is not None:
                self.dataset(a, ["float32"], 4, ["layer", "head", "query", "key"])
                T = a.shape[2]
                self.expect(a.shape[3] == T, a.name, f"shape {a.shape} is not (L,H,T,T)")
                rows = a[()].sum(-1)
                self.expect(np.allclose(rows, 1.0, atol=1e-5), a.name,
                            f"rows sum to {rows.min()}..{rows.max()}, expected 1")
                if "probe" in f:
                    self.expect(f["probe/tokens"].shape[1] == T, a.name,
                                "T differs from the probe's")
            for v in s["position_scores"].values():
                self.dataset(v, ["float32"], 4)
                if a is not None:
                    self.expect(v.shape[1:] == a.shape[1:], v.name,
                                f"shape {v.shape}, expected (L',{a.shape[1]},{T},{T})")
                else:
                    self.expect(v.shape[2] == v.shape[3], v.name, f"shape {v.shape} is not (L',H,T,T)")
            for variant in s["position"].values():
                for t in variant.values():
                    self.dataset(t, ["float32"])

    def strings(self, ds, dims):
        self.datasets += 1
        self.expect(h5py.check_string_dtype(ds.dtype) is not None, ds.name,
                    f"dtype {ds.dtype}, expected UTF-8 strings")
        self.expect(ds.ndim == 1, ds.name, f"{ds.ndim} axes, expected 1")
        self.expect(self.dims_of(ds) == dims, ds.name, f"dims, expected {dims}")

    def split(self, g):
        self.expect(np.asarray(g.attrs.get("split_seed")).dtype == np.int64, g.name,
                    "no int64 attribute split_seed")
        self.expect(isinstance(g.attrs.get("corpus"), str), g.name, "no string attribute corpus")
        seen = set()
        for name, part in g.items():
            self.expect(name in ("train", "valid", "test"), part.name, "unknown split")
            self.dataset(part["ids"], ["int64"], 1, ["document"])
            self.strings(part["names"], ["document"])
            ids = part["ids"][()]
            self.expect(np.all(np.diff(ids) > 0), part.name, "ids are not ascending")
            self.expect(not seen & set(ids.tolist()), part.name, "a document in two splits")
            seen |= set(ids.tolist())
            self.expect(part["names"].shape == part["ids"].shape, part.name, "names and ids differ")

    def init_from(self, g):
        self.expect(isinstance(g.attrs.get("source"), str), g.name, "no string attribute source")
        lists = {}
        for name in ("loaded", "initialised", "shape_mismatched", "unused"):
            if self.expect(name in g, g.name, f"no dataset '{name}'"):
                self.strings(g[name], ["parameter"])
                lists[name] = set(g[name].asstr()[()].tolist())
        if len(lists) == 4:
            self.expect(not lists["loaded"] & lists["initialised"], g.name,
                        "a parameter both loaded and initialised")
            self.expect(lists["shape_mismatched"] <= lists["initialised"], g.name,
                        "shape_mismatched is not part of initialised")

    def weights(self, g):
        self.expect("step" in g.attrs, g.name, "no attribute step")
        for w in g.values():
            self.dataset(w, ["float32"])

    def eval(self, g):
        for table in g.values():
            lengths = {c.shape for c in table.values()}
            self.expect(len(lengths) <= 1, table.name, f"columns of different lengths {lengths}")
            for c in table.values():
                self.dataset(c, ["float32", "float64", "int64"], 1)
            for k, v in table.attrs.items():
                self.expect(isinstance(v, str), table.name, f"attribute {k} is not a string")


def check(path):
    c = Checker(path)
    errors = c.run()
    with h5py.File(path, "r") as f:
        print(f"{path}: schema_version {f.attrs.get('schema_version')}, "
              f"position_types {f.attrs.get('position_types')!r}, seed {f.attrs.get('seed')}")
        print(f"  metrics: {sorted(f['metrics'].keys()) if 'metrics' in f else []}")
        print(f"  snapshots: {sorted(f['snapshots'].keys()) if 'snapshots' in f else []}")
        print(f"  datasets checked: {c.datasets}")
    for e in errors:
        print("VIOLATION", e)
    print("OK" if not errors else f"{len(errors)} violations")
    return 0 if not errors else 1


def write_fixture(path):
    """A schema-v1 file with closed-form content (L=1, H=2, T=4, alibi)."""
    vlen = h5py.string_dtype("utf-8")
    with h5py.File(path, "w") as f:
        f.attrs.create("schema_version", np.int64(1))
        f.attrs.create("seed", np.int64(7))
        for k, v in {"config": "seed: 7\nposition:\n  types: [alibi]\n", "position_types": "alibi",
                     "torch_version": "h5py-fixture", "git_commit": "none",
                     "created": "2000-01-01T00:00:00Z"}.items():
            f.attrs.create(k, v, dtype=vlen)

        def put(group, name, data, dims, **kw):
            ds = group.create_dataset(name, data=data, **kw)
            ds.attrs.create("dims", dims, dtype=vlen)
            return ds

        loss = f.create_group("metrics/loss")
        steps = np.array([0, 5, 10], dtype=np.int64)
        put(loss, "step", steps, "point", maxshape=(None,), chunks=(4,))
        put(loss, "value", 1.0 / (1.0 + steps.astype(np.float64)), "point", maxshape=(None,),
            chunks=(4,))

        probe = f.create_group("probe")
        put(probe, "tokens", np.arange(1, 9, dtype=np.int64).reshape(2, 4), "probe,token")
        put(probe, "key_mask", np.array([[1, 1, 1, 1], [1, 1, 0, 0]], dtype=np.uint8),
            "probe,token")

        s = f.create_group("snapshots/step_5")
        s.attrs.create("step", np.int64(5))
        T, slopes = 4, np.array([0.25, 0.0625], dtype=np.float32)
        i = np.arange(T)[:, None]
        j = np.arange(T)[None, :]
        causal = np.where(j <= i, 1.0 / (i + 1.0), 0.0).astype(np.float32)  # uniform causal rows
        put(s, "attention", np.broadcast_to(causal, (1, 2, T, T)).copy(), "layer,head,query,key")
        bias = (-slopes[:, None, None] * np.abs(i - j)[None]).astype(np.float32)
        put(s.create_group("position_scores"), "alibi", bias[None], "layer,head,query,key")
        alibi = s.create_group("position/alibi")
        put(alibi, "slopes", slopes, "head")
        put(alibi, "distances", np.arange(-3, 4, dtype=np.float32), "distance")

        w = f.create_group("weights")
        w.attrs.create("step", np.int64(5))
        put(w, "transformer.token_embedding.weight",
            (np.arange(6, dtype=np.float32) / 4).reshape(3, 2), "vocab,channel")

        e = f.create_group("eval/extrapolation")
        put(e, "length", np.array([4, 8], dtype=np.int64), "row")
        put(e, "loss", np.array([0.5, 0.75], dtype=np.float64), "row")
        e.attrs.create("metric", "loss", dtype=vlen)
    return 0


if __name__ == "__main__":
    if len(sys.argv) == 3 and sys.argv[1] == "check":
        sys.exit(check(sys.argv[2]))
    if len(sys.argv) == 3 and sys.argv[1] == "write-fixture":
        sys.exit(write_fixture(sys.argv[2]))
    print(__doc__)
    sys.exit(2)
