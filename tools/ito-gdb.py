# SPDX-License-Identifier: MIT
"""gdb support for ito: see ito threads, not only kernel threads.

    (gdb) info ito-threads      every ito thread: id, state, name, what it waits
                                on, and its first frame outside ito
    (gdb) ito-bt 12             backtrace of ito thread 12
    (gdb) ito-bt all            backtrace of every ito thread

Loading. An installed libito brings this script along (docs/diagnostics.md,
"Debugger"): gdb auto-loads it for libito.so from
$prefix/share/gdb/auto-load/<libdir>/, and for a program linked with libito.a
from the program's .debug_gdb_scripts section, in both cases where gdb's
auto-load safe-path allows. By hand: `source tools/ito-gdb.py`, or
`gdb -x tools/ito-gdb.py ./prog`. Loading it twice is harmless.

Where a thread's stack is.
  - A RUNNING thread runs on a kernel thread (an activation): the one that
    sits in a bracketed blocking call for it, or else the one whose stack
    pointer lies in the thread's stack, or else its vproc's carrier. Its
    backtrace is that kernel thread's.
  - A switched-out thread (BLOCKED, READY, SUSPENDED) has its registers in
    the frame that src/arch/x86_64/context.S saved on its own stack:

        sp+0 MXCSR/x87 control, +8 r15, +16 r14, +24 r13, +32 r12,
        +40 rbx, +48 rbp, +56 return address

    gdb can only unwind from a kernel thread's registers, and on a core file
    registers cannot be written; so the unwinder below, for the time of one
    command, takes over the innermost frame of the selected kernel thread and
    says that its caller has the saved registers (rip = the return address,
    rsp = sp + 64). The frames gdb builds from there are the switched-out
    thread's; the commands print those and drop the borrowed one. Nothing in
    the process changes, live or core.
  - A child that runs inline on its joiner's stack (src/runtime/inline.c)
    has its frames on top of its joiner's: its backtrace goes on through
    ito__join_inline into the joiner's frames. The joiner has no context of
    its own meanwhile; its backtrace is the child's from ito__join_inline on.
    If the child was moved off that stack (suspended, then restarted by
    ito_set_entry), the joiner waits in the join frame that
    __builtin_setjmp recorded (frame pointer, resume address, stack
    pointer): its backtrace starts there.

"First user frame": the first frame outside ito's own code (functions of
ito's source tree — src/ and include/, found from where the debug
information says ito__handle_nchunks is defined — or, without line
information, named ito_* or in a libito*.so), preferring the program's own
code to a system library's (the C library's pause() called by main) and a
frame with a source line: `main_loop (server.c:42)`.

Needs ito's debug information (installed libraries keep it: CMakeLists.txt)
and a stopped process, live, attached or in a core file.
"""

import os
import re
import struct

import gdb
import gdb.unwinder

STATES = ["NEW", "READY", "RUNNING", "BLOCKED", "SUSPENDED", "EXITED", "FREE"]
FREE = STATES.index("FREE")
# enum ito__wait_on (src/runtime/wait.h); the debug information's names are
# preferred, this is the fallback.
WAIT_ON = ["nothing", "mutex", "cond", "rwlock", "sem", "barrier", "once", "join", "sleep", "io"]
CHUNK = 1024          # descriptors per chunk of the handle table (thread.h: ITO__HANDLE_CHUNK_SHIFT)
# The saved frame (context.S): offsets from the saved stack pointer.
FRAME = {"r15": 8, "r14": 16, "r13": 24, "r12": 32, "rbx": 40, "rbp": 48}
RET, FRAME_SIZE = 56, 64
LOCK_FLAGS = 3        # a mutex's lock word: owner | WAITERS (1) | DESTROYED (2) (api/mutex.h)
OWNER_FOREIGN = 4     # an owner that is a kernel thread ito did not create (api/owner.h)
INLINE_JOINER = 40    # offsetof(struct ito__inline_frame, joiner) (inline.c), if its type is not found
MAX_FRAMES = 64       # how deep the first user frame is looked for


# --------------------------------------------------------------- reading

def _u64(addr):
    return struct.unpack("<Q", bytes(gdb.selected_inferior().read_memory(addr, 8)))[0]


