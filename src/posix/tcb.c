/* SPDX-License-Identifier: MIT */
/*
 * Thread pointers: what glibc keys to a thread, given to every ito thread.
 *
 * glibc finds a thread's state through the thread pointer (the %fs base):
 * errno and every `__thread` variable lie at fixed offsets below it (the
 * static TLS blocks), its thread descriptor above it, and through the
 * descriptor the dynamic TLS of libraries loaded later (the DTV), the stack
 * protector's canary (%fs:0x28) and the owner identity that stdio's and
 * other internal recursive locks record. ito threads migrate between kernel
 * threads, so in libito-pthread.so each ito thread has a thread pointer of
 * its own and the switch moves the %fs base with it (runtime/sched.c:
 * own_tls_switch; `wrfsbase`, a few cycles, where the kernel allows it, else
 * arch_prctl). An unmodified program then sees exactly what it would see on
 * glibc's own threads.
 *
 * Making one: the dynamic linker's _dl_allocate_tls builds a block with every
 * loaded module's initial TLS values and a zeroed descriptor, the way glibc's
 * pthread_create does. Then the header is copied from the caller's (the
 * canary and pointer guard are process-wide), the descriptor is marked
 * multi-threaded and given a thread ID of its own (glibc's rwlocks compare
 * it to tell the writer), the restartable-sequence area says "not
 * registered" (sched_getcpu then asks the kernel, which knows the carrier's
 * CPU), and the resolver state pointer gets a state of its own (glibc's
 * start_thread does the same). _dl_allocate_tls is glibc's, exported for its
 * own libpthread (GLIBC_PRIVATE): looked up at run time, and if it is not
 * there — not glibc — libito-pthread says so and does not start.
 *
 * Reuse. glibc frees a thread's malloc cache and other C-library state when
 * the thread exits (__libc_thread_freeres), a function it does not export.
 * So a thread pointer is not freed: it goes back to a pool (posix/thread.c),
 * and the next thread gets fresh initial values in every module's TLS except
 * the C library's own block, which keeps the malloc cache, arena and buffers
 * for the next thread as glibc's stack cache would have kept the memory; the
 * new thread then resets what is visible in it (errno, the thread's locale).
 * While only the modules loaded at start have TLS (all of it static), the
 * reset copies their initial images (a few hundred bytes); once dlopen has
 * loaded one more, the dynamic linker rebuilds the DTV and blocks instead.
 *
 * Rejected: one thread pointer per kernel thread, as libito.so has (errno
 * and `__thread` would follow the carrier, not the thread, and stdio's lock
 * owner would be shared by every thread of a carrier); building the TLS
 * block by hand from dl_iterate_phdr (the DTV's layout and its generation
 * counter are glibc's private business, and dlopen must find it right).
 */
#include "posix/tcb.h"

#include <dlfcn.h>
#include <errno.h>
#include <link.h>
#include <locale.h>
#include <resolv.h>
#undef p_type   /* resolv.h's name for a resolver function, not the ELF field */
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>

#include "arch.h"
#include "base/panic.h"

/* The x86-64 thread control block header (glibc's tcbhead_t): the fields
 * that the ABI and compilers use at fixed offsets. */
#define TCB_SELF_TCB 0x00        /* the thread pointer itself (%fs:0) */
#define TCB_DTV 0x08             /* the dynamic thread vector */
#define TCB_SELF 0x10            /* the descriptor */
#define TCB_MULTIPLE_THREADS 0x18
#define TCB_STACK_GUARD 0x28     /* -fstack-protector's canary */
#define TCB_POINTER_GUARD 0x30   /* setjmp's pointer mangling */
#define TCB_FEATURE_1 0x48       /* CET state */
#define RSEQ_CPU_ID_REGISTRATION_FAILED ((uint32_t)-2)
/* glibc 2.36's is 144 bytes; room to grow. */
#define ITO__TCB_LIBC_BLOCK_MAX 4096

void __ctype_init(void);

