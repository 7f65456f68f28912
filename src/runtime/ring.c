/* SPDX-License-Identifier: MIT */
/*
 * Rings: io_uring as the "blocked" and "unblocked" events of I/O.
 *
 * Problem. A thread that waits for the kernel (a read on an empty pipe, an
 * accept with no client) must not take its vproc along, and whatever wakes
 * it must reach an idle vproc that may be asleep — without a poller thread
 * and without idle vprocs polling.
 *
 * Approach. Each vproc has an io_uring ring. A thread issues its request on
 * the ring of the vproc it runs on, marks itself blocked and switches away;
 * the request's completion (a CQE whose user_data is the request, on the
 * thread's stack) makes it ready again. Completions are reaped by:
 *   - the issuing thread itself right after submitting: io_uring first tries
 *     the operation at once, so a ready descriptor completes inside the
 *     submit and the thread never parks;
 *   - the owning vproc, at its periodic look (every few dozen picks, sched.c)
 *     and whenever it is idle;
 *   - an idle vproc spinning for work, for a busy vproc's ring (rescue), so
 *     that completions do not wait behind a long-running thread.
 * The thread becomes ready on the vproc that reaped its completion: the one it
 * ran on, unless that vproc was busy and an idle one rescued it.
 *
 * Sleeping. An idle vproc that has found nothing sleeps in io_uring_enter on
 * its own ring, so a completion wakes it directly. To be woken for other work
 * (a thread made ready by another vproc, a new timer), it keeps a poll of an
 * eventfd in flight on its ring; the idle protocol (idle.c) writes that
 * eventfd instead of waking a futex. An eventfd keeps its count until it is
 * read, so a kick that arrives before the sleeper waits is not lost.
 *
 * The bell. A vproc whose thread computes reaps nothing until it switches.
 * A second eventfd, registered as the ring's completion eventfd, is off
 * (IORING_CQ_EVENTFD_DISABLED) but while the monitor says the vproc
 * computes; then the kernel signals it at each completion, and the doorbell
 * thread asks the vproc to look (upcall/doorbell.c).
 *
 * Locking. ring->lock serializes the SQ, the CQ and the bookkeeping of the
 * requests (pending, parked). It is held across io_uring_submit, a system
 * call — the one exception to the spinlock rules (runtime/spinlock.h): the lock
 * belongs to the vproc that owns the ring, other vprocs only try it (rescue),
 * and the sleeper waits in the kernel without it.
 *
 * A thread marks itself blocked while it still holds ring->lock, so no reaper
 * can see its completion before it has stopped being RUNNING; the wake-up then
 * follows the usual path (ito__wake_finish), including the race with a thread
 * that has not yet finished switching out (sched.c).
 *
 * Rejected: one ring for the process (every vproc would contend on it); an
 * SQPOLL kernel thread (burns a CPU); waiting with the lock held.
 */
#include "base/libc.h"
#include "runtime/ring.h"

#include <errno.h>
#include <poll.h>
#include <stdlib.h>
#include <string.h>
#include <sys/eventfd.h>
#include <unistd.h>

#include "base/clock.h"
#include "base/env.h"
#include "base/panic.h"
#include "runtime/runtime.h"
#include "runtime/sanitizer.h"
#include "runtime/sched.h"
#include "runtime/sigmask.h"
#include "runtime/thread.h"
#include "runtime/vproc.h"
#include "runtime/wait.h"

/* SQ size: a thread issues a handful of SQEs at a time, submitted at once. */
#define RING_SQ_ENTRIES 256
/* CQ size: completions of parked threads waiting to be reaped; beyond it the
 * kernel keeps them on an overflow list (IORING_FEAT_NODROP). */
#define RING_CQ_ENTRIES 4096
/* user_data: a request's address (even); 0 for requests nobody waits for
 * (cancellations, linked timeouts); odd for the eventfd poll, with its
 * generation above bit 0. */
static inline uint64_t ud_kick(uint32_t gen) { return (uint64_t)gen << 1 | 1u; }

bool ito__rings_on;

/* ------------------------------------------------------------ setup */

