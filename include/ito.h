/* SPDX-License-Identifier: MIT */
/*
 * ito — user-level threads for Linux multicore machines.
 *
 * This header is the whole public API. Threads cost about a function call to
 * create, switch and synchronize; they run in parallel on virtual processors
 * (vprocs), one per CPU the process may use, each carried by a kernel thread
 * (an activation). Blocking operations park the calling ito thread and let
 * its vproc run another one; they never block the vproc.
 *
 * Conventions
 *   - Actions return 0 or an errno value (like pthreads); they never set errno.
 *   - Every function says whether it MAY SWITCH (the calling ito thread may be
 *     parked and resumed later, possibly on another vproc and kernel thread),
 *     whether a FOREIGN kernel thread (one that ito did not create, e.g. a
 *     pthread) may call it, and whether it is ASYNC-SIGNAL-SAFE. Unless said
 *     otherwise: foreign threads may call it, and it is not signal-safe.
 *   - The first call into ito initializes it with defaults and environment
 *     variables (see ito_init). The kernel thread that initializes ito becomes
 *     an ito thread itself when it is the process's main thread, so main can
 *     spawn and join with no wrapper.
 *   - Citations such as [SA §4.1] name the works ito is built on and a
 *     section of each (docs/papers.md).
 *
 * Thread-local storage and errno
 *   errno belongs to the ito thread: ito saves it when the thread switches
 *   out and restores it, in the errno of whichever kernel thread runs the
 *   thread next, when it switches in (also after a migration). But errno is
 *   itself thread-local storage of the kernel thread, and glibc declares its
 *   address function const: within one function the compiler may compute
 *   errno's address once and reuse it after a call that may switch — if the
 *   thread migrated meanwhile, that reads the other kernel thread's errno.
 *   So read errno right after the call that set it, before any call that may
 *   switch (as one does anyway, since most calls may change errno).
 *   A C `__thread` / `thread_local` variable likewise belongs to the kernel
 *   thread that happens to run the ito thread: after a call that may switch,
 *   the same ito thread may see another kernel thread's copy. Use keys
 *   (ito_key_create) or ito_set_data for per-thread data. And do not hold a
 *   C-library lock (flockfile, a FILE being written) across a call that may
 *   switch: those locks record the kernel thread.
 *
 * Time slices and blocking
 *   A thread keeps its vproc until it calls something that may switch or
 *   until its time slice ends: a thread that computes without calling ito is
 *   switched out after ITO_TIMESLICE_US of CPU time (10 ms by default; 0
 *   turns slicing off; in whole ticks of the kernel, which looks at CPU-time
 *   timers only then: at most one slice where it is two ticks or more), at
 *   a safe point — a slice that ends inside ito's own
 *   critical sections is recovered when the section ends, one that ends in
 *   the C library waits for the next tick (but in a memory or string
 *   function such as memcpy, memset or strlen that the program called
 *   itself, where it ends at once) — with its registers (vector
 *   registers included) and errno, and may resume on another vproc. So a
 *   thread may change kernel threads between any two of its own
 *   instructions, not only at calls that may switch: the rules above about
 *   __thread variables and C-library locks hold across long computations
 *   too. ito's I/O calls (ito/io.h) and ito_sleep_ns park only the thread.
 *   A system call bracketed by ito_blocking_begin/end hands its vproc to a
 *   spare kernel thread once it has stayed in the kernel for about 20 µs
 *   while other threads could run; an unbracketed one (a plain read, sleep,
 *   a page fault) is found by ito's monitor and its vproc handed on 1-2 ms
 *   into the call. ITO_ACTIVATIONS=0 turns both hand-offs and time slices
 *   off. docs/guide.md says more.
 *
 * Running out of memory
 *   ito_spawn fails with EAGAIN when no stack or descriptor can be had; a
 *   thread spawned is promised its stack. Nothing else that may switch needs
 *   memory: a wait, a timed wait, a sleep, a lock, a wake-up never fails or
 *   aborts for lack of it (their timers and queues fall back to lists through
 *   the threads themselves).
 *
 * C-library calls that ito defines
 *   libito.so defines four functions of the C library under their own names:
 *   posix_spawn, posix_spawnp, system and popen. In a dynamically linked
 *   program they take precedence over the C library's and pass each call on
 *   to the next definition (the C library's, or a sanitizer's wrapper of it)
 *   with the same arguments, result and errno. Why: a new process inherits
 *   the CPU affinity of the kernel thread that starts it, and an ito thread
 *   runs on a kernel thread pinned to its vproc's one CPU (ITO_PIN), so a
 *   child started from an ito thread would be confined to that CPU for life.
 *   What ito adds, when the caller is an ito thread on a pinned vproc: for
 *   the duration of the call the calling kernel thread gets the affinity the
 *   process had before ito pinned anything (so the child inherits that), and
 *   it is pinned to its vproc's CPU again before the call returns; the call
 *   runs as if bracketed by ito_blocking_begin/end, so while system() waits
 *   for its child the vproc runs other threads. Called from a foreign kernel
 *   thread, before ito is initialized, or with ITO_PIN=0, the call is passed
 *   on untouched. The child's scheduling policy is still the caller's
 *   (SCHED_IDLE where a process of higher priority shares the caller's
 *   processor: see "Sharing the processors" below). A fully statically
 *   linked program has no next definition to pass the call on to: the
 *   first such call stops the process with a message.
 *   fork is not redefined; ito's pthread_atfork handler makes the child a
 *   working ito process whose one thread is the one that forked (as POSIX
 *   threads do). That thread keeps its handle, errno, keys and priority and
 *   is the child's main thread from then on (its ito_exit ends the child
 *   once the child's other threads have exited). The parent's other threads
 *   do not exist in the child: their handles give ESRCH, and waking one
 *   (through an object it waited on in the parent) wakes the next waiter
 *   instead. The child's one thread gets the process's affinity and the
 *   scheduling policy it had before ito changed them; the child's other
 *   vprocs, the monitor and the allocator's agent start at its first ito
 *   call, so a child that only calls exec or _exit starts no thread. ito
 *   registers its fork handlers when the library is loaded: the program's
 *   run after ito's in the child, on a working runtime. A fork made while
 *   another thread starts ito gives a child where ito's calls fail with
 *   EAGAIN.
 */
