#define _GNU_SOURCE
/* See walkindex.h. Each function names the awk function of snapshot.sh's TB_FILTER it
 * mirrors. */
#include "walkindex.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "part.h"

#define MAXWALK 60000

typedef struct {
    char *H; /* start point */
    int d;   /* depth */
    char y;  /* type letter */
    long long sz;
    char *p, *l; /* path, link target */
    char *st;    /* stat line in the portable format, names numeric */
} wentry;
static wentry *wv;
static size_t nw, wcap;
static char *wcut;
static long wrc;
static char **werr;
static size_t nwerr, werrcap;
static map wi;    /* path -> index + 1 */
static map hl;    /* path -> sha256sum line */
static map gm;    /* path -> str of PEM matches, '\n' separated */
static map wseen; /* start points seen */
static map rs;    /* "SET\1ROOT" */
static map rl;    /* SET -> str of " ROOT" words */
static map wset;  /* "KIND\1WORD" */
static char **snames;
static size_t nsnames;
static int names_given;
static str askip;
static int sdone;
static size_t *sf, nsf;

static const char *typename(char y, const char *sz, size_t szl) {
    switch (y) {
    case 'f':
        return (szl == 1 && sz[0] == '0') ? "regular empty file" : "regular file";
    case 'd':
        return "directory";
    case 'l':
        return "symbolic link";
    case 'p':
        return "fifo";
    case 's':
        return "socket";
    case 'b':
        return "block special file";
    case 'c':
        return "character special file";
    default:
        return "weird file";
    }
}

/* awk: cq — a name quoted as GNU stat's %N does with QUOTING_STYLE=c */
static void cq(str *o, const char *s, size_t n) {
    s_addc(o, '"');
    for (size_t i = 0; i < n; i++) {
        unsigned char c = (unsigned char)s[i];
        if (c == '\\' || c == '"') {
            s_addc(o, '\\');
            s_addc(o, (char)c);
        } else if (c >= ' ' && c <= '~')
            s_addc(o, (char)c);
        else if (c == 7)
            s_adds(o, "\\a");
        else if (c == 8)
            s_adds(o, "\\b");
        else if (c == 11)
            s_adds(o, "\\v");
        else if (c == 12)
            s_adds(o, "\\f");
        else if (c == 13)
            s_adds(o, "\\r");
        else {
            char b[8];
            snprintf(b, sizeof b, "\\%03o", c);
            s_adds(o, b);
        }
    }
    s_addc(o, '"');
}

/* awk: shakey — the file name of a sha256sum line */
static void shakey(const char *l, size_t n, str *o) {
    s_clear(o);
    if (n == 0 || l[0] != '\\') {
        if (n > 66) s_add(o, l + 66, n - 66);
        return;
    }
    const char *p = l + 67;
    size_t pl = n > 67 ? n - 67 : 0;
    for (size_t i = 0; i < pl; i++) {
        char c = p[i];
        if (c == '\\' && i + 1 < pl) {
            c = p[++i];
            if (c == 'n')
                c = '\n';
            else if (c == 'r')
                c = '\r';
        }
        s_addc(o, c);
    }
}

