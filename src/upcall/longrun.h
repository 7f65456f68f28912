/* SPDX-License-Identifier: MIT */
/* Long-running threads (longrun.c). */
#ifndef ITO_UPCALL_LONGRUN_H
#define ITO_UPCALL_LONGRUN_H

#include <stdbool.h>
#include <signal.h>

/* The value that marks the time-slice signal as a request for a
 * long-running thread's backtrace (sent with sigqueue's value). */
#define ITO__LONGRUN_TAG 0x69746f6c   /* "itol" */

/* Read ITO_LONGRUN_MS and, if set, start the watch (at start and in the
 * child of fork). */
void ito__longrun_start(void);
/* In the time-slice signal's handler: is this a request (si)? If so, the
 * report of the thread this kernel thread runs is written (uc: its
 * context). */
bool ito__longrun_signal(const siginfo_t *si, void *uc);

#endif
