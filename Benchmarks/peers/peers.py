#!/usr/bin/env python3
"""peers.py: measure Yrs (pycrdt) and Loro (loro) on Quire's editing traces.

Usage (normally through run.sh, which provides the pinned virtualenv):

    Benchmarks/peers/run.sh trace FILE... [--runs N] [--json] [--peer yrs|loro]

Trace files use the format of /work/shared/traces/README.md (`.json` or
`.json.gz`, sequential or concurrent). For every trace and every peer the
script measures:

  localMs      replay of the trace edit by edit through the peer's local text
               API, one library transaction per trace txn (Yrs: one
               `with doc.transaction()`; Loro: one `doc.commit()`).
               Concurrent traces: one doc per agent; before a txn, the
               updates of the parent txns its agent has not seen yet are
               applied as one message (Yrs: `apply_update(merge_updates(...))`;
               Loro: `import_batch([...])`; each txn's own update is captured
               when it commits:
               Yrs `Doc.observe` -> `TransactionEvent.update`, Loro
               `subscribe_local_update`). Which txns to exchange is planned
               from the `parents` fields before timing starts (pure trace
               bookkeeping, no CRDT work).
               At the end agent 0's doc receives, as one message, what each
               other agent's doc has and it lacks, taken from those docs as
               Quire's replay does (Yrs: `merge_updates` of `d.get_update(
               state)` with agent 0's state vector; Loro: `import_batch` of
               `d.export(ExportMode.Updates(vv))` with its version vector),
               and its text is checked. (Merging the txns' own captured
               updates instead, 310,000 on merge-k32-m10000, took Yrs'
               `merge_updates` 8 minutes per replay.)
  emptyLoopMs  the same Python iteration over the (converted) patches and the
               same exchange plan with every library call removed: the share
               of localMs that is Python interpreter overhead of the loop
               itself. The rest of localMs is binding overhead + native work.
  mergeMs      a fresh doc applies the whole encoded history in one call and
               its text length is read (Yrs: `Doc().apply_update(
               doc.get_update())`; Loro: `LoroDoc().import_(
               doc.export(ExportMode.Updates(VersionVector())))`). The fair
               native comparison: one Python call, no per-edit overhead.
  encodedBytes size of that update (Yrs: lib0 v1 update; Loro: Updates).
  snapshotBytes Loro: `ExportMode.Snapshot()`. Yrs has no separate snapshot
               format, so it is the same uncompressed v1 update as
               encodedBytes (`snapshotFormat` says which one was used).
  encodeMs     writing that snapshot from the replayed doc, one call (Yrs:
               `doc.get_update()`; Loro: `doc.export(ExportMode.Snapshot())`),
               timed on each timed replay's doc, its first snapshot: Loro
               keeps its last export's blocks while the doc is unchanged,
               so a second export of one doc is a copy of them.
               Quire's encodeMs is the same, its store snapshot frame (a
               document value keeps nothing between encodes).
  loadMs       a fresh doc loads the snapshot, gets the text, reads its length
               and inserts one character at position 0 ("ready to edit";
               this also forces Loro's lazily decoded state).
  ok           the final text equals endContent after the replay, the merge
               gives the same text, and the loaded snapshot holds it too.
               A concurrent trace may give `endContentSorted` instead (its
               agents insert concurrently at one place, which each CRDT
               orders its own way): then the final text's characters,
               sorted, must equal it, and every agent's doc, after an
               untimed replay more and a full exchange from agent 0's doc,
               must hold the same text as agent 0's (okDetail "converged").

Concurrent traces: agent a's doc gets the fixed Yrs client id / Loro peer id
2**52 + a (as large as the random ids, so sizes stay realistic). This matters for Yrs: on friendsforever, when one agent deletes a
character and types where it was while the other agent types right after
it, Yrs (YATA) gives both inserts the deleted character as left origin and
orders them by client id; only ascending ids reproduce endContent (random
ids failed about half the time). Loro (Fugue) reproduces it with any ids.

Statistics: each timed workload runs once as warm-up, then `--runs` times
(default 5). Times are the CPU time of the measuring thread
(`time.thread_time_ns`, CLOCK_THREAD_CPUTIME_ID), the clock quire-bench uses
for the same figures (Benchmarks/QuireBenchKit/CPUClock.swift): on a shared
machine the wall clock would also count other processes' time. We report
the median under the plain key and the minimum and maximum beside it as
flat keys with `Min`/`Max` suffixes, e.g. `localMs`, `localMsMin`,
`localMsMax` (same for emptyLoopMs, mergeMs, loadMs). The garbage collector
is run before and disabled during each timed run.

Text positions: traces count Unicode code points. Loro's `insert`/`delete`
take code points, so patches go in unchanged. pycrdt 0.14 (Yrs with its
default OffsetKind::Bytes) indexes text in UTF-8 bytes, so for Yrs the loader
converts every patch to byte offsets before timing: exactly for sequential
traces (it tracks the positions of non-ASCII characters); for concurrent
traces only pure-ASCII traces are supported (identity), others are refused.

Replica workloads (crdt-benchmarks B3; format in Quire's
Benchmarks/QuireBenchKit/Workloads/ReplicaWorkload.swift):

    Benchmarks/peers/run.sh replicas FILE... [--runs N] [--json] [--memory]

  localMs      one doc per replica (random ids) writes its value (map: key
               "v" of the root map "map", the one key all replicas write;
               list: index 0 of the root list "list"), exports its update,
               and one merging doc applies each update in turn. emptyLoopMs,
               mergeMs, encodedBytes, snapshotBytes and loadMs as for
               traces, on the merged doc (loadMs without the "x" insert).
  ok           the merged map holds only "v", with one of the values; the
               merged list holds every value once; the merge and the loaded
               snapshot hold the same as the merging doc.

Memory (`--memory`, both subcommands): memoryBytes is the heap in use that
the replayed document holds, measured as Quire measures its own (`heapInUse()`
in Benchmarks/QuireBenchKit/SnapshotLoad.swift): in a fresh Python process,
after the workload is loaded and replayed once as a warm-up, glibc's
`mallinfo2()` (through ctypes) is read before one more local replay and after
it, with the returned document alive and `gc.collect()` run; memoryBytes is
the difference of `uordblks + hblkhd`, bytes malloc has handed out and not had
back. The document is the one Quire keeps too: the sequential doc, agent 0's
merged doc, or the merging doc of a replica workload; the other agents' docs
and the exchanged updates are freed by then. Both wheels allocate through
glibc malloc (their Rust code uses the system allocator: `nm -D` on their .so
lists malloc/free/posix_memalign and no mimalloc or jemalloc), so this sees
the native memory; Python's own small objects live in pymalloc arenas (mapped
directly, not counted), but the document keeps only a few Python wrappers.
Not a peak: transient allocations of the replay are not counted. Exact to a
few kB only: glibc counts the freed small blocks it keeps in its per-thread
cache (tcache) as in use, for Quire's figure too (B1.6's Yrs doc reads 0;
with `GLIBC_TUNABLES=glibc.malloc.tcache_count=0`, 1.6 kB). Linux (glibc 2.33
or later) only.

Instruction counts (merge-instructions.sh runs these under callgrind):

    Benchmarks/peers/run.sh encode FILE --peer yrs|loro --out PATH
    Benchmarks/peers/run.sh merge-file PATH --peer yrs|loro [--count N]

  encode writes the trace's whole encoded history, as mergeMs applies it;
  merge-file applies it to N fresh docs (default 1), untimed.

Merges in turns (quire-bench suite --peers runs this after the figures above):

    Benchmarks/peers/run.sh merge-turns trace|replicas FILE [--peer yrs|loro]

  encodes the workload's whole history in each peer, prints `ready`, then
  for every line it reads on stdin merges it twice in each peer, the second
  merge timed as mergeMs is and the first, right before it, untimed (after
  the garbage collection), and prints the times as one JSON object, e.g.
  {"yrs": 1.52, "loro": 40.8} (ms); it ends with its input. quire-bench
  merges in Quire between the lines, the same way, so that the three
  libraries take turns and share the host's slow moments, and each timed
  merge starts on a processor that has just done the same work (without
  it, Quire's came straight after waiting through the peers' turn and
  theirs after gc.collect(); see Benchmarks/QuireBenchKit/Suite/MergeTurns.swift).

Checking the install (quire-bench suite --peers runs this once, before any workload):

    Benchmarks/peers/run.sh versions

  imports both libraries and prints their versions as one JSON object, e.g.
  {"yrs": "0.14.13", "loro": "1.17.1"}; fails as the measurements would
  when the virtualenv could not be made or a library does not import.

Output: a table by default; with `--json` one JSON object per line with keys
peer, version, trace, kind, ops (inserted + deleted chars), ok, localMs,
emptyLoopMs, mergeMs, encodedBytes, snapshotBytes, encodeMs, loadMs, runs (the key names
of Quire's quire-bench) plus the Min/Max keys and snapshotFormat (and
okDetail when ok is false). Exit status 1 if any row is not ok.
"""

