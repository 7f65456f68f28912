/* SPDX-License-Identifier: MIT */
/*
 * A child started by posix_spawn, system or popen gets the process's CPUs.
 *
 * Problem. A new process inherits the CPU affinity of the kernel thread
 * that started it. In an ito process that is a carrier, pinned to the one
 * CPU of its vproc (vproc.c): a server that runs `system("make -j8")` from
 * an ito thread would confine the whole build to one CPU, for life. fork()
 * is mended in the child by a fork handler (fork.c); posix_spawn runs no
 * fork handlers, and system and popen are built on it inside the C library.
 *
 * Approach. ito defines these four calls itself (they take precedence over
 * the C library's in a dynamically linked program) and passes each on to
 * the next definition (dlsym RTLD_NEXT: the C library's, or a sanitizer's
 * wrapper of it), with the calling kernel thread's pinning lifted for the
 * call: it gets the affinity the process had before ito pinned anything,
 * and is pinned to its vproc's CPU again before the call returns. The call
 * runs bracketed (ito_blocking_begin/end), so that a vproc whose thread
 * waits for its child in system() runs other threads meanwhile; and in a
 * critical section, so that the thread does not leave this kernel thread
 * halfway. Called from a kernel thread ito does not run, or with pinning
 * off, the calls are passed on untouched.
 *
 * Limits. A carrier that runs at the idle weight (cpushare/weight.c, a process
 * below a higher priority on a shared processor) still passes SCHED_IDLE
 * on: the agent alone knows whether it must stay so. A fully static program
 * (untried) has no next definition for dlsym to find: the first call stops
 * the process with a message saying so.
 */
#include <dlfcn.h>
#include <errno.h>
#include <spawn.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>

#include <ito.h>

#include "base/panic.h"
#include "runtime/critical.h"
#include "runtime/runtime.h"
#include "runtime/vproc.h"

/* The next definition of `name`, looked up once (relaxed: any thread that
 * looks finds the same address). */
static void *next(_Atomic(void *) *cache, const char *name)
{
    void *f = atomic_load_explicit(cache, memory_order_relaxed);
    if (!f) {
        f = dlsym(RTLD_NEXT, name);
        if (!f)
            ito__panic("cannot find the C library's %s (dlsym: %s); a program linked fully "
                       "statically cannot call it with ito", name, dlerror());
        atomic_store_explicit(cache, f, memory_order_relaxed);
    }
    return f;
}

/* Lift the calling kernel thread's pinning for a call that starts a child;
 * returns whether it did (then unpinned_end must follow). */
static bool unpinned_begin(void)
{
    if (!ito__initialized() || !ito__rt.pin || !ito__on_activation())
        return false;
    ito__critical_enter();
    if (!ito__activation_self()->vp) {
        ito__critical_exit();
        return false;
    }
    ito_blocking_begin();
    ito__cpus_restore_self();
    return true;
}

static void unpinned_end(bool lifted)
{
    if (!lifted)
        return;
    int e = errno;
    /* The vproc this kernel thread carried: its carrier still, or (if the
     * monitor handed it on meanwhile) parked as a spare until adopted,
     * which pins it anew (activation.c). */
    const struct ito__vproc *vp = ito__activation_self()->vp;
    if (vp && vp->cpu >= 0)
        ito__pin_self(vp->cpu);
    ito_blocking_end();
    ito__critical_exit();
    errno = e;
}

typedef int spawn_fn(pid_t *, const char *, const posix_spawn_file_actions_t *, const posix_spawnattr_t *,
                     char *const[], char *const[]);

/* posix_spawn and posix_spawnp: the same call but for how the file is found. */
static int spawn_via(_Atomic(void *) *real, const char *name, pid_t *pid, const char *file,
                     const posix_spawn_file_actions_t *actions, const posix_spawnattr_t *attr, char *const argv[],
                     char *const envp[])
{
    spawn_fn *f = (spawn_fn *)next(real, name);
    bool lifted = unpinned_begin();
    int r = f(pid, file, actions, attr, argv, envp);
    unpinned_end(lifted);
    return r;
}

ITO_API int posix_spawn(pid_t *pid, const char *path, const posix_spawn_file_actions_t *actions,
                        const posix_spawnattr_t *attr, char *const argv[], char *const envp[])
{
    static _Atomic(void *) real;
    return spawn_via(&real, "posix_spawn", pid, path, actions, attr, argv, envp);
}

ITO_API int posix_spawnp(pid_t *pid, const char *file, const posix_spawn_file_actions_t *actions,
                         const posix_spawnattr_t *attr, char *const argv[], char *const envp[])
{
    static _Atomic(void *) real;
    return spawn_via(&real, "posix_spawnp", pid, file, actions, attr, argv, envp);
}

ITO_API int system(const char *command)
{
    static _Atomic(void *) real;
    int (*f)(const char *) = (int (*)(const char *))next(&real, "system");
    bool lifted = unpinned_begin();
    int r = f(command);
    unpinned_end(lifted);
    return r;
}

ITO_API FILE *popen(const char *command, const char *type)
{
    static _Atomic(void *) real;
    FILE *(*f)(const char *, const char *) = (FILE * (*)(const char *, const char *)) next(&real, "popen");
    bool lifted = unpinned_begin();
    FILE *r = f(command, type);
    unpinned_end(lifted);
    return r;
}