static void *(*allocate_tls)(void *);
static void (*deallocate_tls)(void *, bool);
static void (*call_tls_dtors)(void);
static long tid_offset = -1;      /* struct pthread's tid (libthread_db's descriptor) */
static long cancel_offset = -1;   /* struct pthread's cancelhandling (likewise) */
static long list_offset = -1;     /* struct pthread's link in the C library's thread lists */
static long rseq_offset;          /* the rseq area, relative to the thread pointer; 0: none */
static long resp_offset;          /* the resolver state pointer (__resp); 0: not found */
static intptr_t libc_block;       /* the C library's static TLS block: tp + libc_block ... */
static size_t libc_block_size;    /*   ... for this many bytes (0: none) */
static _Atomic int next_tid = 0x40000000;   /* above any kernel thread ID (pid_max <= 2^22) */

/* The static TLS blocks of the modules loaded at start, but the C
 * library's: what a reused thread pointer gets its initial values from
 * (ito__tcb_reset's fast path). Once a library with thread-local variables
 * has been loaded since (dlopen), the dynamic linker's own reset is used. */
#define MODULES_MAX 64
static struct ito__tls_block modules[MODULES_MAX];
static int nmodules;
static _Atomic bool modules_changed;

/* libito-pthread's own slot in every thread pointer. */
static __thread void *tcb_self __attribute__((tls_model("initial-exec")));

/* Each module with a TLS block in the calling (initial) thread: the C
 * library's is found by errno's address; the others are noted in modules[]. */
static int find_blocks(struct dl_phdr_info *info, size_t size, void *arg)
{
    uintptr_t err = (uintptr_t)__errno_location(), tp = ito__arch_thread_pointer();
    size_t static_size = *(const size_t *)arg;   /* the static TLS area: [tp - static_size, tp) */
    for (int i = 0; i < info->dlpi_phnum; i++) {
        const ElfW(Phdr) *ph = &info->dlpi_phdr[i];
        uintptr_t lo = (uintptr_t)info->dlpi_tls_data;
        if (ph->p_type != PT_TLS)
            continue;
        if (lo && err >= lo && err < lo + ph->p_memsz) {
            libc_block = (intptr_t)(lo - tp);
            libc_block_size = ph->p_memsz;
        } else if (nmodules < MODULES_MAX && lo && lo < tp && tp - lo <= static_size) {
            modules[nmodules++] = (struct ito__tls_block){ tp - lo, (const void *)(info->dlpi_addr + ph->p_vaddr),
                                                           ph->p_filesz, ph->p_memsz };
        } else {
            atomic_store_explicit(&modules_changed, true, memory_order_relaxed);   /* the slow way */
        }
    }
    return 0;
}

void ito__tcb_modules_changed(void) { atomic_store_explicit(&modules_changed, true, memory_order_relaxed); }

