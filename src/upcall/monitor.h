/* SPDX-License-Identifier: MIT */
/* The monitor: the kernel thread that notices vprocs whose carrier is stuck
 * in the kernel and hands them to spare activations. See monitor.c; the
 * hand-off itself is runtime/carrier.c. */
#ifndef ITO_UPCALL_MONITOR_H
#define ITO_UPCALL_MONITOR_H

/* Read ITO_MAX_ACTIVATIONS; start the monitor and one
 * spare if activations are on. After the vprocs' carriers have started. */
int ito__monitor_init(void);

#endif
