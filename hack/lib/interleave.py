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
#
# A command whose ARGV-JSON is a list of argv lists is a sequence (crictl's runp, create, start,
# stopp, rmp): its steps run one after another, each step's stdout kept, and an argument "{N}"
# is replaced by step N's stdout (0-based, surrounding white space stripped: the ID crictl
# printed). Its wall time is from the first step's start to the last one's end, its CPU time the
# steps' sum and its peak RSS the largest step's: this script's own work between steps is in the
# wall time (well under a millisecond) and not in the CPU time.
import json
import os
import statistics
import sys
import time


def spawn(argv, keep=False):
    """Runs argv; returns (wall ms, peak RSS MiB, CPU ms, stdout if keep else None)."""
    devnull = os.open(os.devnull, os.O_RDWR)
    r = w = -1
    out = b""
    try:
        if keep:
            r, w = os.pipe()
        t0 = time.perf_counter_ns()
        pid = os.posix_spawnp(argv[0], argv, dict(os.environ), file_actions=[
            (os.POSIX_SPAWN_DUP2, devnull, 0),
            (os.POSIX_SPAWN_DUP2, w if keep else devnull, 1),
            (os.POSIX_SPAWN_DUP2, devnull, 2),
        ])
        if keep:
            os.close(w)
            w = -1
            while True:
                b = os.read(r, 65536)
                if not b:
                    break
                out += b
        _, status, ru = os.wait4(pid, 0)
        wall = (time.perf_counter_ns() - t0) / 1e6
    finally:
        os.close(devnull)
        for fd in (r, w):
            if fd >= 0:
                os.close(fd)
    if os.waitstatus_to_exitcode(status) != 0:
        sys.exit("interleave: %s exited %d" % (" ".join(argv), os.waitstatus_to_exitcode(status)))
    return wall, ru.ru_maxrss / 1024.0, (ru.ru_utime + ru.ru_stime) * 1000.0, (out.decode().strip() if keep else None)


def run(cmd):
    if not cmd or isinstance(cmd[0], str):
        return spawn(cmd)[:3]
    outs = []
    rss = cpu = 0.0
    t0 = time.perf_counter_ns()
    for argv in cmd:
        argv = [outs[int(a[1:-1])] if len(a) > 2 and a[0] == "{" and a[-1] == "}" and a[1:-1].isdigit() else a
                for a in argv]
        _, r, c, out = spawn(argv, keep=True)
        outs.append(out)
        rss, cpu = max(rss, r), cpu + c
    return (time.perf_counter_ns() - t0) / 1e6, rss, cpu


def main():
    runs, warmup = int(sys.argv[1]), int(sys.argv[2])
    cmds = []
    for a in sys.argv[3:]:
        name, _, argv = a.partition("=")
        cmds.append((name, json.loads(argv)))
    got = {name: [] for name, _ in cmds}
    for i in range(warmup + runs):
        for name, cmd in cmds:
            m = run(cmd)
            if i >= warmup:
                got[name].append(m)
    for name, _ in cmds:
        ms = got[name]
        print("%s %.2f %.1f %.1f" % (name,
                                     statistics.median(m[0] for m in ms),
                                     statistics.median(m[1] for m in ms),
                                     statistics.median(m[2] for m in ms)))


main()