from __future__ import annotations

import argparse
import bisect
import ctypes
import functools
import gc
import gzip
import importlib.metadata
import json
import os
import subprocess
import statistics
import sys
import time
from dataclasses import dataclass, field
from typing import Callable

TEXT = "text"  # name of the root text in both peers
# Concurrent replay: agent a uses Yrs client id / Loro peer id ID_BASE + a.
# Ascending ids (see docstring); large like the random ids the libraries pick
# themselves, so encoded sizes are not flattered by 1-byte varint ids.
ID_BASE = 1 << 52


# --------------------------------------------------------------------------
# Trace loading (shared by every peer)

@dataclass
class Trace:
    name: str
    kind: str                      # "sequential" | "concurrent"
    end: str                       # endContent, or endContentSorted when end_sorted
    end_sorted: bool
    txns: list                     # list of patch lists [(pos, nDel, text)], code points
    agents: list                   # agent of each txn (concurrent) or []
    parents: list                  # parents of each txn (concurrent) or []
    num_agents: int = 1
    ops: int = 0                   # inserted + deleted characters
    ascii: bool = True             # every inserted character is ASCII
    utf8_txns: list | None = None  # txns with UTF-8 byte positions (for Yrs)
    plan: list = field(default_factory=list)   # concurrent: txns to merge before each txn