def _global(name):
    try:
        return gdb.parse_and_eval(name)
    except gdb.error as e:
        raise gdb.GdbError(
            "ito: cannot read %s (%s). Is the program linked with ito, and is ito's debug "
            "information there (installed libraries keep it; a stripped one has none)?" % (name, e))


def _type(name):
    try:
        return gdb.lookup_type(name)
    except gdb.error:
        return None


def _wait_names():
    t = _type("enum ito__wait_on")
    if t is None:
        return dict(enumerate(WAIT_ON))
    return {int(f.enumval): f.name[len("ITO__ON_"):].lower() for f in t.fields()
            if f.name.startswith("ITO__ON_")}


class Thread:
    """What the commands need of one descriptor (struct ito__thread)."""

    def __init__(self, v, addr):
        self.addr = addr
        self.index = int(v["index"])
        self.state = int(v["state"])
        self.name = v["name"].string(errors="replace")
        self.sp = int(v["ctx"]["sp"])
        self.stack_lo = int(v["stack"]["lo"])
        self.stack_size = int(v["stack"]["size"])
        self.inl = int(v["inl"])
        self.inl_wait = int(v["inl_wait"])
        self.started = bool(int(v["started"]))
        try:
            self.wait_on = int(v["wait_on"])
            self.wait_obj = int(v["wait_obj"])
        except gdb.error:   # a library from before the field
            self.wait_on = self.wait_obj = 0

    @property
    def state_name(self):
        return STATES[self.state] if 0 <= self.state < len(STATES) else "state %d" % self.state

    def on_stack(self, sp):
        return self.stack_lo <= sp < self.stack_lo + self.stack_size


