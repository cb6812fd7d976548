#!/usr/bin/env python3
"""Drive a game compiled by `propel compile` from Python (ctypes): random
playouts, then a UCT tree search that walks copies of the root instance
(propel_clone), steps them (propel_step) and keeps each node's state
(propel_get_state), and names the move it chooses (propel_input_name).

    propel compile games/connect4.kif -o connect4.so
    python3 scripts/aot_playouts.py connect4.so 10000 --search 2000

A name without a slash is a file in the current folder. Needs only the
standard library. The C ABI is documented in the header `propel compile`
writes beside the library and in docs/aot.md.
"""
import argparse
import ctypes
import json
import math
import os
import random
import struct
import sys
import time

FORMAT = 6
TRAILER = 64  # bytes: see docs/aot.md, "Library files"

c_int, c_u32, c_u64, c_void_p = ctypes.c_int, ctypes.c_uint32, ctypes.c_uint64, ctypes.c_void_p
P_U32, P_U64, P_I32 = ctypes.POINTER(c_u32), ctypes.POINTER(c_u64), ctypes.POINTER(ctypes.c_int32)

# name: (result, argument types), as in the header.
SIGNATURES = {
    "propel_info": (ctypes.c_char_p, []),
    "propel_instance_size": (c_u32, []),
    "propel_roles": (c_u32, []),
    "propel_bases": (c_u32, []),
    "propel_inputs": (c_u32, []),
    "propel_role_name": (ctypes.c_char_p, [c_int]),
    "propel_input_name": (ctypes.c_char_p, [c_u32]),
    "propel_reset": (c_int, [c_void_p]),
    "propel_set_state": (c_int, [c_void_p, P_U64]),
    "propel_get_state": (None, [c_void_p, P_U64]),
    "propel_step": (c_int, [c_void_p, P_U32]),
    "propel_clone": (None, [c_void_p, c_void_p]),
    "propel_terminal": (c_int, [c_void_p]),
    "propel_legal": (c_int, [c_void_p, c_int, P_U32, c_int]),
    "propel_playout": (c_int, [c_void_p, c_u64, P_I32, c_int]),
}


def load(path):
    """Opens the library at `path` (a bare name: in the current folder)
    after checking it ends with Propel's trailer (a cut-short file would
    crash the process in dlopen) and is of this format."""
    if os.sep not in path:
        path = os.path.join(os.curdir, path)
    try:
        size = os.path.getsize(path)
        with open(path, "rb") as f:
            f.seek(max(size - TRAILER, 0))
            t = f.read(TRAILER)
    except OSError as e:
        sys.exit(f"{path}: {e.strerror}")
    if len(t) < TRAILER or t[:8] != b"PRPLSEAL" or t[56:] != b"PRPLEND\0":
        sys.exit(f"{path}: not a whole Propel library (no trailer: cut short, altered, or not one of ours)")
    fmt, length = struct.unpack_from("<IQ", t, 12)
    if fmt != FORMAT:
        sys.exit(f"{path}: library format {fmt}, this script reads {FORMAT}; run `propel compile` again")
    if length + TRAILER != size:
        sys.exit(f"{path}: truncated or extended ({size} bytes, its trailer says {length + TRAILER})")
    try:
        lib = ctypes.CDLL(path)
    except OSError as e:
        sys.exit(f"{path}: cannot load: {e}")
    for name, (res, args) in SIGNATURES.items():
        fn = getattr(lib, name)
        fn.restype, fn.argtypes = res, args
    return lib


class Machine:
    """One library's instances, states and moves."""

    def __init__(self, lib):
        self.lib = lib
        self.info = json.loads(lib.propel_info())
        self.roles = [lib.propel_role_name(r).decode() for r in range(lib.propel_roles())]
        self.words = (lib.propel_bases() + 63) // 64
        self.inputs = lib.propel_inputs()
        self.inst_words = (lib.propel_instance_size() + 7) // 8

    def instance(self):
        # `size` bytes, 8-byte aligned (a c_uint64 array is).
        return (c_u64 * self.inst_words)()

    def state(self, inst):
        bits = (c_u64 * self.words)()
        self.lib.propel_get_state(inst, bits)
        return bits

    def joint_moves(self, inst):
        """Every joint move of the current state, and the role with a choice."""
        per_role, mover = [], 0
        buf = (c_u32 * max(self.inputs, 1))()
        for r in range(len(self.roles)):
            n = self.lib.propel_legal(inst, r, buf, self.inputs)
            per_role.append(list(buf[:n]))
            if n > 1:
                mover = r
        joints = [[]]
        for moves in per_role:
            joints = [j + [m] for j in joints for m in moves]
        return joints[:256], mover

    def step(self, inst, joint):
        rc = self.lib.propel_step(inst, (c_u32 * len(joint))(*joint))
        if rc != 0:
            sys.exit(f"propel_step failed ({rc})")

    def name(self, move):
        return self.lib.propel_input_name(move).decode()


