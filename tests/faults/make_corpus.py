#!/usr/bin/env python3
"""Regenerates tests/faults/corpus/: malformed and hostile variants of the model,
topology and reference inputs (type changes, NaN/huge/negative numbers, missing and
extra fields, truncation, nesting, wrong JSON) and one line per hostile command line in
flags.txt. Deterministic (seeded); run it from the repository root when the input
formats change, and commit the result."""
import json, os, random

random.seed(16)
root = os.path.join("tests", "faults", "corpus")
POISON = [None, "x", -1, 0, 1e308, -1e308, 1e9, 2**63, [], {}, True, 0.5, "1e999"]


def mutants(doc):
    paths = []
    def walk(node, path):
        if isinstance(node, dict):
            for k, v in node.items():
                walk(v, path + [k])
        elif isinstance(node, list):
            for i, v in enumerate(node[:3]):
                walk(v, path + [i])
        else:
            paths.append(path)
    walk(doc, [])
    random.shuffle(paths)
    for path in paths[:40]:
        value = random.choice(POISON)
        d = json.loads(json.dumps(doc))
        node = d
        for key in path[:-1]:
            node = node[key]
        node[path[-1]] = value
        yield json.dumps(d, indent=1)
    for path in paths[:10]:
        d = json.loads(json.dumps(doc))
        node = d
        for key in path[:-1]:
            node = node[key]
        if isinstance(node, dict):
            del node[path[-1]]
            yield json.dumps(d, indent=1)
    text = json.dumps(doc, indent=1)
    yield text[: len(text) // 2]
    yield text.replace("{", "[", 1)
    yield "[" * 20000 + "]" * 20000
    yield "NaN"
    yield ""
    yield json.dumps(doc).replace('"', "'")
    big = json.loads(json.dumps(doc))
    for k in ("hidden", "layers", "ffn_hidden", "vocab", "seq_len", "heads"):
        if isinstance(big, dict) and k in big:
            big[k] = 1000000000
    yield json.dumps(big)


def write(kind, source):
    os.makedirs(os.path.join(root, kind), exist_ok=True)
    with open(source) as f:
        doc = json.load(f)
    for i, text in enumerate(mutants(doc)):
        with open(os.path.join(root, kind, f"{os.path.basename(source)[:-5]}-{i:03d}.json"), "w") as f:
            f.write(text)


write("models", "models/catalog/tiny-dense.json")
write("models", "models/catalog/tiny-moe.json")
write("topologies", "topologies/catalog/dgx-h100.json")
write("references", "topologies/references/local-cpu.json")

flags = [
    "train --lr nan", "train --lr -1", "train --lr inf", "train --steps -5", "train --steps 1e12",
    "train --micro-batch-size 100000000", "train --microbatches -1", "train -T 1e308", "train -T 0",
    "train -T nan", "train --out ''", "train --dp 3", "train --model /dev/zero", "train --model /",
    "train stray", "train --checkpoint-every -1",
    "sweep --max-runs -1", "sweep --steps 1", "sweep --lr 1e308",
    "collectives -T 1e308", "collectives -T -1", "collectives --op all_reduce all_gather", "collectives --out ''",
    "collectives --domain-size -2", "collectives -n -1", "collectives -e 1e99",
    "p2p-matrix -T inf", "p2p-matrix --threshold nan", "p2p-matrix extra",
    "checkpoint-bench --state-bytes 1000000T", "checkpoint-bench --state-bytes 4K -T 0",
    "checkpoint-bench --state-bytes 4K --repeats -1",
    "project --model tiny-dense --topology dgx-h100 --gpus 1e12",
    "project --model tiny-dense --topology dgx-h100 --gpus -8",
    "project --model tiny-dense --topology dgx-h100 --gpus 8 --microbatches 1e9",
    "project --model /dev/zero --topology dgx-h100 --gpus 8",
    "project --model tiny-dense --topology /dev/zero --gpus 8",
    "project --model tiny-dense --topology dgx-h100 --gpus nan",
    "crossover --model tiny-dense --gpus -1",
    "show --top -1", "export --run -1",
    "accept --reference /dev/zero", "accept --reference /",
]
with open(os.path.join(root, "flags.txt"), "w") as f:
    f.write("# one hostile command line per line: each must be refused (exit 2) with one error line\n")
    f.write("\n".join(flags) + "\n")