class Table:
    """The live threads and the kernel threads, read once per command."""

    def __init__(self):
        if not gdb.selected_inferior().pid:
            raise gdb.GdbError("ito: no process (run the program, attach to it, or load a core file)")
        ttype = _type("struct ito__thread")
        if ttype is None:
            _global("ito__handle_nchunks")   # raises the explanation
            raise gdb.GdbError("ito: struct ito__thread is not in the debug information")
        n = int(_global("ito__handle_nchunks"))
        chunks = _global("ito__handle_chunks")
        self.tsize = size = ttype.sizeof
        state_at = ttype["state"].bitpos // 8
        # In the child of a fork, the parent's descriptors are copies, not
        # threads of this process (runtime/fork.c): their epoch is older.
        try:
            epoch = int(gdb.parse_and_eval("ito__fork_epoch"))
        except gdb.error:
            epoch = None
        self.chunks = []
        self.threads = []
        inf = gdb.selected_inferior()
        for c in range(n):
            base = int(chunks[c])
            self.chunks.append(base)
            # One read per chunk; descriptors in use are decoded from it.
            mem = bytes(inf.read_memory(base, CHUNK * size))
            for i in range(CHUNK):
                off = i * size
                if struct.unpack_from("<i", mem, off + state_at)[0] != FREE:
                    v = gdb.Value(mem[off:off + size], ttype)
                    if epoch is None or int(v["epoch"]) == epoch:
                        self.threads.append(Thread(v, base + off))
        self.by_addr = {t.addr: t for t in self.threads}
        self.by_index = {t.index: t for t in self.threads}
        self.wait_names = _wait_names()
        global _roots
        _roots = _ito_roots()
        self._lwps = None
        self._acts = None

    def index_of(self, addr):
        """The thread id of a descriptor address, or None."""
        for c, base in enumerate(self.chunks):
            off = addr - base
            if 0 <= off < CHUNK * self.tsize and off % self.tsize == 0:
                return c * CHUNK + off // self.tsize
        return None

    # --- kernel threads

    def lwps(self):
        """[(gdb thread, LWP id, innermost stack pointer)]"""
        if self._lwps is None:
            self._lwps = []
            with _Keep():
                for th in gdb.selected_inferior().threads():
                    try:
                        th.switch()
                        sp = int(gdb.newest_frame().read_register("rsp"))
                    except gdb.error:
                        continue
                    self._lwps.append((th, th.ptid[1], sp))
        return self._lwps

    def activations(self):
        """[(tid, thread in a blocking call, thread its vproc runs if it is
        that vproc's carrier)] of every activation (ito__rt.all_acts)."""
        if self._acts is None:
            self._acts = []
            try:
                a = gdb.parse_and_eval("ito__rt")["all_acts"]
                while int(a) and len(self._acts) < 100000:
                    vp = a["vp"]
                    cur = int(vp["current"]) if int(vp) and int(vp["act"]) == int(a) else 0
                    self._acts.append((int(a["tid"]), int(a["blocked"]), cur))
                    a = a["all_next"]
            except gdb.error:
                pass
        return self._acts

    def carrier(self, t):
        """The (gdb thread, LWP id) that runs RUNNING thread t: the kernel
        thread in a blocking call for it, or whose stack pointer is in t's
        stack, or its vproc's carrier; (None, LWP id or None) if gdb does not
        show that one."""
        tid = next((atid for atid, blocked, _ in self.activations() if blocked == t.addr), None)
        if tid is None and t.stack_lo:
            for th, lwp, sp in self.lwps():
                if t.on_stack(sp):
                    return th, lwp
        if tid is None:
            tid = next((atid for atid, _, cur in self.activations() if cur == t.addr), None)
        for th, lwp, _ in self.lwps():
            if lwp == tid:
                return th, lwp
        return None, tid

    # --- what a thread waits on

    def wait_text(self, t):
        if t.state_name != "BLOCKED":
            return "-"
        on = self.wait_names.get(t.wait_on, "?")
        obj = t.wait_obj
        if on == "nothing":
            return "-"
        if on in ("sleep", "io"):
            return on
        if on == "join":
            j = self.by_addr.get(obj)
            text = "join %s" % (j.index if j else _addr(obj))
            if j and j.inl and self.inline_joiner(j) is t:
                text += " (inline)"
            return text
        text = "%s %s" % (on, _addr(obj))
        owner = None
        try:
            if on == "mutex":
                owner = _u64(obj) & ~LOCK_FLAGS
            elif on == "rwlock":
                rw = gdb.Value(obj).cast(_type("struct ito__rwlock").pointer())
                owner = int(rw["writer"])
        except (gdb.error, gdb.MemoryError, AttributeError):
            owner = None
        if owner:
            if owner & OWNER_FOREIGN:
                text += " held by a kernel thread outside ito"
            else:
                i = self.index_of(owner)
                text += " held by %s" % (i if i is not None else _addr(owner))
        return text

    def inline_joiner(self, child):
        """The thread on whose stack `child` runs inline, or None."""
        if not child.inl:
            return None
        ftype = _type("struct ito__inline_frame")
        try:
            if ftype is not None:
                j = int(gdb.Value(child.inl).cast(ftype.pointer())["joiner"])
            else:
                j = _u64(child.inl + INLINE_JOINER)
        except (gdb.error, gdb.MemoryError):
            return None
        return self.by_addr.get(j)

    def inline_child(self, joiner):
        """The child running inline on `joiner`'s stack, or None."""
        c = self.by_addr.get(joiner.wait_obj) if joiner.state_name == "BLOCKED" else None
        if c is not None and c.inl and self.inline_joiner(c) is joiner:
            return c
        for c in self.threads:
            if c.inl and self.inline_joiner(c) is joiner:
                return c
        return None


def _addr(a):
    """0x55d0c0e04020 <m>: the address, and the symbol it is in if any."""
    try:
        return str(gdb.Value(a).cast(gdb.lookup_type("void").pointer()))
    except gdb.error:
        return "%#x" % a


# --------------------------------------------------------------- unwinding

class _FrameId:
    """A frame's identity for gdb (gdb 13 takes its fields as gdb.Value only)."""

    def __init__(self, sp, pc):
        u64 = gdb.lookup_type("unsigned long")
        self.sp = gdb.Value(sp).cast(u64)
        self.pc = gdb.Value(pc).cast(u64)


