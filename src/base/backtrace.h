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
 * (function+offset); the module and its offset are added where the caller
 * may take the loader's lock (dladdr), so that `addr2line -e MODULE OFFSET`
 * gives file and line.
 */
#ifndef ITO_BASE_BACKTRACE_H
#define ITO_BASE_BACKTRACE_H

#include <stdbool.h>
#include <stdint.h>
#include <ucontext.h>

#define ITO__BT_FRAMES 32

/* Find ito's own library (from a normal context, once, before any
 * backtrace is written). */
void ito__bt_init(void);

/* Write the backtrace that starts at uc to fd, one frame per line after
 * `indent`, without ito's own frames at either end but the one through
 * which the program entered ito. signal_frame: uc is a
 * signal's (its ip is the faulting instruction, not a return address).
 * modules: also name each frame's module (takes the loader's lock: not in
 * a signal handler that must go on). Returns the number of frames written. */
int ito__bt_write(int fd, ucontext_t *uc, bool signal_frame, bool modules, const char *indent);

#endif