def read_json(path: str):
    """A workload file's JSON; a file that cannot be read or parsed ends
    the script with one line naming it, not a traceback."""
    opener = gzip.open if path.endswith(".gz") else open
    try:
        with opener(path, "rt", encoding="utf-8") as f:
            return json.load(f)
    except (OSError, ValueError) as error:
        raise SystemExit(f"{path}: {getattr(error, 'strerror', None) or error}")


def load_trace(path: str) -> Trace:
    data = read_json(path)
    name = os.path.basename(path)
    for suffix in (".gz", ".json"):
        if name.endswith(suffix):
            name = name[: -len(suffix)]
    kind = data.get("kind", "sequential")
    if kind == "sequential" and data.get("startContent", ""):
        raise SystemExit(f"{path}: non-empty startContent is not supported")
    txns = [[(p[0], p[1], p[2]) for p in t["patches"]] for t in data["txns"]]
    ops = sum(nd + len(ins) for ps in txns for _, nd, ins in ps)
    is_ascii = all(ins.isascii() for ps in txns for _, _, ins in ps)
    end_sorted = "endContentSorted" in data
    if end_sorted and kind != "concurrent":
        raise SystemExit(f"{path}: endContentSorted is for concurrent traces only")
    if end_sorted and "endContent" in data:
        raise SystemExit(f"{path}: a concurrent trace has endContent or endContentSorted, not both")
    if not end_sorted and "endContent" not in data:
        raise SystemExit(f'{path}: missing key "endContent" (or, concurrent traces only, "endContentSorted")')
    if end_sorted and list(data["endContentSorted"]) != sorted(data["endContentSorted"]):
        raise SystemExit(f"{path}: endContentSorted must list its characters in ascending order")
    tr = Trace(name=name, kind=kind, end=data["endContentSorted" if end_sorted else "endContent"], end_sorted=end_sorted, txns=txns,
               agents=[t.get("agent", 0) for t in data["txns"]],
               parents=[t.get("parents", []) for t in data["txns"]],
               num_agents=data.get("numAgents", 1), ops=ops, ascii=is_ascii)
    if kind == "concurrent":
        tr.plan = plan_exchanges(tr)
    if is_ascii:
        tr.utf8_txns = txns
    elif kind == "sequential":
        tr.utf8_txns = to_utf8_positions(txns)
    return tr


def makes_edit(patches: list) -> bool:
    """Whether a txn changes the text: one that does not (no patches, as a
    txn that only marks a merge has) makes no update in either library."""
    return any(nd or ins for _, nd, ins in patches)


def plan_exchanges(tr: Trace) -> list:
    """For each txn, the txns (ascending) that its agent's doc must receive
    first: the ancestors of the txn not yet seen by that agent, but for those
    that make no edit and so have no update. Trace txns are in causal order
    (parents < index), so ascending order is causal."""
    known = [set() for _ in range(tr.num_agents)]
    plan = []
    for i, parents in enumerate(tr.parents):
        seen = known[tr.agents[i]]
        need, stack = [], list(parents)
        while stack:
            p = stack.pop()
            if p in seen:
                continue
            if p >= i:
                raise SystemExit(f"{tr.name}: txn {i} has parent {p} >= {i}")
            seen.add(p)
            need.append(p)
            stack.extend(tr.parents[p])
        plan.append(sorted(p for p in need if makes_edit(tr.txns[p])))
        seen.add(i)
    return plan


def to_utf8_positions(txns: list) -> list:
    """Sequential trace: code point positions -> UTF-8 byte positions.
    Tracks the code point positions of the non-ASCII characters present in
    the text (`wide`, sorted) and their extra bytes (`extra`), so each patch
    costs O(number of non-ASCII characters), not O(text length)."""
    wide: list[int] = []
    extra: list[int] = []

    def byte_pos(cp: int) -> int:
        k = bisect.bisect_left(wide, cp)
        return cp + sum(extra[:k])

    out = []
    for patches in txns:
        conv = []
        for pos, nd, ins in patches:
            b0 = byte_pos(pos)
            b1 = byte_pos(pos + nd)
            lo = bisect.bisect_left(wide, pos)
            hi = bisect.bisect_left(wide, pos + nd)
            del wide[lo:hi], extra[lo:hi]
            shift = len(ins) - nd
            for k in range(lo, len(wide)):
                wide[k] += shift
            new_w = [(pos + j, len(c.encode()) - 1) for j, c in enumerate(ins) if not c.isascii()]
            wide[lo:lo] = [w for w, _ in new_w]
            extra[lo:lo] = [e for _, e in new_w]
            conv.append((b0, b1 - b0, ins))
        out.append(conv)
    return out


# --------------------------------------------------------------------------
# Empty loops (no library calls): Python overhead of the replay loops

def empty_loop_sequential(txns: list) -> None:
    n = 0
    for patches in txns:
        for pos, nd, ins in patches:
            if nd:
                n += pos
            if ins:
                n += pos