class _Unwinder(gdb.unwinder.Unwinder):
    """Gives the innermost real frame of the selected kernel thread (the one
    at stack pointer `at_sp` and pc `at_pc`) a caller with the registers
    `regs` (see the module's comment); idle while `regs` is None."""

    def __init__(self):
        super().__init__("ito")
        self.regs = None
        self.at_sp = self.at_pc = 0
        self.id_sp = 0

    def __call__(self, pending):
        if self.regs is None:
            return None
        # Only that frame has the kernel thread's own rsp and rip: frames
        # inlined in it are built before unwinders are asked, and a caller
        # never has both the same.
        pc = int(pending.read_register("rip"))
        if pc != self.at_pc or int(pending.read_register("rsp")) != self.at_sp:
            return None
        u64 = gdb.lookup_type("unsigned long")
        info = pending.create_unwind_info(_FrameId(self.id_sp, pc))
        for reg, val in self.regs.items():
            info.add_saved_register(reg, gdb.Value(val).cast(u64))
        return info


_UNWINDER = _Unwinder()
gdb.unwinder.register_unwinder(None, _UNWINDER, replace=True)


class _Keep:
    """Put the selected thread and frame back afterwards."""

    def __enter__(self):
        self.thread = gdb.selected_thread()
        try:
            self.frame = gdb.selected_frame()
        except gdb.error:
            self.frame = None
        return self

    def __exit__(self, *exc):
        if self.thread is not None and self.thread.is_valid():
            self.thread.switch()
            if self.frame is not None:
                try:
                    self.frame.select()
                except (gdb.error, RuntimeError):
                    pass
        return False


class _Borrow:
    """For the time of a `with`, the selected kernel thread's stack shows a
    switched-out context: frames from `first()` on are the context's."""

    def __init__(self, regs, id_sp):
        self.regs = regs
        self.id_sp = id_sp

    def __enter__(self):
        _UNWINDER.regs = None
        gdb.invalidate_cached_frames()
        # The innermost real frame, below any frames of functions inlined in it.
        f = gdb.newest_frame()
        k = 0
        while f is not None and f.type() == gdb.INLINE_FRAME:
            f = f.older()
            k += 1
        _UNWINDER.at_sp = int(f.read_register("rsp"))
        _UNWINDER.at_pc = int(f.read_register("rip"))
        _UNWINDER.id_sp, _UNWINDER.regs = self.id_sp, self.regs
        gdb.invalidate_cached_frames()
        self.skip = k + 1
        return self

    def first(self):
        f = gdb.newest_frame()
        for _ in range(self.skip):
            f = f.older() if f is not None else None
        return f

    def __exit__(self, *exc):
        _UNWINDER.regs = None
        gdb.invalidate_cached_frames()
        return False


def _saved_regs(sp):
    """The registers of a context saved at sp (context.S's frame)."""
    regs = {r: _u64(sp + off) for r, off in FRAME.items()}
    regs["rip"] = _u64(sp + RET)
    regs["rsp"] = sp + FRAME_SIZE
    return regs


def _setjmp_regs(inl_wait):
    """A joiner whose inline child was moved off waits in the join frame that
    __builtin_setjmp recorded in the first words of its struct
    ito__inline_frame (inline.c): frame pointer, resume address, stack
    pointer (GCC's layout of the buffer on x86-64)."""
    return {"rbp": _u64(inl_wait), "rip": _u64(inl_wait + 8), "rsp": _u64(inl_wait + 16)}


