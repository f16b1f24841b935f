/* The process table read from /proc (awk: proctable; verb P). */
#ifndef TBPROBE_PROCTABLE_H
#define TBPROBE_PROCTABLE_H

#include <stddef.h>

/* One "PID PPID USER ARGS" line per process dir named in s (blank separated), as ps prints
 * them in the C locale. */
void proctable(const char *s, size_t sl);

#endif