def empty_loop_concurrent(tr: Trace, txns: list) -> None:
    updates = [None] * len(txns)
    docs = [[] for _ in range(tr.num_agents)]
    n = 0
    for i, patches in enumerate(txns):
        doc = docs[tr.agents[i]]
        if tr.plan[i]:
            n += len([updates[p] for p in tr.plan[i]])
        for pos, nd, ins in patches:
            if nd:
                n += pos
            if ins:
                n += pos
        updates[i] = doc
    for doc in docs[1:]:
        n += len(doc)


# --------------------------------------------------------------------------
# Yrs (pycrdt)

def yrs_version() -> str:
    return importlib.metadata.version("pycrdt")


def yrs_replay_sequential(tr: Trace):
    import pycrdt
    doc = pycrdt.Doc()
    text = doc.get(TEXT, type=pycrdt.Text)
    for patches in tr.utf8_txns:
        with doc.transaction():
            for pos, nd, ins in patches:
                if nd:
                    del text[pos:pos + nd]
                if ins:
                    text.insert(pos, ins)
    return doc


class Unsupported(SystemExit):
    """A workload one peer cannot replay. A SystemExit, so that wherever it
    is not caught it ends the script with its message; the measuring loop
    catches it, so that the other peer is still measured."""


def yrs_replay_concurrent(tr: Trace, every_doc: bool = False):
    """Agent 0's doc, after the final exchange (every agent's doc when
    `every_doc`, for the convergence check)."""
    import pycrdt
    if tr.utf8_txns is None:
        raise Unsupported(f"{tr.name}: non-ASCII concurrent traces are not supported for yrs")
    docs, texts, subs = [], [], []
    last = [None]

    def capture(event):
        last[0] = event.update

    for agent in range(tr.num_agents):
        d = pycrdt.Doc(client_id=ID_BASE + agent)  # see "Concurrent traces" in the docstring
        texts.append(d.get(TEXT, type=pycrdt.Text))
        subs.append(d.observe(capture))
        docs.append(d)
    updates = [None] * len(tr.txns)
    for i, patches in enumerate(tr.utf8_txns):
        a = tr.agents[i]
        doc, text = docs[a], texts[a]
        if tr.plan[i]:
            doc.apply_update(yrs_message([updates[p] for p in tr.plan[i]]))
        last[0] = None
        with doc.transaction():
            for pos, nd, ins in patches:
                if nd:
                    del text[pos:pos + nd]
                if ins:
                    text.insert(pos, ins)
        if last[0] is None and makes_edit(patches):
            raise RuntimeError(f"{tr.name}: yrs emitted no update for txn {i}")
        updates[i] = last[0]
    for d, s in zip(docs, subs):
        d.unobserve(s)
    if len(docs) > 1:  # the final exchange (see "localMs" in the docstring)
        state = docs[0].get_state()
        docs[0].apply_update(yrs_message([d.get_update(state) for d in docs[1:]]))
    return docs if every_doc else docs[0]


def yrs_exchange(docs: list) -> None:
    """Every other agent's doc takes what agent 0's has and it lacks."""
    for d in docs[1:]:
        d.apply_update(docs[0].get_update(d.get_state()))


def yrs_message(updates: list) -> bytes:
    """One message carrying several txn updates (Yrs applies one update per call)."""
    import pycrdt
    return updates[0] if len(updates) == 1 else pycrdt.merge_updates(*updates)


def yrs_text(doc) -> str:
    import pycrdt
    return str(doc.get(TEXT, type=pycrdt.Text))


def yrs_encode(doc) -> bytes:
    return doc.get_update()


def yrs_merge(update: bytes):
    import pycrdt
    doc = pycrdt.Doc()
    doc.apply_update(update)
    len(doc.get(TEXT, type=pycrdt.Text))
    return doc


def yrs_snapshot(doc) -> bytes:
    return doc.get_update()  # v1 update, uncompressed


def yrs_load(snapshot: bytes):
    import pycrdt
    doc = pycrdt.Doc()
    doc.apply_update(snapshot)
    text = doc.get(TEXT, type=pycrdt.Text)
    len(text)
    text.insert(0, "x")
    return doc


# --------------------------------------------------------------------------
# Loro

def loro_version() -> str:
    return importlib.metadata.version("loro")


def loro_replay_sequential(tr: Trace):
    import loro
    doc = loro.LoroDoc()
    text = doc.get_text(TEXT)
    for patches in tr.txns:
        for pos, nd, ins in patches:
            if nd:
                text.delete(pos, nd)
            if ins:
                text.insert(pos, ins)
        doc.commit()
    return doc


