/* SPDX-License-Identifier: MIT */
/* Preemption by time slices (preempt.c). */
#ifndef ITO_UPCALL_PREEMPT_H
#define ITO_UPCALL_PREEMPT_H

#include <sys/types.h>

struct ito__activation;

/* Read ITO_TIMESLICE_US and ITO_PREEMPT_SIGNAL and install the handler
 * (before any activation starts). Sets ito__rt.timeslice_ns, 0 if off. */
void ito__preempt_init(void);
/* Start the calling activation's time-slice timer. */
void ito__preempt_start_self(struct ito__activation *a);

#endif
