/* The walk index of the filter (awk: wload and what serves the tree probes from it: verbs
 * R, N, w, W, H, G, F, h, Z). */
#ifndef TBPROBE_WALKINDEX_H
#define TBPROBE_WALKINDEX_H

#include "util.h"

void walk_root(const char *set, size_t sl, const char *root, size_t rl); /* verb R */
void walk_skip(const char *path, size_t n);                             /* verb R skip */
void wlist(const char *kind, size_t kl, const char *s, size_t n);       /* verb N */
void wload(const char *wf, const char *hf, const char *ef, const char *rc); /* verb w */
void wpart(const char *set, char how);                                   /* verbs W H G */
void walk_stat_of(const char *path, size_t n);                           /* verb F */
void walk_hash_of(const char *path, size_t n);                           /* verb h */
void unitstates(const char *d);                                          /* verb Z */
/* At a part's end: what the walk adds for the set the part served (a cut, the walk's own
 * failure, its error lines under the set's roots); *rc becomes the part's status. */
void walk_part_end(const char *set, str *rc);

#endif