def loro_replay_concurrent(tr: Trace, every_doc: bool = False):
    """As yrs_replay_concurrent."""
    import loro
    docs, texts, subs = [], [], []
    last = [None]

    def capture(update: bytes) -> bool:
        last[0] = update
        return True

    for agent in range(tr.num_agents):
        d = loro.LoroDoc()
        d.peer_id = ID_BASE + agent
        texts.append(d.get_text(TEXT))
        subs.append(d.subscribe_local_update(capture))
        docs.append(d)
    updates = [None] * len(tr.txns)
    for i, patches in enumerate(tr.txns):
        a = tr.agents[i]
        doc, text = docs[a], texts[a]
        if tr.plan[i]:
            doc.import_batch([updates[p] for p in tr.plan[i]])
        last[0] = None
        for pos, nd, ins in patches:
            if nd:
                text.delete(pos, nd)
            if ins:
                text.insert(pos, ins)
        doc.commit()
        if last[0] is None and makes_edit(patches):
            raise RuntimeError(f"{tr.name}: loro emitted no update for txn {i}")
        updates[i] = last[0]
    for s in subs:
        s.unsubscribe()
    if len(docs) > 1:  # the final exchange (see "localMs" in the docstring)
        mode = loro.ExportMode.Updates(docs[0].oplog_vv)
        docs[0].import_batch([d.export(mode) for d in docs[1:]])
    return docs if every_doc else docs[0]


def loro_exchange(docs: list) -> None:
    """As yrs_exchange."""
    import loro
    for d in docs[1:]:
        d.import_(docs[0].export(loro.ExportMode.Updates(d.oplog_vv)))


def loro_text(doc) -> str:
    return doc.get_text(TEXT).to_string()


def loro_encode(doc) -> bytes:
    import loro
    return doc.export(loro.ExportMode.Updates(loro.VersionVector()))


def loro_merge(update: bytes):
    import loro
    doc = loro.LoroDoc()
    doc.import_(update)
    doc.get_text(TEXT).len_unicode
    return doc


def loro_snapshot(doc) -> bytes:
    import loro
    return doc.export(loro.ExportMode.Snapshot())


def loro_load(snapshot: bytes):
    import loro
    doc = loro.LoroDoc()
    doc.import_(snapshot)
    text = doc.get_text(TEXT)
    text.len_unicode
    text.insert(0, "x")
    doc.commit()
    return doc


# --------------------------------------------------------------------------
# Replica workloads (B3)

MAP_KEY = "v"   # the one key every replica of a map workload writes


@dataclass
class Replicas:
    name: str
    container: str                 # "map" | "list"
    values: list
    kind: str = "replicas"

    @property
    def ops(self) -> int:
        return len(self.values)


def load_replicas(path: str) -> Replicas:
    data = read_json(path)
    if data.get("kind") != "replicas" or data.get("container") not in ("map", "list"):
        raise SystemExit(f"{path}: not a replica workload")
    name = os.path.basename(path).removesuffix(".json")
    return Replicas(name=name, container=data["container"], values=data["values"])


def yrs_replicas(w: Replicas):
    import pycrdt
    merged = pycrdt.Doc()
    for value in w.values:
        doc = pycrdt.Doc()
        if w.container == "map":
            m = doc.get("map", type=pycrdt.Map)
            m[MAP_KEY] = pycrdt.Map(value) if isinstance(value, dict) else value
        else:
            doc.get("list", type=pycrdt.Array).insert(0, value)
        merged.apply_update(doc.get_update())
    return merged


def yrs_replicas_contents(w: Replicas, doc):
    import pycrdt
    return doc.get(w.container, type=pycrdt.Map if w.container == "map" else pycrdt.Array).to_py()


def loro_replicas(w: Replicas):
    import loro
    merged = loro.LoroDoc()
    for value in w.values:
        doc = loro.LoroDoc()
        if w.container == "map":
            m = doc.get_map("map")
            if isinstance(value, dict):
                sub = m.insert_container(MAP_KEY, loro.LoroMap())
                for k in sorted(value):
                    sub.insert(k, value[k])
            else:
                m.insert(MAP_KEY, value)
        else:
            doc.get_list("list").insert(0, value)
        doc.commit()
        merged.import_(loro_encode(doc))
    return merged


def loro_replicas_contents(w: Replicas, doc):
    return (doc.get_map("map") if w.container == "map" else doc.get_list("list")).get_deep_value()


def replicas_ok(w: Replicas, contents) -> bool:
    """The merged map holds only MAP_KEY, with one of the values written;
    the merged list holds every value once, in any order."""
    if w.container == "map":
        return list(contents) == [MAP_KEY] and contents[MAP_KEY] in w.values
    return canonical_values(contents) == canonical_values(w.values)


def canonical_values(values: list) -> list:
    """The values as sorted JSON texts, integral floats as integers:
    pycrdt stores a Python int as a float and reads it back as one (3 ->
    3.0), which JSON would tell apart from the 3 written."""
    def plain(v):
        if isinstance(v, float) and v.is_integer():
            return int(v)
        return {k: plain(x) for k, x in v.items()} if isinstance(v, dict) else v
    return sorted(json.dumps(plain(v), sort_keys=True) for v in values)


def empty_loop_replicas(w: Replicas) -> None:
    n = 0
    for value in w.values:
        n += len(value) if isinstance(value, dict) else 1


def yrs_load_replicas(snapshot: bytes):
    import pycrdt
    doc = pycrdt.Doc()
    doc.apply_update(snapshot)
    return doc


def loro_load_replicas(snapshot: bytes):
    import loro
    doc = loro.LoroDoc()
    doc.import_(snapshot)
    return doc


REPLICA_PEERS = {
    "yrs": dict(replay=yrs_replicas, contents=yrs_replicas_contents, load=yrs_load_replicas),
    "loro": dict(replay=loro_replicas, contents=loro_replicas_contents, load=loro_load_replicas),
}


