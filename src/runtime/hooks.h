/* SPDX-License-Identifier: MIT */
/*
 * The runtime's calls up into the layers above it.
 *
 * The runtime sits below the emulated kernel events (upcall/) and the
 * processor sharing between processes (cpushare/) and knows nothing of them
 * by name: where its run loop must tell them something, it calls through
 * this table, the way the scheduler reaches a policy through its ops table.
 * api/init.c fills it before any vproc starts; every entry has a default
 * that does nothing (a runtime on its own: no time slices, one process).
 * It is written once, before the activations start, and only read after;
 * the release store of the runtime's READY state publishes it.
 */
#ifndef ITO_RUNTIME_HOOKS_H
#define ITO_RUNTIME_HOOKS_H

#include <stdbool.h>
#include <stdint.h>
#include <sys/types.h>

struct ito__activation;
struct ito__thread;
struct ito__vproc;

/* A vproc asleep this long declares itself idle ([SA §4.2]'s hysteresis:
 * runtime/idle.c), and calls the idle hook. */
#define ITO__ALLOC_IDLE_NS 2000000u

struct ito__hooks {
    /* upcall/preempt.c: an activation has started on its kernel thread (arm
     * its time-slice timer). */
    void (*activation_started)(struct ito__activation *a);

    /* cpushare/agent.c: demand for processors. */
    void (*backlog)(void);                        /* work made ready with no vproc free */
    void (*backlog_end)(struct ito__vproc *vp);   /* vp picks a thread that waited for it (owner) */
    void (*want_more)(void);                      /* a slice ended while another thread waited */
    void (*idle)(bool idle);                      /* a vproc declared itself idle (true), or busy
                                                     again after that (false) */

    /* cpushare/revoke.c: a vproc whose processor another process holds. */
    void (*revoked)(struct ito__activation *act); /* park act's vproc until it is granted back */
    void (*rescue)(struct ito__vproc *vp);        /* a thread was pushed into a revoked vp's inbox */
    void (*repin)(struct ito__vproc *vp);         /* follow the CPU the allocator granted (owner) */

    /* api/init.c: this is the child of fork(), parent_tid forked (the
     * kernel thread's ID in the parent); at once, in the fork handler
     * (runtime/fork.c). Forget the parent's kernel threads and locks
     * (policy weights, the agent's place in the table, the init lock). */
    void (*forked)(pid_t parent_tid);

    /* posix/tcb.c (libito-pthread.so, ITO_OWN_TLS): thread pointers, each
     * with its TLS block and C-library descriptor. Set by the posix layer
     * before ito starts; api/init.c leaves them alone. */
    uintptr_t (*tp_new)(void);      /* one for a thread spawned without one (0: out of memory) */
    void (*tp_done)(uintptr_t tp);  /* no context runs on tp any more (its thread exited and
                                       switched off it) */

    /* posix/ (libito-pthread.so): the same for the POSIX face, before the
     * child's thread gets its activation: its locks, lists and kernel
     * threads. Set by the posix layer before ito starts. */
    void (*posix_forked)(void);
    /* ... and when the child's runtime resumes (api/init.c): its kernel
     * threads. */
    void (*posix_resumed)(void);

    /* posix/cancel.c: a thread that the tick switched out runs again, still
     * in the tick's handler, at depth 0 (upcall/preempt.c). Asynchronous
     * cancellation acts there on a thread that was not running when it was
     * requested. Set by the posix layer before ito starts. */
    void (*preempted_resume)(void);

    /* api/ (mutex.c): who holds the lock a blocked thread waits on (its
     * wait_on and wait_obj), for the thread reports (dump.c): the owner's
     * descriptor, or NULL with *foreign set when a kernel thread outside
     * ito holds it, or NULL. NULL: not known. */
    struct ito__thread *(*lock_owner)(int on, const void *obj, bool *foreign);
};

extern struct ito__hooks ito__hooks;

#endif