static int ring_create(struct ito__ring *r, struct ito__vproc *vp)
{
    struct io_uring_params p;
    memset(&p, 0, sizeof p);
    p.flags = IORING_SETUP_CQSIZE;
    p.cq_entries = RING_CQ_ENTRIES;
    int e = io_uring_queue_init_params(RING_SQ_ENTRIES, &r->uring, &p);
    if (e < 0)
        return -e;
    /* EXT_ARG (5.11): a timed wait that does not go through the SQ, so the
     * sleeper needs no lock. NODROP: completions are never lost. */
    if (!(p.features & IORING_FEAT_EXT_ARG) || !(p.features & IORING_FEAT_NODROP)) {
        io_uring_queue_exit(&r->uring);
        return ENOSYS;
    }
    r->evfd = eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK);
    if (r->evfd < 0) {
        e = errno;
        io_uring_queue_exit(&r->uring);
        return e;
    }
    /* The bell, off until the monitor turns it on (upcall/doorbell.c). */
    r->bell = eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK);
    if (r->bell < 0 || (e = -io_uring_register_eventfd(&r->uring, r->bell)) != 0) {
        e = r->bell < 0 ? errno : e;
        if (r->bell >= 0)
            close(r->bell);
        close(r->evfd);
        io_uring_queue_exit(&r->uring);
        return e;
    }
    ito__ring_bell(r, false);
    r->vp = vp;
    return 0;
}

/* The kernel must know IORING_ASYNC_CANCEL_ALL (5.19, used by ito_poll);
 * IORING_OP_SOCKET arrived in the same release and, unlike the flag, can be
 * probed. */
static bool kernel_recent(struct ito__ring *r)
{
    struct io_uring_probe *probe = io_uring_get_probe_ring(&r->uring);
    bool ok = probe && io_uring_opcode_supported(probe, IORING_OP_SOCKET);
    if (probe)
        io_uring_free_probe(probe);
    return ok;
}

bool ito__rings_init(void)
{
    if (!ito__env_int("ITO_IO_URING", 1, 0, 1, false))
        return false;
    /* valgrind cannot follow what the kernel writes into the rings' shared
     * memory (nor wait in io_uring_enter reliably): run the plain calls. */
    if (ito__running_on_valgrind())
        return false;
    int n = ito__rt.nvprocs, made = 0, e = 0;
    for (; made < n; made++) {
        struct ito__ring *r = calloc(1, sizeof *r);
        if (!r) {
            e = ENOMEM;
            break;
        }
        ito__spin_init(&r->lock, ITO__LOCK_RING);
        if ((e = ring_create(r, ito__rt.vprocs[made]))) {
            free(r);
            break;
        }
        ito__rt.vprocs[made]->ring = r;
        if (made == 0 && !kernel_recent(r)) {
            e = ENOSYS;
            made++;
            break;
        }
    }
    if (e) {
        for (int i = 0; i < made; i++) {
            struct ito__ring *r = ito__rt.vprocs[i]->ring;
            io_uring_queue_exit(&r->uring);
            close(r->evfd);
            close(r->bell);
            free(r);
            ito__rt.vprocs[i]->ring = NULL;
        }
        ito__warn("io_uring is not usable here (%s); ito's I/O calls will block their vproc. "
                  "Linux 5.19 or newer with io_uring enabled (sysctl kernel.io_uring_disabled=0) "
                  "is needed; set ITO_IO_URING=0 to silence this",
                  e == ENOSYS ? "kernel too old" : strerror(e));
        return false;
    }
    ito__rings_on = true;
    return true;
}

void ito__rings_forked(struct ito__vproc *const *old, int n)
{
    /* The parent's rings: their memory is shared with the parent's, so the
     * child only drops its mappings and descriptors, and never submits to
     * them. (A child that execs has lost them already: close-on-exec.) */
    for (int i = 0; i < n; i++) {
        struct ito__ring *r = old[i]->ring;
        if (!r)
            continue;
        io_uring_queue_exit(&r->uring);
        close(r->evfd);
        close(r->bell);
    }
}

/* ------------------------------------------------------------ reaping */

/* Wake the threads of a list built by reap_locked (linked by qnext), whose
 * waits it claimed. */
static unsigned wake_list(struct ito__thread *list)
{
    unsigned n = 0;
    while (list) {
        struct ito__thread *next = list->qnext;   /* before it can run */
        list->qnext = NULL;
        ito__wake_finish(&list->wait);
        list = next;
        n++;
    }
    return n;
}

static void arm_kick(struct ito__ring *r);

/* Consume every CQE; threads whose request is done are prepended to *wake.
 * Returns whether a kick (the eventfd poll) completed. */