def measure_replicas(peer: str, w: Replicas, runs: int) -> dict:
    p, r = PEERS[peer], REPLICA_PEERS[peer]
    local, save, doc, snap = timed_replay_and_snapshot(lambda: r["replay"](w), p["snapshot"], runs)
    contents = r["contents"](w, doc)
    ok_local = replicas_ok(w, contents)
    loop, _ = timed(lambda: empty_loop_replicas(w), runs)
    update = p["encode"](doc)
    merge, merged = timed(lambda: r["load"](update), runs)
    ok_merge = r["contents"](w, merged) == contents
    load, loaded = timed(lambda: r["load"](snap), runs)
    ok_load = r["contents"](w, loaded) == contents
    return result_row(peer, p, w.name, w.kind, w.ops, runs, update, snap,
                      timings=(local, loop, merge, save, load), checks=(ok_local, ok_merge, ok_load))


# --------------------------------------------------------------------------
# Memory: heap in use held by the replayed document, as Quire measures it

class MallInfo2(ctypes.Structure):
    """glibc's `struct mallinfo2` (malloc.h, glibc 2.33+): ten size_t fields."""
    _fields_ = [(name, ctypes.c_size_t) for name in (
        "arena", "ordblks", "smblks", "hblks", "hblkhd", "usmblks", "fsmblks", "uordblks", "fordblks", "keepcost")]


@functools.cache
def glibc_mallinfo2():
    """Resolved once: each `ctypes.CDLL` makes a class, garbage that would
    be counted if it were made between the two readings."""
    function = ctypes.CDLL(None).mallinfo2
    function.restype = MallInfo2
    return function


def heap_in_use() -> int:
    """Bytes glibc malloc has handed out and not had back, in every arena:
    small blocks (uordblks) plus directly mapped large ones (hblkhd); the
    same sum as `heapInUse()` in Benchmarks/QuireBenchKit/SnapshotLoad.swift."""
    info = glibc_mallinfo2()()
    return info.uordblks + info.hblkhd


def measure_memory(command: str, peer: str, path: str) -> int:
    """Runs `peers.py _memory COMMAND PEER PATH` in a fresh interpreter, so
    that nothing the timed runs left behind is counted."""
    out = subprocess.run([sys.executable, os.path.abspath(__file__), "_memory", command, peer, path],
                         check=True, capture_output=True, text=True)
    return int(out.stdout.strip())


def load_work(command: str, path: str):
    """The workload of a `trace` or `replicas` command."""
    return load_trace(path) if command == "trace" else load_replicas(path)


def replay_and_merge(command: str, peer: str, work):
    """The peer's replay of `work` (loaded by `load_work`) and its merge
    of the encoded history into a fresh doc."""
    if command == "trace":
        p = PEERS[peer]
        return p["seq"] if work.kind == "sequential" else p["conc"], p["merge"]
    return REPLICA_PEERS[peer]["replay"], REPLICA_PEERS[peer]["load"]


def memory_child(command: str, peer: str, path: str) -> None:
    work = load_work(command, path)
    replay, _ = replay_and_merge(command, peer, work)
    # A warm-up replay first, as Quire measures after its timed runs: what a
    # library allocates once, on first use (about 700 KB for pycrdt), is not the document's.
    replay(work)
    glibc_mallinfo2()
    gc.collect()
    before = heap_in_use()
    doc = replay(work)  # the other agents' docs and the updates are freed when it returns
    gc.collect()
    after = heap_in_use()
    print(after - before)
    del doc


# --------------------------------------------------------------------------
# Harness

PEERS = {
    "yrs": dict(version=yrs_version, seq=yrs_replay_sequential, conc=yrs_replay_concurrent,
                text=yrs_text, encode=yrs_encode, merge=yrs_merge, exchange=yrs_exchange,
                snapshot=yrs_snapshot, load=yrs_load, snapshot_format="v1 update (uncompressed)",
                loop_txns=lambda tr: tr.utf8_txns),
    "loro": dict(version=loro_version, seq=loro_replay_sequential, conc=loro_replay_concurrent,
                 text=loro_text, encode=loro_encode, merge=loro_merge, exchange=loro_exchange,
                 snapshot=loro_snapshot, load=loro_load, snapshot_format="loro Snapshot",
                 loop_txns=lambda tr: tr.txns),
}


def timed_once(fn: Callable, warm_up: bool = False):
    """One call of `fn`, the garbage collector run before and disabled
    during it. Returns its CPU time in ms and its result. With `warm_up`,
    an untimed call of `fn` comes between the collection and the timed
    call, as quire-bench's merges in turns have before each timed one."""
    gc.collect()
    gc.disable()
    try:
        if warm_up:
            fn()
        t0 = time.thread_time_ns()
        result = fn()
        return (time.thread_time_ns() - t0) / 1e6, result
    finally:
        gc.enable()


def spread(times: list) -> tuple:
    """(median, min, max) of `times`."""
    return statistics.median(times), min(times), max(times)


