/* SPDX-License-Identifier: MIT */
/* Thread reports: see dump.h. */
#include "runtime/dump.h"

#include <stdio.h>
#include <string.h>
#include <ucontext.h>

#include "arch.h"
#include "base/backtrace.h"
#include "base/clock.h"
#include "base/libc.h"
#include "runtime/carrier.h"
#include "runtime/hooks.h"
#include "runtime/runtime.h"
#include "runtime/sanitizer.h"
#include "runtime/thread.h"
#include "runtime/vproc.h"

static void say(int fd, const char *s, size_t n)
{
    ssize_t w = ito__sys_write(fd, s, n);
    (void)w;
}

size_t ito__dump_name(char *buf, size_t cap, const struct ito__thread *t)
{
    char name[ITO_NAME_MAX];
    memcpy(name, t->name, sizeof name);   /* it may be renamed meanwhile */
    name[sizeof name - 1] = '\0';
    int n = name[0] ? snprintf(buf, cap, "thread %u \"%s\"", t->index, name)
                    : snprintf(buf, cap, "thread %u", t->index);
    return n < 0 ? 0 : (size_t)n >= cap ? cap - 1 : (size_t)n;
}

static const char *const what[ITO__ON_COUNT] = {
    [ITO__ON_NOTHING] = "something",
    [ITO__ON_MUTEX] = "mutex",
    [ITO__ON_COND] = "condition variable",
    [ITO__ON_RWLOCK] = "rwlock",
    [ITO__ON_SEM] = "semaphore",
    [ITO__ON_BARRIER] = "barrier",
    [ITO__ON_ONCE] = "once (another thread runs it)",
    [ITO__ON_JOIN] = "join of",
    [ITO__ON_SLEEP] = "sleep",
    [ITO__ON_IO] = "I/O",
};

/* "blocked on mutex 0x... held by thread 2 \"b\"" and the like. */
static size_t describe_wait(char *buf, size_t cap, struct ito__thread *t)
{
    unsigned on = atomic_load_explicit(&t->wait_on, memory_order_relaxed);
    const void *obj = atomic_load_explicit(&t->wait_obj, memory_order_relaxed);
    if (on >= ITO__ON_COUNT)
        on = ITO__ON_NOTHING;
    size_t n = 0;
#define ADD(...)                                                   \
    do {                                                           \
        int k_ = snprintf(buf + n, cap - n, __VA_ARGS__);          \
        n = k_ < 0 ? n : n + (size_t)k_ >= cap ? cap - 1 : n + (size_t)k_; \
    } while (0)
    switch (on) {
    case ITO__ON_JOIN:
        ADD("blocked in join of ");
        n += ito__dump_name(buf + n, cap - n, obj);
        break;
    case ITO__ON_SLEEP:
        ADD("asleep");
        break;
    case ITO__ON_IO:
        ADD("waiting for I/O");
        break;
    default:
        ADD("blocked on %s %p", what[on], obj);
        if ((on == ITO__ON_MUTEX || on == ITO__ON_RWLOCK) && ito__hooks.lock_owner) {
            bool foreign = false;
            struct ito__thread *o = ito__hooks.lock_owner((int)on, obj, &foreign);
            if (foreign) {
                ADD(", held by a kernel thread outside ito");
            } else if (o) {
                ADD(", held by ");
                n += ito__dump_name(buf + n, cap - n, o);
            }
        }
    }
    uint64_t deadline = __atomic_load_n(&t->wait.timed, __ATOMIC_RELAXED) ? __atomic_load_n(&t->wait.deadline, __ATOMIC_RELAXED) : 0;
    if (deadline) {
        uint64_t now = ito__now_ns();
        ADD(" (times out in %.1f ms)", deadline > now ? (double)(deadline - now) / 1e6 : 0.0);
    }
#undef ADD
    return n;
}

static void dump_thread(int fd, struct ito__thread *t);

void ito__dump_thread(int fd, struct ito__thread *t)
{
    ito__tsan_reads_begin();
    dump_thread(fd, t);
    ito__tsan_reads_end();
}

static void dump_thread(int fd, struct ito__thread *t)
{
    char line[512];
    size_t n = 0;
    n += (size_t)snprintf(line, sizeof line, "ito: ");
    n += ito__dump_name(line + n, sizeof line - n, t);
    int st = ito__thread_state(t);
    bool parked = false;
    switch (st) {
    case ITO__TS_NEW:
        n += (size_t)snprintf(line + n, sizeof line - n, " not started yet");
        break;
    case ITO__TS_READY:
        n += (size_t)snprintf(line + n, sizeof line - n, " ready to run");
        parked = true;
        break;
    case ITO__TS_RUNNING: {
        struct ito__vproc *vp = t->vp;
        bool kernel = vp && (atomic_load_explicit(&vp->kstate, memory_order_relaxed) & ITO__KS_MASK) == ITO__KS_KERNEL;
        n += (size_t)snprintf(line + n, sizeof line - n, " running on vproc %d%s", vp ? vp->index : -1,
                              kernel ? " (in a kernel call)" : "");
        break;
    }
    case ITO__TS_BLOCKED:
        n += (size_t)snprintf(line + n, sizeof line - n, " ");
        if (n < sizeof line)
            n += describe_wait(line + n, sizeof line - n, t);
        parked = true;
        break;
    case ITO__TS_SUSPENDED:
        n += (size_t)snprintf(line + n, sizeof line - n, " suspended (ito_suspend)");
        parked = t->started;
        break;
    default:
        n += (size_t)snprintf(line + n, sizeof line - n, " exited");
        break;
    }
    if (n > sizeof line - 3)
        n = sizeof line - 3;
    line[n++] = parked ? ':' : '.';
    line[n++] = '\n';
    say(fd, line, n);
    if (!parked)
        return;
    /* Acquire pairs with context.S's store of the saved stack pointer (the
     * saved frame below it is complete). */
    void *sp = __atomic_load_n(&t->ctx.sp, __ATOMIC_ACQUIRE);
    if (!sp)
        return;
    ucontext_t uc;
    ito__arch_ctx_ucontext(sp, &uc);
    ito__bt_write(fd, &uc, false, "    ");
}

bool ito__threads_all(bool (*fn)(struct ito__thread *t, void *arg), void *arg)
{
    bool all = true;
    ito__tsan_reads_begin();
    uint32_t chunks = atomic_load_explicit(&ito__handle_nchunks, memory_order_acquire);
    for (uint32_t c = 0; c < chunks; c++) {
        struct ito__thread *ts = atomic_load_explicit(&ito__handle_chunks[c], memory_order_acquire);
        for (uint32_t i = 0; i < (1u << ITO__HANDLE_CHUNK_SHIFT); i++) {
            struct ito__thread *t = &ts[i];
            int st = ito__thread_state(t);
            /* A thread of the parent's, in the child of fork: not here. */
            if (st == ITO__TS_FREE || st == ITO__TS_EXITED || !ito__thread_is_here(t))
                continue;
            if (!(all = fn(t, arg)))
                goto out;
        }
    }
out:
    ito__tsan_reads_end();
    return all;
}

struct dump_args {
    int fd;
    int count;
};

static bool dump_one(struct ito__thread *t, void *arg)
{
    struct dump_args *d = arg;
    ito__dump_thread(d->fd, t);
    d->count++;
    return true;
}

int ito__dump_threads(int fd)
{
    struct dump_args d = { fd, 0 };
    ito__threads_all(dump_one, &d);
    return d.count;
}
