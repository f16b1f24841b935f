/* See zerofree.h. The kernel hands out anonymous pages zero-filled: faulting in free memory
 * (touching each page with a zero) and unmapping it again leaves those pages zero in the
 * free lists. It stops a reserve short of MemFree (the larger of 32 MiB and 1/16 of
 * MemTotal), checking MemFree before every 8 MiB chunk, so nothing else in the guest runs
 * short; it prints the MiB it zeroed. */
#define _GNU_SOURCE
#include "zerofree.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>

#include "util.h"

#define CHUNK (8UL << 20)
#define MAX_CHUNKS 65536

static long meminfo_kib(const char *key) {
    size_t n;
    char *b = read_file("/proc/meminfo", &n);
    if (!b) return -1;
    long v = -1;
    char *p = strstr(b, key);
    if (p) v = strtol(p + strlen(key), NULL, 10);
    free(b);
    return v;
}

int zerofree_main(void) {
    long total = meminfo_kib("MemTotal:");
    if (total <= 0) {
        fputs("tbprobe zerofree: no MemTotal in /proc/meminfo\n", stderr);
        return 1;
    }
    long reserve = total / 16 > 32768 ? total / 16 : 32768;
    static void *chunks[MAX_CHUNKS];
    size_t n = 0;
    while (n < MAX_CHUNKS) {
        long free_kib = meminfo_kib("MemFree:");
        if (free_kib < 0 || free_kib - (long)(CHUNK >> 10) < reserve) break;
        char *p = mmap(NULL, CHUNK, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
        if (p == MAP_FAILED) break;
        /* huge pages where the kernel has them: one fault per 2 MiB instead of 512 (each a
         * trap into the emulated kernel); the zero written keeps every page zero */
        madvise(p, CHUNK, MADV_HUGEPAGE);
        for (size_t off = 0; off < CHUNK; off += 4096) ((volatile char *)p)[off] = 0;
        chunks[n++] = p;
    }
    for (size_t i = 0; i < n; i++) munmap(chunks[i], CHUNK);
    printf("zeroed %zu MiB\n", n * (CHUNK >> 20));
    return 0;
}