def timed(fn: Callable, runs: int):
    """Warm-up once, then `runs` timed calls. Returns (median, min, max) in ms
    and the result of the last call."""
    result = fn()
    times = []
    for _ in range(runs):
        result = None
        ms, result = timed_once(fn)
        times.append(ms)
    return spread(times), result


def timed_replay_and_snapshot(replay: Callable, snapshot: Callable, runs: int):
    """As `timed(replay, runs)`, and each replayed doc's first snapshot timed
    apart: Loro keeps the blocks of its last export and copies them while
    the doc is unchanged (automerge-paper: 4.7 ms the first time, 0.16 ms
    again), so a second snapshot of one doc would time a copy where Yrs and
    Quire encode. Returns the replay's and the snapshot's (median, min, max)
    in ms, the last doc and its snapshot."""
    snapshot(replay())
    replays, snapshots = [], []
    for _ in range(runs):
        doc = snap = None
        ms, doc = timed_once(replay)
        replays.append(ms)
        ms, snap = timed_once(lambda: snapshot(doc))
        snapshots.append(ms)
    return spread(replays), spread(snapshots), doc, snap


def measure(peer: str, tr: Trace, runs: int) -> dict:
    p = PEERS[peer]
    replay = p["seq"] if tr.kind == "sequential" else p["conc"]
    loop_txns = p["loop_txns"](tr)
    if tr.kind == "sequential":
        def empty():
            empty_loop_sequential(loop_txns)
    else:
        def empty():
            empty_loop_concurrent(tr, loop_txns)

    local, save, doc, snap = timed_replay_and_snapshot(lambda: replay(tr), p["snapshot"], runs)
    text = p["text"](doc)
    ok_local = ("".join(sorted(text)) if tr.end_sorted else text) == tr.end
    ok_converged = converged(p, tr, text)
    loop, _ = timed(empty, runs)
    update = p["encode"](doc)
    merge, merged = timed(lambda: p["merge"](update), runs)
    ok_merge = p["text"](merged) == text
    load, loaded = timed(lambda: p["load"](snap), runs)
    ok_load = p["text"](loaded) == "x" + text

    return result_row(peer, p, tr.name, tr.kind, tr.ops, runs, update, snap,
                      timings=(local, loop, merge, save, load), checks=(ok_local, ok_merge, ok_load),
                      converged=ok_converged)


def converged(p: dict, tr: Trace, text: str):
    """For a trace that gives endContentSorted, whose order no one text
    pins: an untimed replay more, a full exchange from agent 0's doc to the
    others, and whether every doc then holds `text` (the timed replay's,
    which the fixed ids make the same). crdt-benchmarks' B2 checks that
    its two docs agree; Quire's replay checks every replica. None for
    other traces (not checked)."""
    if not tr.end_sorted:
        return None
    docs = p["conc"](tr, every_doc=True)
    p["exchange"](docs)
    return all(p["text"](d) == text for d in docs)


def merge_turns(command: str, path: str, peers: list) -> None:
    """The `merge-turns` subcommand: see the module docstring."""
    work, merges = load_work(command, path), {}
    for peer in peers:
        replay, merge = replay_and_merge(command, peer, work)
        update = PEERS[peer]["encode"](replay(work))
        merges[peer] = functools.partial(merge, update)
    print("ready", flush=True)
    for _ in sys.stdin:
        print(json.dumps({peer: timed_once(merge, warm_up=True)[0] for peer, merge in merges.items()}), flush=True)


def result_row(peer, p, name, kind, ops, runs, update, snap, timings, checks, converged=None) -> dict:
    """One JSON line: medians with min and max of (local, empty loop, merge,
    snapshot encode, load), sizes, and ok only if the replay, merge and load
    checks all passed (and the convergence check, when one was made)."""
    ok_local, ok_merge, ok_load = checks
    row = {"peer": peer, "version": p["version"](), "trace": name, "kind": kind,
           "ops": ops, "ok": ok_local and ok_merge and ok_load and converged is not False}
    for key, (med, lo, hi) in zip(("localMs", "emptyLoopMs", "mergeMs", "encodeMs", "loadMs"), timings):
        row[key], row[key + "Min"], row[key + "Max"] = med, lo, hi
    row.update(encodedBytes=len(update), snapshotBytes=len(snap),
               snapshotFormat=p["snapshot_format"], runs=runs)
    if not row["ok"]:
        row["okDetail"] = {"replay": ok_local, "merge": ok_merge, "load": ok_load}
        if converged is not None:
            row["okDetail"]["converged"] = converged
    return row


COLUMNS = [("trace", "trace", "<"), ("peer", "peer", "<"), ("kind", "kind", "<"),
           ("ops", "ops", ">"), ("ok", "ok", "<"), ("localMs", "localMs", ">"),
           ("emptyLoopMs", "emptyLoopMs", ">"), ("mergeMs", "mergeMs", ">"),
           ("encodedBytes", "encodedBytes", ">"), ("snapshotBytes", "snapshotBytes", ">"),
           ("encodeMs", "encodeMs", ">"), ("loadMs", "loadMs", ">"), ("runs", "runs", ">")]


def fmt(v) -> str:
    if isinstance(v, float):
        return f"{v:.1f}" if v >= 10 else f"{v:.2f}"
    return str(v)


