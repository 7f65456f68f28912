/* SPDX-License-Identifier: MIT */
/*
 * A child process starts with the process's scheduling, not a carrier's.
 *
 * Problem. fork() copies the calling kernel thread's CPU affinity and
 * scheduling policy into the child. In an ito process the caller is usually
 * a carrier: pinned to the one CPU of its vproc (vproc.c), and perhaps
 * running at the idle weight (cpushare/weight.c). A program that forks and
 * execs a worker — or an ito program that starts others — would hand it
 * one CPU, and maybe SCHED_IDLE, for life: an ito child would then see one
 * usable CPU and run one vproc.
 *
 * Approach. A pthread_atfork child handler gives the child's only thread the
 * affinity the process had before ito pinned anything, and the policy the
 * thread had before the allocator weakened it. The parent is untouched.
 *
 * posix_spawn, and system and popen built on it, run no fork handlers:
 * spawn.c lifts the caller's pinning around them instead.
 */
#include "runtime/fork.h"

#include <pthread.h>
#include <unistd.h>

#include "runtime/hooks.h"
#include "runtime/vproc.h"

/* The kernel thread that forks, as its parent knew it (the child's copy of
 * this thread's TLS keeps it). */
static __thread pid_t forking_tid;

static void prepare(void)
{
    forking_tid = gettid();
}

static void child(void)
{
    ito__cpus_restore_self();
    ito__hooks.forked(forking_tid);
}

void ito__fork_init(void)
{
    pthread_atfork(prepare, NULL, child);
}