static int upper_digit(char c) { return (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9'); }

/* s[q..] is (WORD " ")* "PRIVATE KEY-----", anchored at the end when `whole`. */
static int pk_words(const char *s, size_t n, size_t q, int whole) {
    for (;;) {
        if (n - q >= 16 && memcmp(s + q, "PRIVATE KEY-----", 16) == 0 && (!whole || n - q == 16)) return 1;
        size_t w = q;
        while (w < n && upper_digit(s[w])) w++;
        if (w == q || w >= n || s[w] != ' ') return 0;
        q = w + 1;
    }
}

/* ^-----BEGIN [A-Z0-9 ]+-----$ */
static int pem_header(const char *m, size_t n) {
    if (!s_starts(m, n, "-----BEGIN ")) return 0;
    size_t i = 11;
    while (i < n && (upper_digit(m[i]) || m[i] == ' ')) i++;
    return i > 11 && n - i == 5 && memcmp(m + i, "-----", 5) == 0;
}

/* gline's test: ^(-----BEGIN [A-Z0-9 ]+-----|.-----BEGIN ([A-Z0-9]+ )*PRIVATE KEY-----)$ */
static int pem_match(const char *m, size_t n) {
    if (pem_header(m, n)) return 1;
    return n > 12 && s_starts(m + 1, n - 1, "-----BEGIN ") && pk_words(m, n, 12, 1);
}

/* haspk's test: -----BEGIN ([A-Z0-9]+ )*PRIVATE KEY----- anywhere */
static int has_pk(const char *m, size_t n) {
    for (const char *p = m; (p = memmem(p, n - (size_t)(p - m), "-----BEGIN ", 11)); p++)
        if (pk_words(m, n, (size_t)(p - m) + 11, 0)) return 1;
    return 0;
}

static void gline(const char *l, size_t n) {
    for (size_t j = 0; j < n; j++) {
        if (l[j] != ':') continue;
        if (map_get(&wi, l, j) && pem_match(l + j + 1, n - j - 1)) {
            int made;
            entry *e = map_put(&gm, l, j, &made);
            if (made) e->val = calloc(1, sizeof(str));
            str *s = e->val;
            s_add(s, l + j + 1, n - j - 1);
            s_addc(s, '\n');
            return;
        }
    }
}

static void wload_line(const char *x, size_t n, void *ctx) {
    (void)ctx;
    if (wcut) return;
    const char *a[12];
    size_t al[12];
    if (split_char(x, n, '\t', a, al, 12) != 11) return;
    if (nw >= MAXWALK) {
        wcut = xstrndup(a[0], al[0]);
        return;
    }
    int made;
    map_put(&wseen, a[0], al[0], &made);
    if (nw == wcap) wv = xrealloc(wv, sizeof(wentry) * (wcap = wcap ? wcap * 2 : 1024));
    wentry *e = &wv[nw++];
    e->H = xstrndup(a[0], al[0]);
    e->d = atoi(xstrndup(a[1], al[1]));
    e->y = al[2] ? a[2][0] : 0;
    if (al[2] != 1) e->y = '?';
    e->sz = atoll(xstrndup(a[6], al[6]));
    e->p = xstrndup(a[10], al[10]);
    e->l = xstrndup(a[9], al[9]);
    str st = {0};
    s_adds(&st, typename(e->y, a[6], al[6]));
    size_t tl = al[7];
    const char *dot = memchr(a[7], '.', al[7]);
    if (dot) tl = (size_t)(dot - a[7]);
    const char *parts[] = {a[3], a[4], a[4], a[5], a[5], a[6], a[7]};
    size_t plens[] = {al[3], al[4], al[4], al[5], al[5], al[6], tl};
    for (int i = 0; i < 7; i++) {
        s_addc(&st, '\t');
        s_add(&st, parts[i], plens[i]);
    }
    s_addc(&st, '\t');
    cq(&st, a[10], al[10]);
    if (e->y == 'l') {
        s_adds(&st, " -> ");
        cq(&st, a[9], al[9]);
    }
    e->st = st.p;
    entry *w = map_put(&wi, a[10], al[10], &made);
    if (made) w->ival = (long)nw;
}

static void hash_line(const char *x, size_t n, void *ctx) {
    (void)ctx;
    if (n > 0 && x[0] == '/')
        gline(x, n);
    else if (issha(x, n)) {
        static str k;
        shakey(x, n, &k);
        int made;
        entry *e = map_put(&hl, k.p ? k.p : "", k.n, &made);
        e->val = xstrndup(x, n);
    }
}

static void werr_line(const char *x, size_t n, void *ctx) {
    (void)ctx;
    if (nwerr == werrcap) werr = xrealloc(werr, sizeof(char *) * (werrcap = werrcap ? werrcap * 2 : 16));
    werr[nwerr++] = xstrndup(x, n);
}

void wload(const char *wf, const char *hf, const char *ef, const char *rc) {
    wrc = strtol(rc, NULL, 10);
    size_t len;
    char *b;
    if ((b = read_file(wf, &len))) each_line(b, len, wload_line, NULL), free(b);
    if ((b = read_file(hf, &len))) each_line(b, len, hash_line, NULL), free(b);
    if ((b = read_file(ef, &len))) each_line(b, len, werr_line, NULL), free(b);
}

static str *roots_of(const char *set) {
    entry *e = map_get(&rl, set, strlen(set));
    return e ? e->val : NULL;
}

static int in_rs(const char *set, const char *root) {
    static str k;
    s_clear(&k);
    s_adds(&k, set);
    s_addc(&k, '\1');
    s_adds(&k, root);
    return map_get(&rs, k.p, k.n) != NULL;
}

static int in_wset(const char *kind, const char *w, size_t n) {
    static str k;
    s_clear(&k);
    s_adds(&k, kind);
    s_addc(&k, '\1');
    s_add(&k, w, n);
    return map_get(&wset, k.p, k.n) != NULL;
}

static int wsetcut(const char *set) {
    if (!wcut) return 0;
    str *r = roots_of(set);
    if (!r) return 0;
    const char *f[256];
    size_t fl[256];
    size_t nr = split_ws(r->p, r->n, f, fl, 256);
    for (size_t k = 0; k < nr && k < 256; k++)
        if ((fl[k] == strlen(wcut) && memcmp(f[k], wcut, fl[k]) == 0) || !map_get(&wseen, f[k], fl[k])) return 1;
    return 0;
}

/* rel(i): the path below its start point ("" for the start point itself) */
static const char *rel(const wentry *e, size_t *n) {
    if (e->d == 0) {
        *n = 0;
        return "";
    }
    size_t hl_ = strlen(e->H), pl = strlen(e->p);
    if (pl < hl_ + 1) {
        *n = 0;
        return "";
    }
    *n = pl - hl_ - 1;
    return e->p + hl_ + 1;
}

static int inapp(const wentry *e) {
    if (e->d > 6) return 0;
    if (askip.n) {
        size_t pl = strlen(e->p);
        if ((pl == askip.n && memcmp(e->p, askip.p, pl) == 0) ||
            (pl > askip.n && memcmp(e->p, askip.p, askip.n) == 0 && e->p[askip.n] == '/'))
            return 0;
    }
    size_t rn;
    const char *r = rel(e, &rn);
    const char *c[64];
    size_t cl[64];
    size_t nc = e->d == 0 ? 0 : split_char(r, rn, '/', c, cl, 64);
    if (nc > 64) nc = 64;
    for (size_t k = 0; k < nc; k++) {
        if (field_is(c[k], cl[k], "__pycache__")) return 0;
        if (k + 1 < nc && ((cl[k] > 0 && c[k][0] == '.') || in_wset("deps", c[k], cl[k]))) return 0;
    }
    return !(nc > 0 && e->y == 'd' && cl[nc - 1] > 0 && c[nc - 1][0] == '.');
}

/* a glob of wlist("names") (only * and ? are special) against a whole name */
static int globmatch(const char *g, const char *s, size_t n) {
    if (!*g) return n == 0;
    if (*g == '*') {
        for (size_t i = 0; i <= n; i++)
            if (globmatch(g + 1, s + i, n - i)) return 1;
        return 0;
    }
    if (n == 0) return 0;
    if (*g == '?' || *g == *s) return globmatch(g + 1, s + 1, n - 1);
    return 0;
}

static int secret_name(const char *s, size_t n) {
    if (!names_given) return 1; /* awk: an empty regex matches anything */
    for (size_t i = 0; i < nsnames; i++)
        if (globmatch(snames[i], s, n)) return 1;
    return 0;
}

void wlist(const char *kind, size_t kl, const char *s, size_t n) {
    const char *f[256];
    size_t fl[256];
    size_t nf = split_ws(s, n, f, fl, 256);
    int isnames = kl == 5 && memcmp(kind, "names", 5) == 0;
    for (size_t k = 0; k < nf && k < 256; k++) {
        if (isnames) {
            snames = xrealloc(snames, sizeof(char *) * (nsnames + 1));
            snames[nsnames++] = xstrndup(f[k], fl[k]);
        } else {
            static str key;
            s_clear(&key);
            s_add(&key, kind, kl);
            s_addc(&key, '\1');
            s_add(&key, f[k], fl[k]);
            map_put(&wset, key.p, key.n, NULL);
        }
    }
    if (isnames) names_given = 1;
}

static int haspk(const char *p) {
    entry *e = map_get(&gm, p, strlen(p));
    if (!e) return 0;
    str *s = e->val;
    size_t start = 0;
    for (size_t i = 0; i < s->n; i++)
        if (s->p[i] == '\n') {
            if (has_pk(s->p + start, i - start)) return 1;
            start = i + 1;
        }
    return 0;
}

static void secrets(void) {
    if (sdone) return;
    sdone = 1;
    sf = xmalloc(sizeof(size_t) * 2000);
    for (size_t i = 0; i < nw && nsf < 2000; i++) {
        wentry *e = &wv[i];
        if (e->y != 'f' || e->d == 0 || !in_rs("S", e->H)) continue;
        size_t rn;
        const char *r = rel(e, &rn);
        const char *c[64];
        size_t cl[64];
        size_t nc = split_char(r, rn, '/', c, cl, 64);
        if (nc > 64) nc = 64;
        int ok = 1;
        for (size_t k = 0; k < nc; k++)
            if (in_wset("prune", c[k], cl[k])) {
                ok = 0;
                break;
            }
        if (!ok) continue;
        const char *last = nc ? c[nc - 1] : "";
        size_t lastl = nc ? cl[nc - 1] : 0;
        if (secret_name(last, lastl) || (e->d <= 5 && e->sz <= 64512 && haspk(e->p))) sf[nsf++] = i;
    }
}

static int inset(const wentry *e, const char *set) {
    if (!in_rs(set, e->H)) return 0;
    return strcmp(set, "A") != 0 || inapp(e);
}

static int cmpstr(const void *a, const void *b) { return strcmp(*(char *const *)a, *(char *const *)b); }

void unitstates(const char *d) {
    size_t dl = strlen(d);
    char **zl = NULL;
    size_t nz = 0;
    map zs = {0};
    for (size_t i = 0; i < nw; i++) {
        wentry *e = &wv[i];
        size_t pl = strlen(e->p);
        if (e->y != 'l' || pl <= dl || memcmp(e->p, d, dl) != 0 || e->p[dl] != '/') continue;
        const char *r = e->p + dl + 1;
        const char *c[3];
        size_t cl[3];
        size_t nc = split_char(r, pl - dl - 1, '/', c, cl, 3);
        if (nc > 2) continue;
        str v = {0};
        if (nc == 2) {
            if (!(ends_with(c[0], cl[0], ".wants") || ends_with(c[0], cl[0], ".requires"))) continue;
            s_add(&v, c[1], cl[1]);
            s_adds(&v, " enabled");
        } else if (strcmp(e->l, "/dev/null") == 0) {
            s_add(&v, c[0], cl[0]);
            s_adds(&v, " masked");
        } else {
            s_add(&v, c[0], nc ? cl[0] : 0);
            s_adds(&v, " alias");
        }
        int made;
        map_put(&zs, v.p, v.n, &made);
        if (!made) continue;
        zl = xrealloc(zl, sizeof(char *) * (nz + 1));
        zl[nz++] = v.p;
    }
    qsort(zl, nz, sizeof(char *), cmpstr);
    for (size_t i = 0; i < nz; i++) put(zl[i], strlen(zl[i]));
}

static int wfail(const char *l, const char *set) {
    str *r = roots_of(set);
    if (!r) return 0;
    const char *f[256];
    size_t fl[256];
    size_t nr = split_ws(r->p, r->n, f, fl, 256);
    static str k;
    for (size_t i = 0; i < nr && i < 256; i++) {
        const char *pre[] = {"'", "'", ": "};
        const char *post[] = {"/", "'", "/"};
        for (int j = 0; j < 3; j++) {
            s_clear(&k);
            s_adds(&k, pre[j]);
            s_add(&k, f[i], fl[i]);
            s_adds(&k, post[j]);
            if (strstr(l, k.p)) return 1;
        }
    }
    return 0;
}

static void put_hash_of(const char *p) {
    entry *h = map_get(&hl, p, strlen(p));
    if (h) put(h->val, strlen(h->val));
}

void wpart(const char *set, char how) {
    s_clear(&wuse);
    s_adds(&wuse, set);
    int isS = strcmp(set, "S") == 0;
    if (how == 'W') {
        if (isS) {
            secrets();
            for (size_t k = 0; k < nsf; k++) put_stat(wv[sf[k]].st, strlen(wv[sf[k]].st));
        } else
            for (size_t i = 0; i < nw; i++)
                if (inset(&wv[i], set)) put_stat(wv[i].st, strlen(wv[i].st));
    } else if (how == 'H') {
        if (isS) {
            secrets();
            for (size_t k = 0; k < nsf; k++) put_hash_of(wv[sf[k]].p);
        } else
            for (size_t i = 0; i < nw; i++)
                if (wv[i].y == 'f' && inset(&wv[i], set)) put_hash_of(wv[i].p);
    } else {
        secrets();
        static str o;
        for (size_t k = 0; k < nsf; k++) {
            const char *p = wv[sf[k]].p;
            entry *e = map_get(&gm, p, strlen(p));
            if (!e) continue;
            str *s = e->val;
            size_t start = 0;
            for (size_t i = 0; i < s->n; i++)
                if (s->p[i] == '\n') {
                    if (pem_header(s->p + start, i - start)) {
                        s_clear(&o);
                        s_adds(&o, p);
                        s_addc(&o, ':');
                        s_add(&o, s->p + start, i - start);
                        puts_(&o);
                    }
                    start = i + 1;
                }
        }
    }
}

void walk_root(const char *set, size_t sl, const char *root, size_t rlen) {
    static str k;
    s_clear(&k);
    s_add(&k, set, sl);
    s_addc(&k, '\1');
    s_add(&k, root, rlen);
    map_put(&rs, k.p, k.n, NULL);
    int made;
    entry *e = map_put(&rl, set, sl, &made);
    if (made) e->val = calloc(1, sizeof(str));
    s_addc(e->val, ' ');
    s_add(e->val, root, rlen);
}

void walk_skip(const char *path, size_t n) {
    s_clear(&askip);
    s_add(&askip, path, n);
}

void walk_stat_of(const char *path, size_t n) {
    entry *e = map_get(&wi, path, n);
    if (e) {
        put_stat(wv[e->ival - 1].st, strlen(wv[e->ival - 1].st));
        return;
    }
    ferr = 1;
    static str m;
    s_clear(&m);
    s_add(&m, path, n);
    s_adds(&m, ": not found by the walk");
    add_err(m.p, m.n);
}

void walk_hash_of(const char *path, size_t n) {
    entry *e = map_get(&hl, path, n);
    if (e) put(e->val, strlen(e->val));
}

void walk_part_end(const char *set, str *rc) {
    int rc0 = rc->n == 1 && rc->p[0] == '0';
    if (wsetcut(set)) more = 1;
    if (wrc >= 124) {
        char b[32];
        snprintf(b, sizeof b, "%ld", wrc);
        static str m;
        s_clear(&m);
        s_adds(&m, "the walk did not finish (exit status ");
        s_adds(&m, b);
        s_adds(&m, ")");
        add_err(m.p, m.n);
        if (rc0) {
            s_clear(rc);
            s_adds(rc, b);
            rc0 = 0;
        }
    }
    for (size_t i = 0; i < nwerr; i++)
        if (wfail(werr[i], set)) {
            add_errz(werr[i]);
            if (rc0) {
                s_clear(rc);
                s_adds(rc, "1");
                rc0 = 0;
            }
        }
}
