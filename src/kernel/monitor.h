/* The monitor: the kernel thread that notices vprocs whose carrier is stuck
 * in the kernel and hands them to spare activations. See monitor.c. */
#ifndef ITO_KERNEL_MONITOR_H
#define ITO_KERNEL_MONITOR_H

#include <stdbool.h>

/* Read ITO_ACTIVATIONS and ITO_MAX_ACTIVATIONS; start the monitor and one
 * spare if activations are on. After the vprocs' carriers have started. */
int ito__monitor_init(void);
/* ito__rt.monitor_asleep: awake (0), asleep for a while (ASLEEP), asleep
 * until woken because every vproc is idle (ASLEEP_LONG). */
enum { ITO_MONITOR_ASLEEP = 1, ITO_MONITOR_ASLEEP_LONG = 2 };
/* A blocking call began, or (ASLEEP_LONG) a vproc got busy, while the
 * monitor sleeps: wake it. */
void ito__monitor_wake(void);

#endif
