/* SPDX-License-Identifier: MIT */
/*
 * dlopen: the static TLS of a library loaded while ito threads exist.
 *
 * A shared library whose thread-local variables use the initial-exec model
 * gets its TLS block in the static TLS area of every thread, at a fixed
 * offset below the thread pointer; at dlopen the C library copies the
 * block's initial values into each thread it knows of. ito's thread
 * pointers (tcb.c) are not on its list, so after the C library's dlopen
 * returns, this one does the same for them: for each module that now has a
 * static TLS block and did not before, copy its initial image into every
 * thread pointer ever made (threads made later get it from _dl_allocate_tls).
 * Libraries with general-dynamic TLS, the usual kind, need nothing: each
 * thread allocates their blocks on first use.
 *
 * The module's offset is its link map's l_tls_offset, found through the
 * descriptors glibc exports for libthread_db (_thread_db_link_map_*), its
 * image in its program headers; both are read inside dl_iterate_phdr, which
 * holds the dynamic linker's lock on its list of modules. Limit: a constructor of the loaded library
 * that writes its own initial-exec variables on the loading ito thread has
 * that write replaced by the initial value.
 */
#include <dlfcn.h>
#include <link.h>
#include <stdbool.h>
#include <stdint.h>
#include <string.h>

#include "base/libc.h"
#include "posix/posix.h"
#include "posix/tcb.h"

static const uint32_t *desc_offset, *desc_modid;   /* { bits, count, offset in struct link_map } */
/* The module last given its static block under each modid (modids are
 * reused after dlclose, link maps are not, while the module is loaded). */
static struct link_map *seen[1024];

/* The C library's mutex, not ito's: dlopen is rare, and a library that ito
 * itself uses while it starts may call it, when an ito mutex would start ito
 * again from inside its own start. */
static pthread_mutex_t fill_lock = PTHREAD_MUTEX_INITIALIZER;

void ito__posix_dlopen_forked(void)
{
    fill_lock = (pthread_mutex_t)PTHREAD_MUTEX_INITIALIZER;   /* a holder the fork left behind */
}

/* The link map of TLS module modid (in the base namespace), or NULL. */
static struct link_map *map_of(size_t modid)
{
    for (struct link_map *l = _r_debug.r_map; l; l = l->l_next)
        if (*(size_t *)((char *)l + desc_modid[2]) == modid)
            return l;
    return NULL;
}

/* For each loaded module, inside dl_iterate_phdr: it holds the dynamic
 * linker's lock on its list of modules, so the link maps read here cannot
 * change (a dlopen or dlclose in another thread waits). */
static int visit(struct dl_phdr_info *info, size_t size, void *arg)
{
    (void)size;
    bool fill = *(bool *)arg;
    size_t modid = info->dlpi_tls_modid;
    if (!modid || modid >= sizeof seen / sizeof seen[0])
        return 0;
    struct link_map *l = map_of(modid);
    if (!l || seen[modid] == l)
        return 0;
    if (fill)
        ito__tcb_modules_changed();   /* new TLS: reused thread pointers need a new DTV */
    /* 0: no static block yet; -1: dynamic for good (x86-64's values). */
    size_t off = *(size_t *)((char *)l + desc_offset[2]);
    if (off == 0 || off == (size_t)-1)
        return 0;
    seen[modid] = l;
    if (!fill)
        return 0;
    for (int i = 0; i < info->dlpi_phnum; i++) {
        const ElfW(Phdr) *ph = &info->dlpi_phdr[i];
        if (ph->p_type == PT_TLS) {
            struct ito__tls_block b = { off, (const void *)(info->dlpi_addr + ph->p_vaddr), ph->p_filesz, ph->p_memsz };
            ito__pthread_each_tp(ito__tcb_fill_block, &b);
            break;
        }
    }
    return 0;
}

/* Give every thread pointer the static blocks of modules that have one now
 * (fill) or just note them (at start: every thread pointer made from then on
 * gets them from the dynamic linker). */
static void static_tls(bool fill)
{
    if (desc_offset && desc_modid)
        dl_iterate_phdr(visit, &fill);
}

__attribute__((constructor)) static void note_loaded(void)
{
    desc_offset = dlvsym(RTLD_DEFAULT, "_thread_db_link_map_l_tls_offset", "GLIBC_PRIVATE");
    desc_modid = dlvsym(RTLD_DEFAULT, "_thread_db_link_map_l_tls_modid", "GLIBC_PRIVATE");
    if (!desc_offset || !desc_modid || desc_offset[0] != 64 || desc_modid[0] != 64) {
        desc_offset = desc_modid = NULL;   /* not the layout we know: leave it */
        return;
    }
    static_tls(false);
}

static void *(*_Atomic libc_dlopen)(const char *, int);

ITO_POSIX_API void *dlopen(const char *file, int mode)
{
    void *(*real)(const char *, int) = libc_dlopen;
    if (!real) {
        real = (void *(*)(const char *, int))dlvsym(RTLD_NEXT, "dlopen", "GLIBC_2.34");
        if (!real)
            real = (void *(*)(const char *, int))dlvsym(RTLD_NEXT, "dlopen", "GLIBC_2.2.5");
        libc_dlopen = real;
    }
    void *h = real(file, mode);
    if (h) {
        /* One at a time: `seen` is shared. */
        ito__libc_pthread_mutex_lock(&fill_lock);
        static_tls(true);
        ito__libc_pthread_mutex_unlock(&fill_lock);
    }
    return h;
}