int ito__tcb_init(void)
{
    allocate_tls = (void *(*)(void *))dlvsym(RTLD_DEFAULT, "_dl_allocate_tls", "GLIBC_PRIVATE");
    deallocate_tls = (void (*)(void *, bool))dlvsym(RTLD_DEFAULT, "_dl_deallocate_tls", "GLIBC_PRIVATE");
    if (!allocate_tls || !deallocate_tls) {
        ito__warn("libito-pthread needs the GNU C library (its dynamic linker's _dl_allocate_tls "
                  "was not found); run the program without libito-pthread");
        return ENOSYS;
    }
    call_tls_dtors = (void (*)(void))dlvsym(RTLD_DEFAULT, "__call_tls_dtors", "GLIBC_PRIVATE");
    const uint32_t *tid_desc = dlvsym(RTLD_DEFAULT, "_thread_db_pthread_tid", "GLIBC_PRIVATE");
    if (tid_desc && tid_desc[0] == 32)   /* { bits, count, offset } */
        tid_offset = tid_desc[2];
    const uint32_t *list_desc = dlvsym(RTLD_DEFAULT, "_thread_db_pthread_list", "GLIBC_PRIVATE");
    if (list_desc && list_desc[0] == 2 * 64)   /* { next, prev } */
        list_offset = list_desc[2];
    const uint32_t *cancel_desc = dlvsym(RTLD_DEFAULT, "_thread_db_pthread_cancelhandling", "GLIBC_PRIVATE");
    if (cancel_desc && cancel_desc[0] == 32)
        cancel_offset = cancel_desc[2];
    const long *rseq = dlsym(RTLD_DEFAULT, "__rseq_offset");
    if (rseq)
        rseq_offset = *rseq;
    uintptr_t tp = ito__arch_thread_pointer();
    void *resp = dlvsym(RTLD_DEFAULT, "__resp", "GLIBC_PRIVATE");   /* this thread's */
    if (resp)
        resp_offset = (long)((uintptr_t)resp - tp);
    size_t static_size = 0, align;
    void (*static_info)(size_t *, size_t *) =
        (void (*)(size_t *, size_t *))dlvsym(RTLD_DEFAULT, "_dl_get_tls_static_info", "GLIBC_PRIVATE");
    if (static_info)
        static_info(&static_size, &align);   /* (includes the descriptor: an upper bound) */
    else
        modules_changed = true;
    dl_iterate_phdr(find_blocks, &static_size);
    if (libc_block_size > ITO__TCB_LIBC_BLOCK_MAX) {
        ito__warn("the C library's thread-local block is %zu bytes, more than libito-pthread "
                  "expects (%d); run the program without libito-pthread", libc_block_size,
                  ITO__TCB_LIBC_BLOCK_MAX);
        return ENOSYS;
    }
    return 0;
}

static void fill(uintptr_t tp, void *self)
{
    uintptr_t cur = ito__arch_thread_pointer();
    *(uintptr_t *)(tp + TCB_SELF_TCB) = tp;
    *(uintptr_t *)(tp + TCB_SELF) = tp;
    *(int *)(tp + TCB_MULTIPLE_THREADS) = 1;
    if (cancel_offset >= 0)
        *(int *)(tp + cancel_offset) = 0;   /* enabled, deferred, not cancelled (posix/cancel.c) */
    *(uintptr_t *)(tp + TCB_STACK_GUARD) = *(uintptr_t *)(cur + TCB_STACK_GUARD);
    *(uintptr_t *)(tp + TCB_POINTER_GUARD) = *(uintptr_t *)(cur + TCB_POINTER_GUARD);
    *(uint32_t *)(tp + TCB_FEATURE_1) = *(uint32_t *)(cur + TCB_FEATURE_1);
    if (rseq_offset)
        *(uint32_t *)(tp + rseq_offset + 4) = RSEQ_CPU_ID_REGISTRATION_FAILED;   /* cpu_id */
    *(void **)(tp + ((uintptr_t)&tcb_self - cur)) = self;
}

/* A descriptor in no list of the C library's: its link points at itself.
 * In the child of a fork the C library unlinks the forking thread's
 * descriptor from its lists and links it anew as its one thread; a zeroed
 * link would crash it there. */
static void unlisted(uintptr_t tp)
{
    if (list_offset < 0)
        return;
    void **link = (void **)(tp + list_offset);
    link[0] = link;   /* next */
    link[1] = link;   /* prev */
}

void ito__tcb_forked(uintptr_t tp)
{
    if (list_offset < 0)
        return;
    /* The C library listed tp as its running thread (see unlisted): take it
     * out again, or its next fork would count tp as a thread's cached
     * stack, which it may free. */
    void **link = (void **)(tp + list_offset);
    void **next = link[0], **prev = link[1];
    next[1] = prev;
    prev[0] = next;
    unlisted(tp);
}

