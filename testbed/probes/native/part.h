/* The part being written (the awk filter's per-part state and its put()), shared by the
 * filter's modes, the walk index and the process table. */
#ifndef TBPROBE_PART_H
#define TBPROBE_PART_H

#include "util.h"

#define MAXW 4096 /* put(): longer lines are cut here (awk: w) */

extern str nonce;              /* this run's nonce */
extern int inpart, ferr;       /* inside a part; a file of it could not be read */
extern str pname, mode, wuse;  /* part name, mode, the walk set it served (W/H/G) */
extern long maxl, cnt, more, cut;  /* line cap, lines kept, lines dropped?, lines cut */
extern char **errs;            /* the part's own stderr lines */
extern size_t nerr;
extern map seen;               /* mode u: lines already put */
extern map uname, gname;       /* uid/gid -> name, from /etc/passwd and /etc/group */

void add_err(const char *p, size_t n);
void add_errz(const char *z);
void put(const char *l, size_t n);    /* awk: put — cap, cut, dedupe (mode u), print */
void puts_(const str *s);
int mode_is(const char *m);
int ends_with(const char *p, size_t n, const char *suf);
int field_is(const char *f, size_t fl, const char *z);
void ids(void);                       /* awk: ids — read the name maps once */
int statline(const char *l, size_t n, str *o); /* awk: statline, into o; 0 when not one */
void put_stat(const char *l, size_t n);
int issha(const char *l, size_t n);   /* awk: issha */

#endif
