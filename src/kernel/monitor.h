/* The monitor: the kernel thread that notices vprocs whose carrier is stuck
 * in the kernel and hands them to spare activations. See monitor.c. */
#ifndef ITO_KERNEL_MONITOR_H
#define ITO_KERNEL_MONITOR_H

#include <stdbool.h>

/* Read ITO_ACTIVATIONS and ITO_MAX_ACTIVATIONS; start the monitor and one
 * spare if activations are on. After the vprocs' carriers have started. */
int ito__monitor_init(void);
/* ito__rt.monitor_asleep: awake (0), asleep for a while (ASLEEP), asleep
 * until woken because every vproc is idle (ASLEEP_LONG), woken from that
 * by a vproc that got busy (WOKEN_BUSY). */
enum { ITO_MONITOR_ASLEEP = 1, ITO_MONITOR_ASLEEP_LONG = 2, ITO_MONITOR_WOKEN_BUSY = 3 };
/* A blocking call began while the monitor sleeps: wake it (it looks again
 * at its fastest pace). */
void ito__monitor_wake(void);
/* A vproc got busy while the monitor sleeps until woken: wake it (to watch
 * for stalls; a blocking call would wake it by itself). */
void ito__monitor_wake_busy(void);

#endif