class Stack:
    """Where thread t's frames are: `with Stack(tbl, t) as s:` then s.first()
    is its innermost frame (None: no stack to show, s.why says why), and
    s.skip how many frames of the selected kernel thread come before it."""

    def __init__(self, tbl, t):
        self.tbl, self.t = tbl, t
        self.why = None
        self.note = None
        self.lwp = None
        self.joiner_view = False   # t's frames start at its inline child's ito__join_inline

    def __enter__(self):
        self.keep = _Keep().__enter__()
        self.borrow = None
        try:
            self._find()
        except BaseException:
            self.__exit__(None, None, None)
            raise
        return self

    def _find(self):
        self.skip = 0
        self.top = None
        t, tbl = self.t, self.tbl
        src = t
        child = None
        if t.state_name == "BLOCKED" and not t.sp and not t.inl_wait:
            child = tbl.inline_child(t)
            if child is not None:
                src = child
                self.joiner_view = True
                self.note = "its frames are below those of thread %d, which runs inline on its stack" % (
                    child.index)
        if t.inl:
            j = tbl.inline_joiner(t)
            if j is not None:
                self.note = "runs inline on the stack of thread %d (its joiner): the frames from " \
                            "ito__join_inline on are %d's" % (j.index, j.index)
        regs = None
        if src.state_name == "RUNNING":
            pass
        elif t.inl_wait and t.state_name == "BLOCKED":
            # Its inline child was moved off its stack (inline.c): it waits
            # in the join frame, and its own context only leads back there.
            regs = _setjmp_regs(t.inl_wait)
        elif src.sp:
            regs = _saved_regs(src.sp)
        elif src.state_name == "EXITED":
            self.why = "has exited"
            return
        elif not src.started:
            self.why = "has not started yet (no stack)"
            return
        if regs is not None:
            self.borrow = _Borrow(regs, regs["rsp"] - FRAME_SIZE).__enter__()
            self.skip = self.borrow.skip
            self.top = self.borrow.first()
        else:
            # Running, or caught between a state change and its switch.
            th, lwp = tbl.carrier(src)
            self.lwp = lwp
            if th is not None:
                th.switch()
                self.top = gdb.newest_frame()
            elif lwp:
                self.why = "runs on LWP %d, which gdb does not show" % lwp
            elif src.state_name == "RUNNING":
                self.why = "runs, but no kernel thread of the process is found running it"
            else:
                self.why = "has no saved context (it has not started, or is between two states)"
                return
        if self.joiner_view and self.top is not None:
            # The joiner's frames: from the child's ito__join_inline on.
            f, n = self.top, self.skip
            while f is not None and f.name() != "ito__join_inline":
                f = f.older()
                n += 1
            if f is None:
                self.why = "joins thread %d inline, but no ito__join_inline frame is on its stack" % (
                    child.index)
            self.top, self.skip = f, n

    def first(self):
        return None if self.why else self.top

    def __exit__(self, *exc):
        if self.borrow is not None:
            self.borrow.__exit__(*exc)
        self.keep.__exit__(*exc)
        return False


# --------------------------------------------------------------- ito's own code

def _ito_roots():
    """The source folders of ito's own code, from its debug information."""
    for name, rel in (("ito__handle_nchunks", "src/runtime/handle.c"),
                      ("ito__ctx_jump", "src/arch/x86_64/context.S")):
        sym = gdb.lookup_global_symbol(name) or gdb.lookup_static_symbol(name)
        if sym is not None and sym.symtab is not None:
            path = sym.symtab.fullname()
            if path.endswith(rel):
                root = path[: -len(rel)]
                return (root + "src/", root + "include/")
    return ()


_roots = ()   # set by each command (Table)


def _is_ito(frame):
    sal = frame.find_sal()
    if sal.symtab is not None:
        return sal.symtab.fullname().startswith(_roots) if _roots else False
    name = frame.name() or ""
    if name.startswith("ito_"):
        return True
    lib = gdb.solib_name(frame.pc())
    return bool(lib and os.path.basename(lib).startswith("libito"))


def _describe(frame):
    name = frame.name() or "%#x" % frame.pc()
    sal = frame.find_sal()
    if sal.symtab is not None and sal.line:
        return "%s (%s:%d)" % (name, os.path.basename(sal.symtab.filename), sal.line)
    return name


SYSTEM_DIRS = ("/lib/", "/lib64/", "/usr/lib/", "/usr/lib64/", "/usr/libexec/")


def first_user_frame(frame):
    """The first frame outside ito from `frame` outward, preferring the
    program's own code (not a system library such as the C library's pause())
    and a frame with a source line; its description, or None."""
    best = None   # (rank, description): rank 0 is the best
    n = 0
    while frame is not None and n < MAX_FRAMES:
        try:
            if not _is_ito(frame):
                lib = gdb.solib_name(frame.pc())
                rank = (2 if lib and os.path.realpath(lib).startswith(SYSTEM_DIRS) else 0) + \
                       (0 if frame.find_sal().symtab is not None else 1)
                if best is None or rank < best[0]:
                    best = (rank, _describe(frame))
                if rank == 0:
                    break
            frame = frame.older()
        except gdb.error:
            break
        n += 1
    return best[1] if best else None


