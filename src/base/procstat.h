/* SPDX-License-Identifier: MIT */
/* /proc/TID/stat: what the kernel says of a process or thread from outside
 * (its state, its start time). Used by the monitor (runtime/carrier.c) and the
 * allocation table (cpushare/table.c). */
#ifndef ITO_BASE_PROCSTAT_H
#define ITO_BASE_PROCSTAT_H

#include <stdbool.h>
#include <stddef.h>
#include <sys/types.h>

/* Read /proc/TID/stat of the process or thread tid into buf and return its
 * fields from the third on ("S 1 ..."), past the command name, which may
 * hold anything; NULL if there is no such task. */
const char *ito__procstat_read(pid_t tid, char *buf, size_t len);
/* The n-th field (3: state; 22: start time) of what ito__procstat_read
 * returned, as a pointer into it; NULL if there are fewer. */
const char *ito__procstat_field(const char *fields, int n);
/* Is the thread tid asleep in the kernel (state S or D)? */
bool ito__procstat_asleep(pid_t tid);

#endif