static bool reap_locked(struct ito__ring *r, struct ito__thread **wake)
{
    struct io_uring_cqe *cqes[64];
    struct ito__io_req *cancel = NULL;   /* linked by cancel_next */
    unsigned n;
    bool kicked = false;
    while ((n = io_uring_peek_batch_cqe(&r->uring, cqes, 64)) > 0) {
        for (unsigned i = 0; i < n; i++) {
            uint64_t ud = cqes[i]->user_data;
            if (ud & 1u) {
                /* The eventfd poll. A poll of an older generation, armed by
                 * a carrier that has since lost the vproc, is ignored: the
                 * count stays for the current one. */
                if (ud == ud_kick(r->ev_gen)) {
                    /* Consume the count, so that the next poll waits for a
                     * new kick. */
                    uint64_t count;
                    ssize_t rd = ito__sys_read(r->evfd, &count, sizeof count);
                    (void)rd;
                    r->ev_armed = false;
                    kicked = true;
                }
                continue;
            }
            if (ud == 0)
                continue;
            struct ito__io_req *req = (struct ito__io_req *)(uintptr_t)ud;
            if (!req->got) {
                req->res = cqes[i]->res;
                req->got = true;
                if (req->cancel_rest && req->pending > 1) {
                    req->cancel_next = cancel;
                    cancel = req;
                }
            }
            ITO_BUG_ON(req->pending == 0);
            req->pending--;
            if (req->parked && req->pending == 0) {
                /* Claimed under the lock, where an interrupter claims too
                 * (ito__ring_wait): the one that wins makes it ready. */
                req->parked = false;
                __atomic_store_n(&r->parked, __atomic_load_n(&r->parked, __ATOMIC_RELAXED) - 1, __ATOMIC_RELAXED);
                if (ito__wake_claim(&req->thread->wait)) {
                    req->thread->qnext = *wake;
                    *wake = req->thread;
                }
            }
        }
        io_uring_cq_advance(&r->uring, n);
    }
    if (cancel) {
        /* The rest of each such request (ito_poll's other descriptors, its
         * timeout) is cancelled; their completions end the wait. Only after
         * the CQ is advanced: submitting may reap again. */
        for (; cancel; cancel = cancel->cancel_next) {
            struct io_uring_sqe *sqe = ito__ring_sqe(r);
            io_uring_prep_cancel(sqe, cancel, IORING_ASYNC_CANCEL_ALL);
            io_uring_sqe_set_data64(sqe, 0);
        }
        ito__ring_submit(r);
    }
    if (kicked && ito__vproc_self() != r->vp &&
        atomic_load_explicit(&r->vp->run_state, memory_order_relaxed) != ITO__VP_BUSY) {
        /* Another vproc took the owner's kick (a rescue, a cancellation)
         * while the owner may be going to sleep: pass the kick on. A busy
         * owner goes through the idle protocol again anyway. */
        arm_kick(r);
        ito__ring_kick(r);
    }
    return kicked;
}

/* Keep a poll of the eventfd in flight, submitted by the calling activation
 * (lock held). A poll, not a read: an eventfd cannot be read without
 * blocking inside io_uring, which would hand the read to a kernel worker
 * thread and add two context switches to every kick. Submitted by the
 * sleeper itself: io_uring completes a poll through the kernel thread that
 * submitted it, and one that lost the vproc may be stuck in a blocking call. */
static void arm_kick(struct ito__ring *r)
{
    struct ito__activation *self = ito__activation_self();
    if (r->ev_armed && r->ev_act == self)
        return;
    struct io_uring_sqe *sqe = ito__ring_sqe(r);
    io_uring_prep_poll_add(sqe, r->evfd, POLLIN);
    io_uring_sqe_set_data64(sqe, ud_kick(++r->ev_gen));
    r->ev_armed = true;
    r->ev_act = self;
    ito__ring_submit(r);
}

unsigned ito__ring_reap(struct ito__ring *r, bool try)
{
    if (try) {
        if (!ito__spin_trylock(&r->lock))
            return 0;
    } else {
        ito__spin_lock(&r->lock);
    }
    struct ito__thread *wake = NULL;
    reap_locked(r, &wake);
    ito__spin_unlock(&r->lock);
    return wake_list(wake);
}

/* ------------------------------------------------------------ issuing */

void ito__ring_submit(struct ito__ring *r)
{
    for (unsigned tries = 0;; tries++) {
        int s = io_uring_submit(&r->uring);
        if (s >= 0 || s == -EINTR) {
            if (s >= 0 && io_uring_sq_ready(&r->uring) == 0)
                return;
            continue;
        }
        /* EBUSY: the CQ overflowed and the kernel wants it drained first;
         * EAGAIN: out of memory for requests, for now. Reap and try again. */
        if (s != -EBUSY && s != -EAGAIN)
            ito__panic("io_uring_submit failed: %s", strerror(-s));
        if (tries > 100000)
            ito__panic("io_uring_submit keeps failing: %s", strerror(-s));
        struct ito__thread *wake = NULL;
        reap_locked(r, &wake);
        /* Waking threads takes no lock of ours but the policy's. */
        wake_list(wake);
        if (s == -EAGAIN)
            ito__libc_sched_yield();
    }
}

struct io_uring_sqe *ito__ring_sqe(struct ito__ring *r)
{
    struct io_uring_sqe *sqe;
    while (!(sqe = io_uring_get_sqe(&r->uring)))
        ito__ring_submit(r);
    return sqe;
}

