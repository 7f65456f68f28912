/* SPDX-License-Identifier: MIT */
/* The thread pointer's setter (arch.h): which instruction the kernel allows. */
#include <asm/prctl.h>
#include <stdbool.h>
#include <stdint.h>
#include <sys/auxv.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "arch.h"

#ifndef HWCAP2_FSGSBASE
#define HWCAP2_FSGSBASE (1 << 1)
#endif

bool ito__arch_fsgsbase;

void ito__arch_tp_init(void)
{
    ito__arch_fsgsbase = (getauxval(AT_HWCAP2) & HWCAP2_FSGSBASE) != 0;
}

void ito__arch_set_thread_pointer_syscall(uintptr_t tp)
{
    syscall(SYS_arch_prctl, ARCH_SET_FS, tp);
}
