/* SPDX-License-Identifier: MIT */
/*
 * Backtraces of code that is not necessarily the caller's: the frames above
 * a signal (a crash, a request to a running thread), or above a register set
 * rebuilt from a context saved on a stack (a parked thread).
 *
 * The C library's backtrace(3) walks only the caller's own stack, from where
 * it is called. libunwind (the field's DWARF unwinder, as used by perf and
 * gdb's helpers) starts from any register set, needs no frame pointers, and
 * steps through signal frames; its local unwinding and procedure names are
 * usable from a signal handler. Names come from the symbol tables
 * (function+offset), the module and the offset in it from /proc/self/maps,
 * so that `addr2line -f -e MODULE OFFSET` gives file and line.
 */
#ifndef ITO_BASE_BACKTRACE_H
#define ITO_BASE_BACKTRACE_H

#include <stdbool.h>
#include <stdint.h>
#include <ucontext.h>

#define ITO__BT_FRAMES 32
/* libunwind's cursor, in words (UNW_TDEP_CURSOR_LEN on x86-64; checked in
 * backtrace.c), so that this header does not need libunwind's. */
#define ITO__BT_CURSOR_WORDS 127

/* A backtrace taken but not yet named: taking it reads the stack, naming
 * it reads symbol tables and may allocate. So a running thread's stack can
 * be walked while it is held still, and named once it goes on. */
struct ito__bt {
    int n;
    bool more;          /* frames beyond ITO__BT_FRAMES */
    bool signal_frame;
    uintptr_t ip[ITO__BT_FRAMES];
    struct { uint64_t w[ITO__BT_CURSOR_WORDS]; } cursors[ITO__BT_FRAMES];
};

/* Walk the stack from uc (see ito__bt_write); the number of frames. */
int ito__bt_capture(struct ito__bt *bt, ucontext_t *uc, bool signal_frame);
/* Name and write a captured backtrace, as ito__bt_write does. */
int ito__bt_print(int fd, struct ito__bt *bt, const char *indent);

/* Find ito's own library (from a normal context, once, before any
 * backtrace is written). */
void ito__bt_init(void);

/* Write the backtrace that starts at uc to fd, one frame per line after
 * `indent`, without ito's own frames at either end but the one through
 * which the program entered ito. signal_frame: uc is a
 * signal's (its ip is the faulting instruction, not a return address).
 * Returns the number of frames written. Naming frames may allocate (libunwind
 * reads symbol tables): in a signal handler only where the program dies. */
int ito__bt_write(int fd, ucontext_t *uc, bool signal_frame, const char *indent);

/* From now on, backtraces are written without names (each frame as its
 * module and offset): the process is about to die in code that interrupted
 * what may hold the allocator's lock (a signal handler's misuse: runtime/
 * critical.c), and naming a frame allocates. */
void ito__bt_names_off(void);

#endif