#ifndef ITO_H
#define ITO_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <time.h>

#ifdef __cplusplus
extern "C" {
#endif

#if defined(__GNUC__)
#define ITO_API __attribute__((visibility("default")))
#else
#define ITO_API
#endif

#if defined(__cplusplus)
#define ITO_NORETURN [[noreturn]]
#else
#define ITO_NORETURN _Noreturn
#endif

#define ITO_VERSION_MAJOR 0
#define ITO_VERSION_MINOR 1
#define ITO_VERSION_PATCH 0

/* ------------------------------------------------------------------------ */
/* Initialization                                                            */
/* ------------------------------------------------------------------------ */

/*
 * Runtime configuration. Start from ITO_CONFIG_INIT; a field left at its
 * "default" value takes the environment variable named beside it, or else the
 * built-in default. A malformed or out-of-range environment variable is
 * reported on stderr and the default is used instead.
 */
typedef struct ito_config {
    int vprocs;            /* 0: ITO_VPROCS, else the CPUs this process may use
                              (affinity mask, cgroup CPU quota). */
    size_t stack_size;     /* 0: ITO_STACK_SIZE, else ITO_STACK_DEFAULT. */
    const char *policy;    /* NULL: ITO_POLICY, else "ws". Built in: "ws", "fifo",
                              "prio", "prio-shared", "affinity" (docs/guide.md);
                              or one registered with ito_policy_register. */
    int idle_spin_us;      /* -1: ITO_IDLE_SPIN_US, else 50. How long an idle vproc
                              looks for work before it sleeps (0: sleep at once). */
    int pin;               /* -1: ITO_PIN, else 1. Pin each activation to one CPU. */
} ito_config_t;

#define ITO_CONFIG_INIT { 0, 0, NULL, -1, -1 }

/*
 * Initialize ito explicitly. Optional: the first ito call initializes it with
 * ITO_CONFIG_INIT. cfg may be NULL. The calling kernel thread becomes an ito
 * thread (running on vproc 0) and must not exit while ito is in use (returning
 * from main, which ends the process, is fine).
 * Returns 0; EBUSY if ito was already initialized (0 if cfg is NULL); EINVAL
 * for a bad field or an unknown policy; EAGAIN/ENOMEM if resources are lacking.
 * Not signal-safe; call it before creating ito threads.
 */
ITO_API int ito_init(const ito_config_t *cfg);

/* Number of vprocs; initializes ito if needed. */
ITO_API int ito_vproc_count(void);

/* Index of the vproc running the caller, or -1 for a foreign kernel thread;
 * initializes ito if needed (so main gets vproc 0). */
ITO_API int ito_vproc_self(void);

/* Name of the scheduling policy in use (initializes ito if needed). */
ITO_API const char *ito_policy_name(void);

/* CLOCK_MONOTONIC in nanoseconds. Async-signal-safe. */
ITO_API uint64_t ito_now_ns(void);

/* ------------------------------------------------------------------------ */
/* Threads                                                                   */
/* ------------------------------------------------------------------------ */

/*
 * A thread handle. Handles are checked: using the handle of a thread that has
 * been joined (or has exited while detached), or a forged one, gives ESRCH.
 * The zero handle ITO_THREAD_NULL never names a thread.
 */
typedef struct ito_thread { uint64_t id; } ito_thread_t;

#define ITO_THREAD_NULL ((ito_thread_t){ 0 })

static inline bool ito_thread_equal(ito_thread_t a, ito_thread_t b) { return a.id == b.id; }

/* Priorities: 0 (least urgent) .. ITO_PRIO_MAX (most urgent). The "prio"
 * and "prio-shared" policies honour them: the more urgent thread runs first,
 * a thread made ready takes the vproc of a less urgent one at once, and a
 * thread's share of the CPU grows linearly with its priority (see
 * docs/guide.md). "ws", "fifo" and "affinity" record them only. A change of
 * priority takes effect the next time the thread is queued. */
#define ITO_PRIO_MAX 31
#define ITO_PRIO_DEFAULT 15

#define ITO_STACK_MIN (16u * 1024)               /* smallest stack accepted */
#define ITO_STACK_MAX ((size_t)1 << 30)          /* largest stack accepted (1 GiB) */
#define ITO_STACK_DEFAULT ((size_t)256 * 1024)   /* 256 KiB, address space only:
                                                    pages are touched on demand */
#define ITO_NAME_MAX 32                          /* bytes, including the NUL */

/* Thread attributes. The fields are private: use the functions below. */
typedef struct ito_attr {
    uint32_t magic_;
    uint32_t flags_;
    size_t stack_size_;
    int priority_;
    int vproc_;
    char name_[ITO_NAME_MAX];
    void *group_;
} ito_attr_t;

/* Set defaults: runtime's stack size, ITO_PRIO_DEFAULT, joinable, no name,
 * no preferred vproc. Returns 0, or EINVAL if attr is NULL. */
ITO_API int ito_attr_init(ito_attr_t *attr);
/* Stack size in bytes, rounded up to whole pages (the getter returns the
 * rounded value): EINVAL outside [ITO_STACK_MIN, ITO_STACK_MAX]. A thread's
 * stack holds at least this much: a size below the runtime's gets a stack of
 * the runtime's size; a thread joined before it starts may run on its
 * joiner's stack, where more may be available (not one that asked for more
 * than the runtime's size: its stack is mapped at its spawn). */
ITO_API int ito_attr_set_stack_size(ito_attr_t *attr, size_t bytes);
ITO_API int ito_attr_get_stack_size(const ito_attr_t *attr, size_t *bytes);
/* EINVAL outside [0, ITO_PRIO_MAX]. */
ITO_API int ito_attr_set_priority(ito_attr_t *attr, int prio);
ITO_API int ito_attr_get_priority(const ito_attr_t *attr, int *prio);
/* A detached thread frees itself when it exits and cannot be joined. */
ITO_API int ito_attr_set_detached(ito_attr_t *attr, bool detached);
ITO_API int ito_attr_get_detached(const ito_attr_t *attr, bool *detached);
/* A name for debugging (copied). ERANGE if it needs more than ITO_NAME_MAX bytes. */
ITO_API int ito_attr_set_name(ito_attr_t *attr, const char *name);
ITO_API int ito_attr_get_name(const ito_attr_t *attr, char *buf, size_t len);
/* Preferred vproc, or -1 for none. The thread is handed to that vproc when it
 * starts and whenever it is made ready; the policy may still run it elsewhere.
 * "ws" and "prio" let an idle vproc take it while its vproc is busy ("prio"
 * may also move it to a vproc running a less urgent thread); "affinity" lets
 * another vproc take it only after it has waited ITO_AFFINITY_IDLE_US;
 * "fifo" and "prio-shared" keep one queue for all vprocs, so it runs on
 * whichever vproc takes it first. EINVAL if < -1; at spawn, EINVAL if
 * >= ito_vproc_count(). */
ITO_API int ito_attr_set_vproc(ito_attr_t *attr, int vproc);
ITO_API int ito_attr_get_vproc(const ito_attr_t *attr, int *vproc);
/* Group the thread starts in (ito_group_create), or NULL for none. EINVAL if
 * g is neither NULL nor a live group; at spawn, EINVAL if g was destroyed. */
struct ito_group;
ITO_API int ito_attr_set_group(ito_attr_t *attr, struct ito_group *g);
ITO_API int ito_attr_get_group(const ito_attr_t *attr, struct ito_group **g);

/*
 * Create a thread running fn(arg). attr may be NULL. A stack is set aside
 * for the new thread now (address space, mapped if the pools run short;
 * pages are touched as it runs), and handed to it when it first runs, which
 * therefore cannot run out of memory. *t receives the handle; t may be NULL
 * only for a detached thread.
 * Returns 0; EINVAL for a bad argument or attribute: an uninitialized attr,
 * or a field of ito_attr_t written directly with a value its setter refuses
 * (a stack size outside [ITO_STACK_MIN, ITO_STACK_MAX], a priority outside
 * [0, ITO_PRIO_MAX], a vproc below -1 or >= ito_vproc_count(), a name without
 * its NUL, unknown flags); EAGAIN if resources are lacking: no stack can be
 * mapped (RLIMIT_AS, vm.max_map_count, memory) or no descriptor allocated.
 * The process goes on: threads that exit give their stacks back for the next
 * spawn. Does not switch, but is not async-signal-safe either: from a signal
 * handler that interrupted the thread inside ito it aborts with a message,
 * as the calls that may switch do.
 */
ITO_API int ito_spawn(ito_thread_t *t, const ito_attr_t *attr, void *(*fn)(void *), void *arg);

/*
 * Wait for t to exit and free it; *result (if result is not NULL) receives its
 * return value or ito_exit argument. MAY SWITCH (a foreign kernel thread blocks
 * in the kernel instead). Returns 0; ESRCH for a stale or forged handle;
 * EDEADLK for t == ito_self(); EINVAL if t is detached, a future, or already
 * being joined.
 */
ITO_API int ito_join(ito_thread_t t, void **result);

/* Let t free itself when it exits. Returns 0; ESRCH; EINVAL if t is already
 * detached, a future, or being joined. */
ITO_API int ito_detach(ito_thread_t t);

/* End the calling ito thread with a result. Thread-specific data destructors
 * run first. C++ frames are not unwound. In main, the process goes on until
 * every other ito thread has exited, then exits with status 0. Aborts with a
 * message when called from a foreign kernel thread. */
ITO_API ITO_NORETURN void ito_exit(void *result);

/* Let other ready threads run. MAY SWITCH. From a foreign thread: sched_yield().
 * Like every call that may switch, not async-signal-safe: from a signal
 * handler that interrupted the thread inside ito it aborts with a message. */
ITO_API void ito_yield(void);

/* The calling thread, or ITO_THREAD_NULL from a foreign kernel thread. */
ITO_API ito_thread_t ito_self(void);

/*
 * Stop t until ito_resume(t). Suspending oneself switches away and returns 0
 * after the resume. For another thread: when ito_suspend returns, t is not
 * running user code; if it was running on another vproc, ito_suspend waits
 * until t reaches a switch point (a call that may switch). A thread blocked in
 * a wait stays blocked; when the wait ends it stops instead of running.
 * Suspensions do not nest: one ito_resume undoes any number of ito_suspend.
 * MAY SWITCH. Returns 0; ESRCH for a stale handle or an exited thread.
 */
ITO_API int ito_suspend(ito_thread_t t);

/* Let a suspended thread run again. Returns 0 (also if t is not suspended);
 * ESRCH for a stale handle or an exited thread. Does not switch. */
ITO_API int ito_resume(ito_thread_t t);

/*
 * Restart a suspended thread with a new entry: its current computation is
 * discarded (what it held stays held; its stack frames are dropped without
 * unwinding) and, once resumed, it runs fn(arg) from the start. This is
 * Scheme's thread-set-continuation!. Returns 0; ESRCH for a stale handle or
 * an exited thread; EINVAL if t is not suspended or is the caller, or fn is
 * NULL; EBUSY if t has been asked to suspend but has not stopped yet (still
 * running, or still blocked in a wait); EAGAIN if t ran on a stack not ito's
 * (main's) and no stack of ito's can be mapped for it.
 */
ITO_API int ito_set_entry(ito_thread_t t, void *(*fn)(void *), void *arg);

/* Priority of t in [0, ITO_PRIO_MAX]. EINVAL out of range; ESRCH. */
ITO_API int ito_set_priority(ito_thread_t t, int prio);
ITO_API int ito_get_priority(ito_thread_t t, int *prio);

/* One word of thread data (Scheme's thread-data / thread-set-data!). ESRCH for
 * a stale handle; ito_get_data returns NULL then. */
ITO_API int ito_set_data(ito_thread_t t, void *data);
ITO_API void *ito_get_data(ito_thread_t t);

/* Debugging name of t. ERANGE if it does not fit (ITO_NAME_MAX or len). */
ITO_API int ito_set_name(ito_thread_t t, const char *name);
ITO_API int ito_get_name(ito_thread_t t, char *buf, size_t len);

/* ------------------------------------------------------------------------ */
/* Thread-specific data keys                                                 */
/* ------------------------------------------------------------------------ */

typedef uint32_t ito_key_t;

#define ITO_KEYS_MAX 1024
#define ITO_DESTRUCTOR_ITERATIONS 4

/* Create a key; dtor (may be NULL) runs at thread exit on each non-NULL value,
 * up to ITO_DESTRUCTOR_ITERATIONS rounds. EAGAIN when ITO_KEYS_MAX keys exist. */
ITO_API int ito_key_create(ito_key_t *key, void (*dtor)(void *));
/* Delete a key (no destructor runs). EINVAL for an unknown key. */
ITO_API int ito_key_delete(ito_key_t key);
/* EINVAL for an unknown key; ENOMEM; EPERM from a foreign kernel thread.
 * Initializes ito if needed (main's first call makes main an ito thread). */
ITO_API int ito_setspecific(ito_key_t key, const void *value);
/* NULL for an unknown key, an unset value or a foreign kernel thread.
 * Initializes ito if needed. */
ITO_API void *ito_getspecific(ito_key_t key);

/* ------------------------------------------------------------------------ */
/* Synchronization. All of it parks the calling ito thread, never its vproc;  */
/* foreign kernel threads may use it too (they block in the kernel). Objects  */
/* are plain memory: an all-zero object equals its _INIT value. Using an      */
/* object after its _destroy gives EINVAL until it is initialized again.      */
/* Absolute times are CLOCK_MONOTONIC; a malformed timespec gives EINVAL.     */
/* ------------------------------------------------------------------------ */

/* Mutex: error-checking (EDEADLK on relock by the owner, EPERM on unlock by a
 * non-owner). Not recursive. */
typedef struct ito_mutex { uintptr_t opaque_[4]; } ito_mutex_t;
#define ITO_MUTEX_INIT { { 0, 0, 0, 0 } }

ITO_API int ito_mutex_init(ito_mutex_t *m);
/* EBUSY if locked or waited on. Later use of a destroyed mutex gives EINVAL
 * until it is initialized again. */
ITO_API int ito_mutex_destroy(ito_mutex_t *m);
ITO_API int ito_mutex_lock(ito_mutex_t *m);             /* MAY SWITCH; EDEADLK, EINVAL */
ITO_API int ito_mutex_trylock(ito_mutex_t *m);          /* EBUSY if held (by anyone) */
ITO_API int ito_mutex_timedlock(ito_mutex_t *m, const struct timespec *abstime); /* MAY SWITCH; ETIMEDOUT, EDEADLK */
ITO_API int ito_mutex_unlock(ito_mutex_t *m);           /* EPERM if not the owner */

/* Condition variable. */
typedef struct ito_cond { uintptr_t opaque_[4]; } ito_cond_t;
#define ITO_COND_INIT { { 0, 0, 0, 0 } }

ITO_API int ito_cond_init(ito_cond_t *c);
ITO_API int ito_cond_destroy(ito_cond_t *c);            /* EBUSY if waited on */
/* MAY SWITCH. EPERM if m is not held by the caller. Spurious wake-ups are
 * possible, as with pthreads: wait in a loop. */
ITO_API int ito_cond_wait(ito_cond_t *c, ito_mutex_t *m);
ITO_API int ito_cond_timedwait(ito_cond_t *c, ito_mutex_t *m, const struct timespec *abstime);
ITO_API int ito_cond_signal(ito_cond_t *c);
ITO_API int ito_cond_broadcast(ito_cond_t *c);

/* Reader-writer lock; writers are preferred (a waiting writer stops new readers). */
typedef struct ito_rwlock { uintptr_t opaque_[8]; } ito_rwlock_t;
#define ITO_RWLOCK_INIT { { 0, 0, 0, 0, 0, 0, 0, 0 } }

ITO_API int ito_rwlock_init(ito_rwlock_t *l);
ITO_API int ito_rwlock_destroy(ito_rwlock_t *l);        /* EBUSY if held or waited on */
ITO_API int ito_rwlock_rdlock(ito_rwlock_t *l);         /* MAY SWITCH; EAGAIN at 2^31-1 readers */
ITO_API int ito_rwlock_tryrdlock(ito_rwlock_t *l);      /* EBUSY; EDEADLK if the caller writes */
ITO_API int ito_rwlock_wrlock(ito_rwlock_t *l);         /* MAY SWITCH; EDEADLK if the caller writes */
ITO_API int ito_rwlock_trywrlock(ito_rwlock_t *l);      /* EBUSY; EDEADLK if the caller writes */
/* EPERM if the lock is not held at all. The lock does not record which
 * threads read: an unlock by a thread that does not read, while others do,
 * releases one of their holds — as with pthreads, that is the caller's bug. */
ITO_API int ito_rwlock_unlock(ito_rwlock_t *l);

/* Barrier for `count` threads. */
typedef struct ito_barrier { uintptr_t opaque_[8]; } ito_barrier_t;
#define ITO_BARRIER_SERIAL (-1)

ITO_API int ito_barrier_init(ito_barrier_t *b, unsigned count);   /* EINVAL if count == 0 */
ITO_API int ito_barrier_destroy(ito_barrier_t *b);                /* EBUSY if waited on */
/* MAY SWITCH. Returns ITO_BARRIER_SERIAL in exactly one of the threads of each
 * round, 0 in the others, or an errno value (EINVAL). */
ITO_API int ito_barrier_wait(ito_barrier_t *b);

/* Counting semaphore. */
typedef struct ito_sem { uintptr_t opaque_[4]; } ito_sem_t;
#define ITO_SEM_VALUE_MAX 0x7fffffffu

ITO_API int ito_sem_init(ito_sem_t *s, unsigned value);           /* EINVAL > ITO_SEM_VALUE_MAX */
ITO_API int ito_sem_destroy(ito_sem_t *s);                        /* EBUSY if waited on */
ITO_API int ito_sem_wait(ito_sem_t *s);                           /* MAY SWITCH */
ITO_API int ito_sem_trywait(ito_sem_t *s);                        /* EAGAIN if zero */
ITO_API int ito_sem_timedwait(ito_sem_t *s, const struct timespec *abstime); /* ETIMEDOUT */
ITO_API int ito_sem_post(ito_sem_t *s);                           /* EOVERFLOW */
ITO_API int ito_sem_get_value(ito_sem_t *s, unsigned *value);

/* One-time initialization. */
typedef struct ito_once { uintptr_t opaque_[4]; } ito_once_t;
#define ITO_ONCE_INIT { { 0, 0, 0, 0 } }

/* Run fn exactly once across all callers; the others wait for it to finish.
 * MAY SWITCH. EINVAL for NULL arguments; EDEADLK if fn calls ito_once on the
 * same object. */
ITO_API int ito_once(ito_once_t *once, void (*fn)(void));

/* ------------------------------------------------------------------------ */
/* Thread groups [SKY §2.2]                                                   */
/* ------------------------------------------------------------------------ */

/*
 * Threads that share data belong together: the "affinity" policy runs all the
 * threads of a group on one vproc, so their shared data lives in one cache
 * and its lines are not bounced between cores (docs/guide.md). Other
 * policies keep the membership but ignore it.
 *
 * Under "affinity" the threads of a group never run at the same time: a
 * group's threads are only run by the one vproc that holds the group, and
 * the group moves to another vproc only while none of them runs (and never
 * with ITO_GROUP_PINNED). Data that only a group's threads touch therefore
 * needs no atomic operations or fences between them; a read-modify-write
 * that must not be interleaved still needs a lock if the time slice may end
 * inside it (ITO_TIMESLICE_US), or a thread may switch inside it. A thread
 * joining a group (ito_group_add of another thread) is held to this from the
 * next time it is scheduled; a thread adding itself continues on the group's
 * vproc when the call returns. One exception: a thread that blocks in the
 * kernel without ito_blocking_begin (an unbracketed system call, a page
 * fault on a slow file mapping) has its vproc handed on meanwhile, and when
 * the call returns it runs on, alone, until its next ito call — alongside
 * the thread that got the vproc. Memory passed to a system call is written
 * by the kernel while other members run.
 *
 * A thread leaves its group when it exits. The storage belongs to the
 * caller and must stay valid until ito_group_destroy.
 */
typedef struct ito_group { uintptr_t opaque_[8]; } ito_group_t;

/* Never moved by load balancing; only when the allocator takes its vproc's
 * processor away does it move, to a vproc that still has one. */
#define ITO_GROUP_PINNED 1u

/* EINVAL if g is NULL or flags holds an unknown bit. */
ITO_API int ito_group_create(ito_group_t *g, unsigned flags);
/* EBUSY while a live thread belongs to it; EINVAL if g is not a live group. */
ITO_API int ito_group_destroy(ito_group_t *g);
/* Thread t joins g, leaving any group it was in. MAY SWITCH (when t is the
 * caller: it moves to g's vproc). EINVAL: g not a live group; ESRCH: t is
 * stale or has exited. */
ITO_API int ito_group_add(ito_group_t *g, ito_thread_t t);
/* Thread t leaves its group. EINVAL if it is in none; ESRCH as above. */
ITO_API int ito_group_remove(ito_thread_t t);
/* *g receives t's group, or NULL. EINVAL if g is NULL; ESRCH as above. */
ITO_API int ito_group_get(ito_thread_t t, ito_group_t **g);

/* Sleep for at least ns nanoseconds. MAY SWITCH (nanosleep for a foreign
 * kernel thread). Returns 0. */
ITO_API int ito_sleep_ns(uint64_t ns);

/* ------------------------------------------------------------------------ */
/* Blocking system calls                                                      */
/* ------------------------------------------------------------------------ */

/*
 * Bracket a call that may block in the kernel (a read() on a slow device, a
 * library's own I/O, waitpid, flock...) so that it does not take the vproc
 * with it:
 *
 *     ito_blocking_begin();
 *     n = read(fd, buf, len);
 *     ito_blocking_end();
 *
 * or n = ITO_BLOCKING(read(fd, buf, len)). Entering costs a few plain stores
 * (no atomic instruction, no system call while calls keep coming). If the
 * call is still in the kernel after about 20 µs while other threads could use
 * the vproc, ito's monitor hands the vproc to a spare kernel thread (an
 * activation), so the other threads run on. When the call returns, the
 * thread goes back to a ready queue and resumes — errno intact — on whatever
 * kernel thread carries its vproc then (so do not keep __thread pointers or
 * C-library locks across the bracket). Between the two calls make only the
 * system call: an ito call that may switch there aborts with a message.
 * Brackets nest (the outermost counts). Foreign kernel threads may call both
 * (they do nothing). With ITO_ACTIVATIONS=0 they do nothing either: a
 * blocked call then holds its vproc. The number of kernel threads is capped
 * by ITO_MAX_ACTIVATIONS (default max(1024, 2 x vprocs)); at the cap, blocked
 * calls keep their vprocs and a one-time warning says so. ito_blocking_end
 * MAY SWITCH; it aborts if no bracket is open.
 */
ITO_API void ito_blocking_begin(void);
ITO_API void ito_blocking_end(void);

#if defined(__GNUC__)
#define ITO_BLOCKING(call)                                                                         \
    __extension__({                                                                                \
        ito_blocking_begin();                                                                      \
        __typeof__(call) ito_blocking_result_ = (call);                                            \
        ito_blocking_end();                                                                        \
        ito_blocking_result_;                                                                      \
    })
#endif

/* ------------------------------------------------------------------------ */
/* Futures [STH appendix A]                                                  */
/* ------------------------------------------------------------------------ */

/* A future is a thread whose result any number of threads can touch. Its
 * handle is checked like a thread handle. */
typedef struct ito_future { uint64_t id; } ito_future_t;

/* Start computing fn(arg) in a new thread (attr as for ito_spawn; its detached
 * flag is ignored). Returns 0, EINVAL, EAGAIN. Does not switch. */
ITO_API int ito_future_spawn(ito_future_t *f, const ito_attr_t *attr, void *(*fn)(void *), void *arg);
/* Wait until the value is computed and store it in *value (may be NULL).
 * MAY SWITCH. Returns 0; ESRCH for a destroyed or forged future; EDEADLK when
 * the future's own thread touches it. */
ITO_API int ito_future_touch(ito_future_t f, void **value);
/* True once the value is computed (false for a stale handle). Does not switch. */
ITO_API bool ito_future_ready(ito_future_t f);
/* Release the future: its memory is freed once the computation ends (it is not
 * cancelled). Touches already waiting still get the value; later ones get
 * ESRCH. Returns 0 or ESRCH. */
ITO_API int ito_future_destroy(ito_future_t f);

/* ------------------------------------------------------------------------ */
/* Events [SA Table 2, §1.2]                                                 */
/* ------------------------------------------------------------------------ */

/* What the kernel would tell the thread system by upcall [SA §3.1], as ito
 * learns it on Linux. */
typedef enum ito_event_kind {
    ITO_EVENT_VPROC_ADDED = 1,  /* a vproc started running threads (at initialization, and when
                                   the cross-process allocator gives its processor back) */
    ITO_EVENT_BLOCKED = 2,      /* `thread` blocked in the kernel and its vproc was handed to a
                                   spare activation (a long call inside ito_blocking_begin/end, or
                                   a kernel thread asleep outside any: ito_stats_t.stalls) */
    ITO_EVENT_UNBLOCKED = 3,    /* that call returned: `thread` is ready again, on `vproc` */
    ITO_EVENT_PREEMPTED = 4,    /* `thread` used up its time slice and is switched out */
    ITO_EVENT_VPROC_REMOVED = 5, /* the allocator gave the vproc's processor to another process:
                                   it runs no threads until VPROC_ADDED (reported on it, last) */
} ito_event_kind_t;

typedef struct ito_event {
    ito_event_kind_t kind;
    int vproc;              /* the vproc the event concerns; the hook runs on it */
    ito_thread_t thread;    /* the thread it concerns (ITO_THREAD_NULL for VPROC_ADDED) */
    uint64_t time_ns;       /* ito_now_ns() when it was reported */
} ito_event_t;

typedef void (*ito_event_hook_t)(const ito_event_t *event, void *arg);

/* Install `hook` (NULL: none) to be called with arg for every event from now
 * on; it replaces the previous one. Call it before ito_init to see the
 * VPROC_ADDED events of initialization. Returns 0 or ENOMEM. Does not switch; any
 * kernel thread may call it; not async-signal-safe.
 *
 * The hook runs on the vproc the event concerns, in ito's scheduler (inside
 * one of its critical sections, not as any ito thread), between two threads.
 * It must be short and must not block or switch: it may read and write its
 * own data (atomics for data other vprocs use), call ito_now_ns, ito_vproc_self,
 * ito_self, ito_spawn, ito_resume, ito_suspend of another thread, unlock or
 * post (wake-ups), and the C library (a preemption is never reported from
 * inside the C library). A call that may switch aborts with a message. */
ITO_API int ito_event_hook_set(ito_event_hook_t hook, void *arg);

/* ------------------------------------------------------------------------ */
/* Statistics                                                                */
/* ------------------------------------------------------------------------ */

/* Counters summed over all vprocs since initialization (approximate while
 * threads run). */
typedef struct ito_stats {
    uint64_t spawns;        /* threads created */
    uint64_t switches;      /* context switches between threads */
    uint64_t decisions;     /* scheduling decisions (policy picks that found a thread) */
    uint64_t steals;        /* threads taken from another vproc */
    uint64_t idle_sleeps;   /* times a vproc went to sleep for lack of work */
    uint64_t wakeups;       /* times a sleeping vproc was woken */
    uint64_t preemptions;   /* time slices that ended in the thread's own code, and threads made to give
                               way there to one that a due timer or a wake-up from outside made ready */
    uint64_t recoveries;    /* time slices that ended inside ito: it yielded when ito was done */
    uint64_t handoffs;      /* vprocs handed to a spare kernel thread: a bracketed call blocked */
    uint64_t stalls;        /* vprocs handed on because their kernel thread slept outside any bracket */
    uint64_t revocations;   /* processors taken away by the cross-process allocator */
    uint64_t displacements; /* running threads that gave way to a more urgent one (ito_policy_preempt) */
    /* With ITO_STATS_CYCLES=1 (0 otherwise): time stamp counter cycles spent
     * in the policy's pick, summed over all decisions — decision_cycles /
     * decisions is the mean cost of one scheduling decision. */
    uint64_t decision_cycles;
} ito_stats_t;

ITO_API int ito_stats_get(ito_stats_t *stats);

/* ------------------------------------------------------------------------ */
/* Sharing the processors with other ito processes                          */
/* ------------------------------------------------------------------------ */

/* The ito processes of one user divide the machine's processors among
 * themselves [SA §4.1]: equal shares among the processes of the highest
 * priority that can use them, the rest downwards; a processor is
 * time-shared only where the count does not divide; each process holds at
 * least one (a lower-priority process's kernel thread on a processor it
 * shares with a higher one runs as SCHED_IDLE where it may). A process asks
 * for every vproc it has while threads wait for one (a time slice ends or a
 * thread yields while others wait, or waits for a busy vproc add up), and
 * gives back a vproc that has slept for 2 ms. When a vproc's processor goes
 * to another process, its kernel thread is moved off that processor at once
 * and the vproc stops at its thread's next safe point; its threads run on
 * the others (ITO_EVENT_VPROC_REMOVED). vprocs follow their processors
 * (pinned, unless ITO_PIN=0). A process that dies loses its processors
 * within about a second.
 *
 * ITO_ALLOCATOR=0 leaves the process out: it runs a vproc per CPU, as if
 * alone. A process that asked for more vprocs than it has CPUs stays out
 * too. ITO_ALLOC_DOMAIN=name: share only with the processes of that
 * domain. ITO_PRIORITY (ITO_ALLOC_PRIORITY_MIN..MAX, default 0): the
 * process's priority; a value outside the range is reported on stderr and
 * 0 is used. ito-ctl shows the table. */

/* Process priorities for the allocation (ITO_PRIORITY, ito_alloc_set_priority,
 * ito_alloc_info_t.priority): higher is served first. */
#define ITO_ALLOC_PRIORITY_MIN (-20)
#define ITO_ALLOC_PRIORITY_MAX 20

typedef struct ito_alloc_info {
    int enabled;            /* 1: this process takes part */
    int vprocs;             /* its vprocs */
    int held;               /* of them, those that hold a processor now */
    int want;               /* processors it asked for last */
    int priority;           /* its priority */
    int processes;          /* ito processes sharing the machine with it (itself included) */
    uint64_t reallocations; /* divisions that changed some process's processors, since the table began */
    uint64_t hints;         /* hints this process posted to the table (joining included) */
    uint64_t hinted_ns;     /* when it posted the last one (CLOCK_MONOTONIC, ns); 0: never */
} ito_alloc_info_t;

/* Fill *info. Returns 0, or EINVAL (info NULL). Any kernel thread; does not
 * switch. */
ITO_API int ito_alloc_info(ito_alloc_info_t *info);
/* Set this process's priority, ITO_ALLOC_PRIORITY_MIN..ITO_ALLOC_PRIORITY_MAX
 * (higher is served first); it replaces ITO_PRIORITY's. Takes effect within
 * microseconds. Returns 0; EINVAL outside the range; initializes ito if
 * needed (and returns its error if that fails). Any kernel thread; does not
 * switch. */
ITO_API int ito_alloc_set_priority(int priority);

#ifdef __cplusplus
}
#endif

#include <ito/io.h>

#endif /* ITO_H */
