/* SPDX-License-Identifier: MIT */
/* A vproc on a processor that a process of higher priority holds runs at
 * the kernel's idle weight. See weight.c. */
#ifndef ITO_CPUSHARE_WEIGHT_H
#define ITO_CPUSHARE_WEIGHT_H

#include <stdbool.h>
#include <sys/types.h>

/* May this process give a kernel thread its normal weight back after
 * making it SCHED_IDLE (CAP_SYS_NICE, or RLIMIT_NICE of 20 or more)? Read
 * once. Without it, nothing is ever made SCHED_IDLE. */
bool ito__weight_reversible(void);

/* The kernel threads (n of them) that carry a vproc on a processor that a
 * process of higher priority holds too, as the agent sees it now. Makes them
 * SCHED_IDLE, and gives every kernel thread it weakened before that is not
 * in the list its former policy back. The agent thread only. */
void ito__weight_follow(const pid_t *idle, int n);

/* In a fork's child: its thread was the parent's parent_tid; if the agent
 * had weakened that one, the child's gets its former policy back. */
void ito__weight_forked(pid_t parent_tid);

#endif