/* ito__ring_wait with the lock held and req's SQEs prepared: submit, and
 * park unless everything completed inside the submit. Unlocks. 0, or EINTR
 * if an interruptible wait was interrupted. */
static int submit_and_park(struct ito__ring *r, struct ito__io_req *req)
{
    struct ito__thread *wake = NULL;
    ito__ring_submit(r);
    /* Operations on ready descriptors have completed inside the submit. */
    reap_locked(r, &wake);
    if (req->pending == 0) {
        ito__spin_unlock(&r->lock);
        wake_list(wake);
        return 0;
    }
    struct ito__waiter *w = ito__waiter_init(NULL);
    if (!req->parked)   /* (parked again after an interruption: still one) */
        __atomic_store_n(&r->parked, __atomic_load_n(&r->parked, __ATOMIC_RELAXED) + 1, __ATOMIC_RELAXED);
    req->parked = true;
    /* BLOCKED before any reaper can see the CQE; the ring's lock is the
     * one an interrupter takes (runtime/wait.h). */
    ito__wait_begin(w, 0, &r->lock, NULL, ITO__ON_IO, r);
    ito__spin_unlock(&r->lock);
    wake_list(wake);
    return ito__wait_end(w, &r->lock, NULL);
}

int ito__ring_wait(struct ito__ring *r, struct ito__io_req *req)
{
    if (submit_and_park(r, req) == 0)
        return 0;
    /* Interrupted (a signal or a cancellation for a POSIX thread): the
     * request's operations are cancelled, and the thread waits for them to
     * end, not interruptibly — the kernel may still write into the request.
     * One may have completed first: req->res tells. */
    ito__spin_lock(&r->lock);
    if (req->pending == 0) {
        ito__spin_unlock(&r->lock);
        return EINTR;
    }
    struct io_uring_sqe *sqe = ito__ring_sqe(r);
    io_uring_prep_cancel(sqe, req, IORING_ASYNC_CANCEL_ALL);
    io_uring_sqe_set_data64(sqe, 0);
    struct ito__thread *self = req->thread;
    bool interruptible = self->interruptible;
    self->interruptible = false;
    submit_and_park(r, req);
    self->interruptible = interruptible;
    return EINTR;
}

/* ------------------------------------------------------------ sleeping */

unsigned ito__ring_sleep(struct ito__vproc *vp, uint64_t deadline)
{
    struct ito__ring *r = vp->ring;
    struct ito__thread *wake = NULL;
    ito__spin_lock(&r->lock);
    /* A kick reaped here may be stale or fresh: let the caller look at its
     * state again rather than sleep. Arm the next one after reaping (which
     * disarms on a kick), so that the wait below always has one in flight. */
    bool kicked = reap_locked(r, &wake);
    arm_kick(r);
    ito__spin_unlock(&r->lock);
    if (wake || kicked)
        return wake_list(wake);

    /* Wait without the lock: the kernel only compares the CQ's head and tail.
     * Signals as in the futex sleep (idle.c, ito__sigmask_idle): once threads
     * have masks of their own, with every signal blocked but ito's own (in
     * the same system call), so that no handler runs where no thread runs
     * and a signal for the process that arrives while every vproc sleeps is
     * kept for a thread that accepts it (the POSIX face's router wakes one:
     * posix/sigroute.c). Until then, with the kernel thread's mask: the
     * process's, so that a signal for the process sleeping here takes its
     * action (a SIGTERM ends an idle program). */
    uint64_t blocked = ~ito__sigmask_reserved();
    bool block = atomic_load_explicit(&ito__sigmasks_used, memory_order_relaxed);
    struct __kernel_timespec ts;
    struct io_uring_getevents_arg arg = { .sigmask = block ? (uint64_t)(uintptr_t)&blocked : 0,
                                          .sigmask_sz = _NSIG / 8, .ts = 0 };
    if (deadline) {
        uint64_t now = ito__now_ns();
        ts = ito__ring_timespec(deadline > now ? deadline - now : 0);
        arg.ts = (uint64_t)(uintptr_t)&ts;
    }
    int e = io_uring_enter2((unsigned)r->uring.ring_fd, 0, 1,
                            IORING_ENTER_GETEVENTS | IORING_ENTER_EXT_ARG, (sigset_t *)&arg, sizeof arg);
    if (e < 0 && e != -ETIME && e != -EINTR && e != -EAGAIN && e != -EBUSY)
        ito__panic("io_uring_enter (idle wait) failed: %s", strerror(-e));
    return ito__ring_reap(r, false);
}

void ito__ring_kick(struct ito__ring *r)
{
    uint64_t one = 1;
    /* Fails only if the count would overflow, which still wakes the reader. */
    ssize_t n = ito__sys_write(r->evfd, &one, sizeof one);
    (void)n;
}