def _where(tbl, t):
    try:
        with Stack(tbl, t) as s:
            text = first_user_frame(s.first()) or "-"
            if s.lwp and not s.joiner_view and t.state_name == "RUNNING":
                text += " [LWP %d]" % s.lwp
    except (gdb.error, gdb.MemoryError) as e:
        text = "? (%s)" % e
    if t.inl and tbl.inline_joiner(t) is not None:
        text += " [inline on %d's stack]" % tbl.inline_joiner(t).index
    return text


def _renumber(text, skip):
    """A backtrace's text without its first `skip` frames, renumbered from 0."""
    out, keep = [], False
    for line in text.splitlines():
        m = re.match(r"#(\d+)\s+", line)
        if m:
            level = int(m.group(1))
            keep = level >= skip
            if keep:
                line = "#%-2d %s" % (level - skip, line[m.end():])
        if keep or (not m and not line.startswith("#") and out):
            out.append(line)
    return "\n".join(out)


def _backtrace(tbl, t):
    with Stack(tbl, t) as s:
        if s.first() is None:
            return "thread %d %s" % (t.index, s.why or "has no frames to show")
        text = _renumber(gdb.execute("backtrace", to_string=True), s.skip)
        head = []
        if s.lwp and t.state_name == "RUNNING":
            head.append("(on LWP %d)" % s.lwp)
        if s.note:
            head.append("(%s)" % s.note)
        return "\n".join(head + [text])


# --------------------------------------------------------------- commands

def _header(tbl, t):
    name = ' "%s"' % t.name if t.name else ""
    wait = tbl.wait_text(t)
    return "Thread %d%s, %s%s:" % (t.index, name, t.state_name, "" if wait == "-" else ", " + wait)


class InfoItoThreads(gdb.Command):
    """List the ito threads: id, state, name, what it waits on, first user frame.

The id is the thread's index, as ito's own reports print it (`ito-bt ID`).
WAITS ON says, for a BLOCKED thread, the object and its address: a mutex
or a rwlock held by an ito thread names it (`held by 3`); `join 7` waits
for thread 7, `(inline)` when 7 runs on this thread's stack. WHERE is the
first frame outside ito's code; [LWP n] the kernel thread running it."""

    def __init__(self):
        super().__init__("info ito-threads", gdb.COMMAND_STATUS)

    def invoke(self, arg, from_tty):
        tbl = Table()
        rows = [(str(t.index), t.state_name, t.name or "-", tbl.wait_text(t), _where(tbl, t))
                for t in tbl.threads]
        head = ("Id", "State", "Name", "Waits on", "Where")
        widths = [max([len(head[i])] + [len(r[i]) for r in rows]) for i in range(4)]
        fmt = "%%%ds  %%-%ds  %%-%ds  %%-%ds  %%s" % tuple(widths)
        print((fmt % head).rstrip())
        for r in rows:
            print(fmt % r)
        print("%d ito thread(s)" % len(rows))


class ItoBacktrace(gdb.Command):
    """ito-bt ID | all: backtrace of ito thread ID (see info ito-threads), or of every one.

Works on a live or attached process and on a core file; nothing in the
process is changed. A running thread's backtrace is that of the kernel
thread running it; a switched-out one's starts in ito's switch code."""

    def __init__(self):
        super().__init__("ito-bt", gdb.COMMAND_STACK)

    def invoke(self, arg, from_tty):
        arg = arg.strip()
        tbl = Table()
        if arg == "all":
            for t in tbl.threads:
                print(_header(tbl, t))
                print(_backtrace(tbl, t))
                print()
            return
        try:
            index = int(arg, 0) & 0xFFFFFFFF   # a whole handle works too
        except ValueError:
            raise gdb.GdbError("usage: ito-bt ID | all (ids: info ito-threads)")
        t = tbl.by_index.get(index)
        if t is None:
            raise gdb.GdbError("no ito thread %d (see info ito-threads)" % index)
        print(_header(tbl, t))
        print(_backtrace(tbl, t))


InfoItoThreads()
ItoBacktrace()
