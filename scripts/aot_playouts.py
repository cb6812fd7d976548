#!/usr/bin/env python3
"""Run playouts of a game compiled by `propel compile`, from Python (ctypes).

    propel compile games/tictactoe.kif -o /tmp/ttt.so
    python3 scripts/aot_playouts.py /tmp/ttt.so 10000

Needs only the standard library. The C ABI is documented in the header that
`propel compile` writes beside the library (and in docs/aot.md).
"""
import ctypes
import json
import sys
import time


def main():
    if len(sys.argv) < 2:
        sys.exit(__doc__)
    lib = ctypes.CDLL(sys.argv[1])
    n = int(sys.argv[2]) if len(sys.argv) > 2 else 10000
    lib.propel_info.restype = ctypes.c_char_p
    info = json.loads(lib.propel_info())
    roles = info["roles"]
    lib.propel_reset.argtypes = [ctypes.c_void_p]
    lib.propel_reset.restype = ctypes.c_int
    lib.propel_playout.argtypes = [ctypes.c_void_p, ctypes.c_uint64, ctypes.POINTER(ctypes.c_int32), ctypes.c_int]
    lib.propel_playout.restype = ctypes.c_int
    # One instance: `size` bytes, 8-byte aligned (a c_uint64 array is).
    inst = (ctypes.c_uint64 * ((info["size"] + 7) // 8))()
    goals = (ctypes.c_int32 * len(roles))()
    total, sums = 0, [0] * len(roles)
    start = time.perf_counter()
    for seed in range(1, n + 1):
        if lib.propel_reset(inst) != 0:
            sys.exit("reset failed")
        length = lib.propel_playout(inst, seed, goals, 100000)
        if length < 0:
            sys.exit(f"playout failed ({length})")
        total += length
        for r in range(len(roles)):
            sums[r] += max(goals[r], 0)
    secs = time.perf_counter() - start
    print(f"{n} playouts in {secs:.2f} s ({n / secs:.0f}/s from Python), average length {total / n:.2f}")
    for r, name in enumerate(roles):
        print(f"  mean goal {name}: {sums[r] / n:.2f}")


if __name__ == "__main__":
    main()
