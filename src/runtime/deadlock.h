/* SPDX-License-Identifier: MIT */
/* Deadlock reports (deadlock.c): when no thread can ever run again, say so
 * and end the process. */
#ifndef ITO_RUNTIME_DEADLOCK_H
#define ITO_RUNTIME_DEADLOCK_H

#include <stdint.h>

/* Read ITO_DEADLOCK (report, abort, off). */
void ito__deadlock_init(void);
/* A layer above handles `sig` itself (a time-slice tick, a dump request):
 * a handler for it is not a way for the program to wake a thread. */
void ito__deadlock_own_signal(int sig);
/* A vproc goes to sleep with no deadline: if every vproc sleeps and no
 * timer is pending, the deadline (after `now`) at which it should wake and
 * call ito__deadlock_check; else 0. */
uint64_t ito__deadlock_suspect(uint64_t now);
/* Nothing happened since: report and end the process if no thread can ever
 * run again; otherwise return. From a vproc's scheduler context. */
void ito__deadlock_check(void);

#endif
