# hack/lib/interleave.py: runs commands in interleaved rounds and prints medians (hack/bench-startup.sh).
#
#   python3 hack/lib/interleave.py RUNS WARMUP NAME=ARGV-JSON [NAME=ARGV-JSON...]
#
# Each round runs every command once, in the order given (A B C A B C ...): a machine whose load
# changes during the run moves all of them alike, which back-to-back batches (all A, then all B)
# do not. WARMUP rounds first, not counted. Each command is spawned directly (no shell), stdin
# /dev/null, stdout and stderr to /dev/null, and reaped with wait4, which gives its peak RSS and
# CPU time (the child's own, plus those of its children it waited for). A command that exits
# non-zero fails the run. Output: one line per command,
#   NAME WALL_MS RSS_MIB CPU_MS
# the medians of the counted rounds.
import json
import os
import statistics
import sys
import time


def run(argv):
    devnull = os.open(os.devnull, os.O_RDWR)
    try:
        t0 = time.perf_counter_ns()
        pid = os.posix_spawnp(argv[0], argv, dict(os.environ), file_actions=[
            (os.POSIX_SPAWN_DUP2, devnull, 0),
            (os.POSIX_SPAWN_DUP2, devnull, 1),
            (os.POSIX_SPAWN_DUP2, devnull, 2),
        ])
        _, status, ru = os.wait4(pid, 0)
        wall = (time.perf_counter_ns() - t0) / 1e6
    finally:
        os.close(devnull)
    if os.waitstatus_to_exitcode(status) != 0:
        sys.exit("interleave: %s exited %d" % (" ".join(argv), os.waitstatus_to_exitcode(status)))
    return wall, ru.ru_maxrss / 1024.0, (ru.ru_utime + ru.ru_stime) * 1000.0


def main():
    runs, warmup = int(sys.argv[1]), int(sys.argv[2])
    cmds = []
    for a in sys.argv[3:]:
        name, _, argv = a.partition("=")
        cmds.append((name, json.loads(argv)))
    got = {name: [] for name, _ in cmds}
    for i in range(warmup + runs):
        for name, argv in cmds:
            m = run(argv)
            if i >= warmup:
                got[name].append(m)
    for name, _ in cmds:
        ms = got[name]
        print("%s %.2f %.1f %.1f" % (name,
                                     statistics.median(m[0] for m in ms),
                                     statistics.median(m[1] for m in ms),
                                     statistics.median(m[2] for m in ms)))


main()