uintptr_t ito__tcb_create(void *self)
{
    void *p = allocate_tls(NULL);
    if (!p)
        return 0;
    uintptr_t tp = (uintptr_t)p;
    if (tid_offset >= 0)
        *(int *)(tp + tid_offset) = atomic_fetch_add_explicit(&next_tid, 1, memory_order_relaxed);
    if (resp_offset) {
        struct __res_state *res = calloc(1, sizeof *res);
        if (!res) {
            deallocate_tls(p, true);
            return 0;
        }
        *(struct __res_state **)(tp + resp_offset) = res;   /* kept across reuse */
    }
    fill(tp, self);
    unlisted(tp);
    /* The C library's locale tables (isdigit and friends) are per thread,
     * set by __ctype_init on the thread itself: run it on tp for a moment,
     * so that contexts that never pass through a POSIX thread's start (a
     * scheduler context, a thread of ito's own API) have them too. A time
     * slice that ends meanwhile finds no activation in tp and does nothing. */
    uintptr_t cur = ito__arch_thread_pointer();
    ito__arch_set_thread_pointer(tp);
    __ctype_init();
    ito__arch_set_thread_pointer(cur);
    return tp;
}

bool ito__tcb_reset(uintptr_t tp)
{
    void *self = ito__tcb_self_of(tp);
    if (!atomic_load_explicit(&modules_changed, memory_order_relaxed)) {
        /* Only the modules loaded at start have TLS, all of it static: their
         * DTV entries point into this very block and stay right. */
        for (int i = 0; i < nmodules; i++)
            ito__tcb_fill_block(tp, &modules[i]);
        fill(tp, self);
        return true;
    }
    char saved[ITO__TCB_LIBC_BLOCK_MAX];
    if (libc_block_size)
        memcpy(saved, (void *)(tp + libc_block), libc_block_size);
    /* A new DTV and every module's initial values first: if there is no
     * memory for the DTV, the dynamic linker installs nothing and touches no
     * block, and tp stays as it was, whole, for a later try. */
    void **dtv = (void **)(tp + TCB_DTV), *old = *dtv;
    if (!allocate_tls((void *)tp))
        return false;
    void *now = *dtv;
    *dtv = old;
    deallocate_tls((void *)tp, false);   /* the old DTV and its dynamically allocated blocks */
    *dtv = now;
    if (libc_block_size)
        memcpy((void *)(tp + libc_block), saved, libc_block_size);
    fill(tp, self);
    return true;
}

void ito__tcb_fill_block(uintptr_t tp, const void *arg)
{
    const struct ito__tls_block *b = arg;
    char *dst = (char *)(tp - b->offset);
    memcpy(dst, b->image, b->filesz);
    memset(dst + b->filesz, 0, b->memsz - b->filesz);
}

void ito__tcb_adopt(void *self) { tcb_self = self; }

uintptr_t ito__tcb_mangle(uintptr_t p)
{
    p ^= *(uintptr_t *)(ito__arch_thread_pointer() + TCB_POINTER_GUARD);
    return p << 17 | p >> 47;   /* glibc's PTR_MANGLE on x86-64: xor, then rotate left by 17 */
}

int ito__tcb_tid(uintptr_t tp) { return tid_offset >= 0 ? *(int *)(tp + tid_offset) : 0; }

_Atomic int *ito__tcb_cancelhandling(uintptr_t tp)
{
    return cancel_offset >= 0 ? (_Atomic int *)(tp + cancel_offset) : NULL;
}

void *ito__tcb_self_of(uintptr_t tp)
{
    return *(void **)(tp + ((uintptr_t)&tcb_self - ito__arch_thread_pointer()));
}

void ito__tcb_thread_start(bool reused)
{
    /* A new thread pointer got its locale tables in ito__tcb_create; a reused
     * one keeps them (the C library's block stays), and they are the global
     * locale's unless the thread before switched locales (uselocale sets
     * them again). Likewise the resolver state: cleared only if used. */
    if (reused) {
        if (uselocale((locale_t)0) != LC_GLOBAL_LOCALE)
            uselocale(LC_GLOBAL_LOCALE);
        if (resp_offset) {
            struct __res_state *res = __res_state();
            if (res->options) {
                if (res->options & RES_INIT)
                    res_nclose(res);
                memset(res, 0, sizeof *res);
            }
        }
    }
    errno = 0;
}

void ito__tcb_thread_exit(void)
{
    if (call_tls_dtors)
        call_tls_dtors();
}
