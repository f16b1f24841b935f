/* See part.h. */
#include "part.h"

#include <stdlib.h>
#include <string.h>

str nonce;
int inpart, ferr;
str pname, mode, wuse;
long maxl, cnt, more, cut;
char **errs;
size_t nerr, errcap;
map seen;
map uname, gname;
static int idsread;

void add_err(const char *p, size_t n) {
    if (nerr == errcap) errs = xrealloc(errs, sizeof(char *) * (errcap = errcap ? errcap * 2 : 16));
    errs[nerr++] = xstrndup(p, n);
}

void add_errz(const char *z) { add_err(z, strlen(z)); }

void put(const char *l, size_t n) {
    if (mode.n == 1 && mode.p[0] == 'u') {
        int made;
        map_put(&seen, l, n, &made);
        if (!made) return;
    }
    if (cnt >= maxl) {
        more = 1;
        return;
    }
    cnt++;
    if (n > MAXW) {
        n = MAXW;
        cut++;
    }
    out(l, n);
    putchar('\n');
}

void puts_(const str *s) { put(s->p, s->n); }

int mode_is(const char *m) { return mode.n == strlen(m) && memcmp(mode.p, m, mode.n) == 0; }
int ends_with(const char *p, size_t n, const char *suf) {
    size_t k = strlen(suf);
    return n >= k && memcmp(p + n - k, suf, k) == 0;
}

int field_is(const char *f, size_t fl, const char *z) { return fl == strlen(z) && memcmp(f, z, fl) == 0; }

/* ---- names for numeric owners (awk: ids, statline) ---- */
static void ids_file(const char *path, map *m) {
    size_t len;
    char *b = read_file(path, &len);
    if (!b) return;
    size_t start = 0;
    for (size_t i = 0; i <= len; i++) {
        if (i < len && b[i] != '\n') continue;
        const char *f[4];
        size_t fl[4];
        size_t nf = split_char(b + start, i - start, ':', f, fl, 4);
        if (!(i == len && start == len) && nf >= 3 && fl[2] > 0) {
            int made;
            entry *e = map_put(m, f[2], fl[2], &made);
            if (made) e->val = xstrndup(f[0], fl[0]);
        }
        start = i + 1;
    }
    free(b);
}

void ids(void) {
    if (idsread) return;
    idsread = 1;
    ids_file("/etc/passwd", &uname);
    ids_file("/etc/group", &gname);
}

/* statline(l) into o (o untouched and 0 returned when l is not a numeric stat line). */
int statline(const char *l, size_t n, str *o) {
    const char *f[64];
    size_t fl[64];
    size_t nf = split_char(l, n, '\t', f, fl, 64);
    if (nf < 9 || nf > 64 || !all_digits(f[2], fl[2]) || !all_digits(f[4], fl[4]) || fl[3] != fl[2] ||
        memcmp(f[3], f[2], fl[2]) || fl[5] != fl[4] || memcmp(f[5], f[4], fl[4]))
        return 0;
    ids();
    s_clear(o);
    s_add(o, f[0], fl[0]);
    s_addc(o, '\t');
    s_add(o, f[1], fl[1]);
    s_addc(o, '\t');
    s_add(o, f[2], fl[2]);
    s_addc(o, '\t');
    entry *e = map_get(&uname, f[2], fl[2]);
    s_adds(o, e ? (char *)e->val : "UNKNOWN");
    s_addc(o, '\t');
    s_add(o, f[4], fl[4]);
    s_addc(o, '\t');
    e = map_get(&gname, f[4], fl[4]);
    s_adds(o, e ? (char *)e->val : "UNKNOWN");
    for (size_t i = 6; i < nf; i++) {
        s_addc(o, '\t');
        s_add(o, f[i], fl[i]);
    }
    return 1;
}

void put_stat(const char *l, size_t n) {
    static str o;
    if (statline(l, n, &o))
        puts_(&o);
    else
        put(l, n);
}
/* awk: issha — a sha256sum line (64 hex digits, a blank, more), maybe led by a backslash. */
int issha(const char *l, size_t n) {
    size_t o = (n > 0 && l[0] == '\\') ? 1 : 0;
    if (n < o + 65 || l[o + 64] != ' ' || n <= o + 65) return 0;
    for (size_t i = o; i < o + 64; i++)
        if (!((l[i] >= '0' && l[i] <= '9') || (l[i] >= 'a' && l[i] <= 'f'))) return 0;
    return 1;
}
