/* SPDX-License-Identifier: MIT */
/*
 * Thread reports: every ito thread of the process, one line each — its id,
 * name, state, what it waits on (the object, and its owner where it has one)
 * — followed by its backtrace. Used by the deadlock report (deadlock.c), the
 * thread dump on demand (api/diag.c) and the crash report (crash.c).
 *
 * Threads are found in the descriptor table (handle.c): descriptors are never
 * freed, so reading one that changes meanwhile is safe; what is read may be
 * stale, and a thread that runs while its stack is read is reported without
 * a backtrace. A parked thread's backtrace starts from its saved frame
 * (arch.h: ito__arch_ctx_ucontext); a running one's is taken on the kernel
 * thread that runs it (a signal: crash.c, api/diag.c), and here it is only
 * named with its vproc.
 */
#ifndef ITO_RUNTIME_DUMP_H
#define ITO_RUNTIME_DUMP_H

#include <stdbool.h>
#include <stddef.h>

struct ito__thread;

/* Write the line that names t ("thread 3 \"worker\"") into buf. */
size_t ito__dump_name(char *buf, size_t cap, const struct ito__thread *t);
/* Write t's line and, if it is parked or ready, its backtrace. */
void ito__dump_thread(int fd, struct ito__thread *t);
/* Call fn on every live thread of this process (not exited, not a copy of
 * the parent's in the child of fork) until it returns false; false then. */
bool ito__threads_all(bool (*fn)(struct ito__thread *t, void *arg), void *arg);
/* Write every live thread of this process; returns how many. */
int ito__dump_threads(int fd);
/* Read ITO_DUMP_SIGNAL and, if it names a signal, dump the threads on it
 * (dump_signal.c). After the time-slice signal is chosen. */
void ito__dump_signal_init(void);
/* The child of fork: its own ito-dump thread (api/init.c). */
void ito__dump_signal_forked(void);

#endif
