"""bench/synth_ranks.py: a SYNCSPY_OUT root of many ranks, made from one real process folder
(its trace.bin and summary.json), for the merge benchmark of docs/PERFORMANCE.md (issue 28).

    python3 bench/synth_ranks.py SRC_FOLDER OUT_ROOT RANKS [--per-node 8] [--job 4242]

Each rank R gets OUT_ROOT/rank<R>-node<N>-pid<P>/ with the source's files, its identity
rewritten as the agent writes it: trace.bin's header (rank, pid) and its 1.3 identity part
(output/trace_format.h struct trace_identity: local rank, world size, node, host, job id), and
the same fields of summary.json. The records after the header are the source's, byte for byte,
so every rank costs the reader what the real process did. A source written before 1.3 gets the
identity part added (header_bytes grows; its records move along)."""
import argparse
import json
import os
import shutil
import struct

HEADER = struct.Struct("<8sHHIQii QQ64s")  # struct trace_file_header, 112 bytes
IDENTITY = struct.Struct("<iiii72s64s24s")  # struct trace_identity, 176 bytes
FEATURE_IDENTITY = 1 << 3
MINOR_IDENTITY = 3
assert HEADER.size == 112 and IDENTITY.size == 176


def split_trace(data):
    """(the 112-byte header's fields, the records after the whole header)."""
    fields = list(HEADER.unpack_from(data, 0))
    header_bytes = fields[3]
    return fields, data[header_bytes:]


def trace_for(fields, records, rank, pid, local, world, node, host, job):
    f = list(fields)
    f[2] = max(f[2], MINOR_IDENTITY)                      # version_minor
    f[3] = HEADER.size + IDENTITY.size                    # header_bytes
    f[4] |= FEATURE_IDENTITY                              # features
    f[5], f[6] = pid, rank
    ident = IDENTITY.pack(local, world, node, 0, host.encode(), job.encode(), b"slurm")
    return HEADER.pack(*f) + ident + records


def summary_for(doc, rank, pid, local, world, node, host, job):
    d = dict(doc)
    d.update({"pid": pid, "rank": rank, "local_rank": local, "world_size": world, "node": node,
              "host": host, "job_id": job, "launcher": "slurm"})
    return d


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("src")
    ap.add_argument("out")
    ap.add_argument("ranks", type=int)
    ap.add_argument("--per-node", type=int, default=8)
    ap.add_argument("--job", default="4242")
    a = ap.parse_args()
    trace_path = os.path.join(a.src, "trace.bin")
    summary_path = os.path.join(a.src, "summary.json")
    trace = open(trace_path, "rb").read() if os.path.exists(trace_path) else None
    doc = json.load(open(summary_path)) if os.path.exists(summary_path) else None
    if trace is None and doc is None:
        raise SystemExit(f"{a.src} has neither trace.bin nor summary.json")
    fields, records = split_trace(trace) if trace else (None, None)
    if os.path.exists(a.out):
        shutil.rmtree(a.out)
    os.makedirs(a.out)
    for rank in range(a.ranks):
        node, local = divmod(rank, a.per_node)
        host = f"node{node:04d}"
        pid = 1000 + local  # the same pids on every node, as on a real cluster
        d = os.path.join(a.out, f"rank{rank}-{host}-pid{pid}")
        os.mkdir(d)
        if trace:
            with open(os.path.join(d, "trace.bin"), "wb") as f:
                f.write(trace_for(fields, records, rank, pid, local, a.ranks, node, host, a.job))
        if doc:
            with open(os.path.join(d, "summary.json"), "w") as f:
                json.dump(summary_for(doc, rank, pid, local, a.ranks, node, host, a.job), f)
    size = sum(os.path.getsize(os.path.join(r, n)) for r, _, ns in os.walk(a.out) for n in ns)
    print(f"{a.ranks} rank folders under {a.out}, {size / 2**20:.1f} MiB")


if __name__ == "__main__":
    main()
