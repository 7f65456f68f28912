# SPDX-License-Identifier: MIT
"""gdb support for ito: see ito threads, not only kernel threads.

    (gdb) source tools/ito-gdb.py        # or: gdb -x tools/ito-gdb.py ./prog
    (gdb) info ito-threads               # every ito thread: state, name, vproc, where
    (gdb) ito-bt 12                      # backtrace of ito thread 12

A parked thread's registers live on its own stack (the frame saved by
src/arch/x86_64/context.S); ito-bt loads them into the selected kernel thread
for the time of a `bt`, then puts the real ones back. A running thread is
shown on the kernel thread (activation) that runs it.

Needs ito's debug information (the default RelWithDebInfo build has it) and a
stopped process (live or attached; on a core file, `info ito-threads` works,
ito-bt does not, since registers cannot be set there).
"""

import gdb

STATES = ["NEW", "READY", "RUNNING", "BLOCKED", "SUSPENDED", "EXITED", "FREE"]
CHUNK = 1024
# Saved frame layout (context.S): offsets from the saved stack pointer.
FRAME = {"r15": 8, "r14": 16, "r13": 24, "r12": 32, "rbx": 40, "rbp": 48}
RET, FRAME_SIZE = 56, 64


def _u64(addr):
    return int(gdb.parse_and_eval("*(unsigned long *)%d" % addr))


def _threads():
    n = int(gdb.parse_and_eval("ito__handle_nchunks"))
    chunks = gdb.parse_and_eval("ito__handle_chunks")
    for c in range(n):
        base = chunks[c]
        for i in range(CHUNK):
            t = base[i]
            if int(t["state"]) != STATES.index("FREE"):
                yield t


def _where(t):
    sp = int(t["ctx"]["sp"])
    if not sp:
        return None
    pc = _u64(sp + RET)
    sym = gdb.execute("info symbol %d" % pc, to_string=True).split(" in section")[0].strip()
    return "parked at %s" % sym


class InfoItoThreads(gdb.Command):
    """List ito threads: index, handle, state, name, vproc, priority, where parked."""

    def __init__(self):
        super().__init__("info ito-threads", gdb.COMMAND_STATUS)

    def invoke(self, arg, from_tty):
        count = 0
        for t in _threads():
            count += 1
            st = STATES[int(t["state"])]
            vp = t["vp"]
            vproc = int(vp["index"]) if int(vp) else -1
            name = t["name"].string()
            handle = (int(t["ctl"]) >> 32) << 32 | int(t["index"])
            where = _where(t) if st != "RUNNING" else None
            if st == "RUNNING" and int(vp):
                where = "running on activation LWP %d" % int(vp["act"]["tid"])
            print("%6d  %#18x  %-9s  %-16s vproc %-3d prio %-2d %s" % (
                int(t["index"]), handle, st, name or "-", vproc, int(t["prio"]), where or ""))
        print("%d ito thread(s)" % count)


class ItoBacktrace(gdb.Command):
    """ito-bt INDEX: backtrace of the ito thread with that index."""

    def __init__(self):
        super().__init__("ito-bt", gdb.COMMAND_STACK)

    def invoke(self, arg, from_tty):
        try:
            index = int(arg, 0)
        except ValueError:
            raise gdb.GdbError("usage: ito-bt INDEX (see info ito-threads)")
        t = next((x for x in _threads() if int(x["index"]) == index), None)
        if t is None:
            raise gdb.GdbError("no ito thread %d" % index)
        if STATES[int(t["state"])] == "RUNNING":
            tid = int(t["vp"]["act"]["tid"])
            for th in gdb.selected_inferior().threads():
                if th.ptid[1] == tid:
                    th.switch()
                    gdb.execute("bt")
                    return
            raise gdb.GdbError("thread %d runs on LWP %d, which gdb does not show" % (index, tid))
        sp = int(t["ctx"]["sp"])
        if not sp:
            raise gdb.GdbError("thread %d has no saved context (not started yet?)" % index)
        gdb.execute("frame 0", to_string=True)
        regs = ["rsp", "rip"] + list(FRAME)
        saved = {r: int(gdb.parse_and_eval("$" + r)) for r in regs}
        try:
            for r, off in FRAME.items():
                gdb.execute("set $%s = %d" % (r, _u64(sp + off)), to_string=True)
            gdb.execute("set $rip = %d" % _u64(sp + RET), to_string=True)
            gdb.execute("set $rsp = %d" % (sp + FRAME_SIZE), to_string=True)
            gdb.execute("bt")
        finally:
            for r in regs:
                gdb.execute("set $%s = %d" % (r, saved[r]), to_string=True)


InfoItoThreads()
ItoBacktrace()