def print_table(rows: list) -> None:
    cells = [[fmt(r[k]) for k, _, _ in COLUMNS] for r in rows]
    widths = [max([len(h)] + [len(c[i]) for c in cells]) for i, (_, h, _) in enumerate(COLUMNS)]
    print("  ".join(f"{h:{a}{w}}" for (_, h, a), w in zip(COLUMNS, widths)))
    for c in cells:
        print("  ".join(f"{v:{a}{w}}" for v, (_, _, a), w in zip(c, COLUMNS, widths)))
    print("(medians in ms; min/max in --json as <key>Min/<key>Max; "
          + "; ".join(f"{r['peer']} {r['version']}" for r in {r['peer']: r for r in rows}.values())
          + ")")


def main(argv=None) -> int:
    argv = sys.argv[1:] if argv is None else argv
    if argv[:1] == ["_memory"]:  # the child process of measure_memory
        memory_child(*argv[1:4])
        return 0
    ap = argparse.ArgumentParser(
        description="Measure Yrs (pycrdt) and Loro on editing traces, "
                    "with the workloads and key names of quire-bench.",
        epilog="See the module docstring (python3 peers.py --help-long) for what each figure means.")
    ap.add_argument("--help-long", action="store_true", help="print the full description and exit")
    sub = ap.add_subparsers(dest="command")
    for command, what in (("trace", "replay, merge and load editing traces"),
                          ("replicas", "many replicas each writing once, merged by one (B3)")):
        t = sub.add_parser(command, help=what)
        t.add_argument("files", nargs="+", metavar="FILE", help="workload (.json; traces also .json.gz)")
        t.add_argument("--runs", type=int, default=5, help="timed runs after one warm-up (default 5)")
        t.add_argument("--json", action="store_true", help="one JSON object per line instead of a table")
        t.add_argument("--memory", action="store_true",
                       help="also measure memoryBytes in a fresh process per workload and peer")
        t.add_argument("--peer", action="append", choices=sorted(PEERS),
                       help="only this peer (repeatable; default: all)")
    e = sub.add_parser("encode", help="write a trace's whole encoded history, as the merge figure applies it")
    e.add_argument("file", metavar="FILE", help="editing trace (.json or .json.gz)")
    e.add_argument("--peer", required=True, choices=sorted(PEERS))
    e.add_argument("--out", required=True, metavar="PATH", help="where to write the encoded history")
    m = sub.add_parser("merge-file", help="apply an encoded history to fresh docs COUNT times, untimed "
                                          "(for counting instructions: merge-instructions.sh)")
    m.add_argument("file", metavar="PATH", help="written by encode")
    m.add_argument("--peer", required=True, choices=sorted(PEERS))
    m.add_argument("--count", type=int, default=1)
    w = sub.add_parser("merge-turns", help="merge once per peer for each line read on stdin "
                                           "(quire-bench suite --peers: merges in turns)")
    w.add_argument("kind", choices=("trace", "replicas"))
    w.add_argument("file", metavar="FILE")
    w.add_argument("--peer", action="append", choices=sorted(PEERS), help="only this peer (repeatable; default: all)")
    sub.add_parser("versions", help="import both peers and print their versions as one JSON object "
                                    "(quire-bench suite --peers checks the install with it)")
    args = ap.parse_args(argv)
    if args.help_long:
        print(__doc__)
        return 0
    if args.command == "encode":
        p, work = PEERS[args.peer], load_trace(args.file)
        doc = (p["seq"] if work.kind == "sequential" else p["conc"])(work)
        with open(args.out, "wb") as out:
            out.write(p["encode"](doc))
        return 0
    if args.command == "versions":
        import loro, pycrdt  # noqa: F401  (what a broken install fails at)
        print(json.dumps({peer: PEERS[peer]["version"]() for peer in PEERS}))
        return 0
    if args.command == "merge-turns":
        merge_turns(args.kind, args.file, args.peer or ["yrs", "loro"])
        return 0
    if args.command == "merge-file":
        with open(args.file, "rb") as f:
            update = f.read()
        for _ in range(args.count):
            PEERS[args.peer]["merge"](update)
        return 0
    if args.command not in ("trace", "replicas"):
        ap.print_help()
        return 2
    if args.runs < 1:
        ap.error("--runs must be >= 1")
    peers = args.peer or ["yrs", "loro"]
    rows, all_ok = [], True
    for path in args.files:
        work = load_trace(path) if args.command == "trace" else load_replicas(path)
        for peer in peers:
            try:
                row = measure(peer, work, args.runs) if args.command == "trace" else measure_replicas(peer, work, args.runs)
            except Unsupported as error:
                print(f"{error}; no figures for {peer}", file=sys.stderr, flush=True)
                all_ok = False
                continue
            if args.memory:
                row["memoryBytes"] = measure_memory(args.command, peer, path)
            all_ok &= row["ok"]
            rows.append(row)
            if args.json:
                print(json.dumps(row), flush=True)
            else:
                print(f"# {work.name} {peer}: done", file=sys.stderr, flush=True)
    if not args.json:
        print_table(rows)
    return 0 if all_ok else 1


if __name__ == "__main__":
    sys.exit(main())