def playouts(m, n):
    inst = m.instance()
    goals = (ctypes.c_int32 * len(m.roles))()
    total, sums = 0, [0] * len(m.roles)
    start = time.perf_counter()
    for seed in range(1, n + 1):
        if m.lib.propel_reset(inst) != 0:
            sys.exit("reset failed")
        length = m.lib.propel_playout(inst, seed, goals, 100000)
        if length < 0:
            sys.exit(f"playout failed ({length})")
        total += length
        for r in range(len(m.roles)):
            sums[r] += max(goals[r], 0)
    secs = time.perf_counter() - start
    print(f"{n} playouts in {secs:.2f} s ({n / secs:.0f}/s from Python), average length {total / n:.2f}")
    for r, name in enumerate(m.roles):
        print(f"  mean goal {name}: {sums[r] / n:.2f}")


class Node:
    __slots__ = ("state", "visits", "sums", "children", "joints", "mover", "terminal")

    def __init__(self, state, terminal, roles):
        self.state, self.terminal = state, terminal
        self.visits, self.sums = 0, [0.0] * roles
        self.children, self.joints, self.mover = None, None, 0


def search(m, root_inst, iterations, seed):
    """UCT from the current state of `root_inst`; returns the root."""
    rng = random.Random(seed)
    roles = len(m.roles)
    work, tmp = m.instance(), m.instance()
    goals = (ctypes.c_int32 * roles)()
    root = Node(m.state(root_inst), m.lib.propel_terminal(root_inst) == 1, roles)
    mismatches = 0
    for _ in range(iterations):
        m.lib.propel_clone(root_inst, work)
        node, path = root, [root]
        while node.children is not None and not node.terminal:
            log_n = math.log(max(node.visits, 1))

            def ucb(c, p=node):
                if c.visits == 0:
                    return math.inf
                return c.sums[p.mover] / c.visits / 100 + 1.4 * math.sqrt(log_n / c.visits)

            k = max(range(len(node.children)), key=lambda i: ucb(node.children[i]))
            m.step(work, node.joints[k])
            node = node.children[k]
            if list(m.state(work)) != list(node.state):
                mismatches += 1
            path.append(node)
        if not node.terminal and node.children is None:
            node.joints, node.mover = m.joint_moves(work)
            node.children = []
            for joint in node.joints:
                m.lib.propel_clone(work, tmp)
                m.step(tmp, joint)
                node.children.append(Node(m.state(tmp), m.lib.propel_terminal(tmp) == 1, roles))
            k = rng.randrange(len(node.joints))
            m.step(work, node.joints[k])
            node = node.children[k]
            path.append(node)
        if m.lib.propel_playout(work, rng.getrandbits(63), goals, 100000) < 0:
            sys.exit("playout failed")
        for n in path:
            n.visits += 1
            for r in range(roles):
                n.sums[r] += max(goals[r], 0)
    if mismatches:
        sys.exit(f"{mismatches} states read back differ from the tree's")
    return root


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("library")
    ap.add_argument("playouts", nargs="?", type=int, default=10000)
    ap.add_argument("--search", type=int, default=2000, metavar="ITERATIONS", help="UCT iterations (0: none)")
    ap.add_argument("--seed", type=int, default=1)
    a = ap.parse_args()
    if a.playouts < 0 or a.search < 0:
        sys.exit("counts must be at least 0")
    m = Machine(load(a.library))
    print(f"{a.library}: roles {', '.join(m.roles)}; {m.lib.propel_bases()} bases, {m.inputs} moves")
    if a.playouts:
        playouts(m, a.playouts)
    if a.search:
        inst = m.instance()
        m.lib.propel_reset(inst)
        start = time.perf_counter()
        root = search(m, inst, a.search, a.seed)
        secs = time.perf_counter() - start
        if root.terminal:
            print("the initial state is terminal")
            return
        best = max(range(len(root.children)), key=lambda i: root.children[i].visits)
        child, mover = root.children[best], root.mover
        nodes = 1
        stack = [root]
        while stack:
            n = stack.pop()
            for c in n.children or []:
                nodes += 1
                stack.append(c)
        print(
            f"search: {a.search} iterations in {secs:.2f} s, {nodes} nodes; "
            f"{m.roles[mover]} plays {m.name(root.joints[best][mover])} "
            f"({child.visits} visits, mean goal {child.sums[mover] / max(child.visits, 1):.1f})"
        )


if __name__ == "__main__":
    main()
