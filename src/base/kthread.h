/* SPDX-License-Identifier: MIT */
/* ito's own kernel threads (activations, the monitor, the allocator's
 * agent): detached pthreads with a stack size of their own. */
#ifndef ITO_BASE_KTHREAD_H
#define ITO_BASE_KTHREAD_H

#include <pthread.h>
#include <signal.h>
#include <stddef.h>

/* Start fn(arg) on a new detached kernel thread with a `stack`-byte stack,
 * named `name` if not NULL (what top and gdb show); its handle in *out if
 * not NULL. 0, or pthread_create's error. It starts with every signal
 * blocked: a signal for the process is never handled on one of ito's own
 * threads by accident (an activation, which runs the program's threads,
 * unblocks what they accept: runtime/sigmask.c). It runs under the
 * scheduling policy saved by ito__kthread_policy_save, whichever thread
 * starts it (the monitor, which starts spare activations, may run at a
 * real-time priority: upcall/monitor.c). */
int ito__kthread_start(const char *name, size_t stack, void *(*fn)(void *), void *arg, pthread_t *out);

/* Save the calling thread's scheduling policy and priority for the kernel
 * threads started after (the thread that starts ito, at init). */
void ito__kthread_policy_save(void);

/* Queue `sig` with `value` to the kernel thread `tid` of this process, as
 * sigqueue does (SI_QUEUE, this process and user): its handler's siginfo
 * names the sender and carries the value. 0, or -1 with errno. */
int ito__kthread_signal(pid_t tid, int sig, union sigval value);

#endif
