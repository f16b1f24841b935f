#define _GNU_SOURCE
/* See filter.h. Each function names the awk function of snapshot.sh's TB_FILTER it mirrors;
 * where awk semantics decide an edge (split, substr, getline), the comment says which. */
#include "filter.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "part.h"
#include "proctable.h"
#include "util.h"
#include "walkindex.h"


static str cs;
static int pfail;
static char **xbuf; /* mode X: sha256sum lines kept back for verb r */
static size_t nb, xbcap;
static char xk;
static str sk, sv; /* mode g: the sysctl key being collected and its value */

static double uptime(void) {
    size_t n;
    char *b = read_file("/proc/uptime", &n);
    if (!b) return 0;
    double u = strtod(b, NULL);
    free(b);
    return u;
}
/* ---- sysctl lines (awk: sysline, sysflush) ---- */

static void sysflush(void) {
    if (sk.n == 0 || !s_starts(sk.p, sk.n, "/proc/sys/") || ends_with(sk.p, sk.n, "/base_reachable_time") ||
        ends_with(sk.p, sk.n, "/retrans_time")) {
        s_clear(&sk);
        return;
    }
    /* split(substr(sk, 11), parts, "/") joined by ".", each part's dots made slashes */
    static str k;
    s_clear(&k);
    const char *f[128];
    size_t fl[128];
    size_t np = split_char(sk.p + 10, sk.n - 10, '/', f, fl, 128);
    for (size_t i = 0; i < np && i < 128; i++) {
        if (i) s_addc(&k, '.');
        for (size_t j = 0; j < fl[i]; j++) s_addc(&k, f[i][j] == '.' ? '/' : f[i][j]);
    }
    s_adds(&k, " = ");
    s_add(&k, sv.p, sv.n);
    puts_(&k);
    s_clear(&sk);
}

static void sysline(const char *l, size_t n) {
    const char *c = memchr(l, ':', n);
    if (!c) {
        put(l, n);
        return;
    }
    size_t i = (size_t)(c - l);
    if (sk.n == i && (i == 0 || memcmp(sk.p, l, i) == 0)) {
        s_addc(&sv, ' ');
        s_add(&sv, l + i + 1, n - i - 1);
        return;
    }
    sysflush();
    s_clear(&sk);
    s_add(&sk, l, i);
    s_clear(&sv);
    s_add(&sv, l + i + 1, n - i - 1);
}
/* ---- systemd unit lines (awk: unit) ---- */

static int unit(const char *l, size_t n, const char *kind, size_t kl) {
    const char *f[8];
    size_t fl[8];
    size_t nf = split_ws(l, n, f, fl, 8);
    if (nf < 4) return 0;
    size_t k = memchr(f[0], '.', fl[0]) ? 0 : 1;
    if (kl == 6 && memcmp(kind, "failed", 6) == 0) {
        for (size_t j = k + 1; j <= k + 3; j++)
            if (j < nf && j < 8 && field_is(f[j], fl[j], "failed")) return 1;
        return 0;
    }
    if (k >= nf) return 0;
    return fl[k] >= kl + 1 && f[k][fl[k] - kl - 1] == '.' && memcmp(f[k] + fl[k] - kl, kind, kl) == 0;
}
static int lower(char c) { return c >= 'a' && c <= 'z'; }

/* /^[a-z][a-z ]*\t[0-7]+\t[0-9]+\t/ */
static int statlike(const char *l, size_t n) {
    size_t i = 0;
    if (n == 0 || !lower(l[0])) return 0;
    for (i = 1; i < n && (lower(l[i]) || l[i] == ' '); i++) {
    }
    if (i >= n || l[i] != '\t') return 0;
    size_t s = ++i;
    while (i < n && l[i] >= '0' && l[i] <= '7') i++;
    if (i == s || i >= n || l[i] != '\t') return 0;
    s = ++i;
    while (i < n && l[i] >= '0' && l[i] <= '9') i++;
    return i > s && i < n && l[i] == '\t';
}

/* /^[ \t]*(#|$)/ and friends */
static size_t lead_blanks(const char *l, size_t n) {
    size_t i = 0;
    while (i < n && (l[i] == ' ' || l[i] == '\t')) i++;
    return i;
}

static void put_file_line(const char *f, const char *l, size_t n) {
    static str o;
    s_clear(&o);
    s_adds(&o, f);
    s_addc(&o, '\t');
    s_add(&o, l, n);
    puts_(&o);
}

static void feed(const char *l, size_t n, const char *f) {
    if (!inpart) {
        static str head;
        s_clear(&head);
        s_adds(&head, "@@testbed-probe ");
        s_add(&head, nonce.p, nonce.n);
        s_addc(&head, ' ');
        if (s_starts(l, n, head.p))
            pfail = 0;
        else if (pfail) {
            s_clear(&head);
            s_adds(&head, "@@testbed-end ");
            s_add(&head, nonce.p, nonce.n);
            s_addc(&head, ' ');
            if (s_starts(l, n, head.p)) {
                const char *m = memmem(l, n, " rc=0 up=", 9);
                if (m) {
                    out(l, (size_t)(m - l));
                    outs(" rc=1 up=");
                    out(m + 9, n - (size_t)(m - l) - 9);
                    putchar('\n');
                    return;
                }
            }
        }
        out(l, n);
        putchar('\n');
        return;
    }
    if (mode_is("-") || mode_is("u"))
        put(l, n);
    else if (mode_is("S"))
        put_stat(l, n);
    else if (mode_is("X")) {
        if (statlike(l, n)) {
            xk = 's';
            put_stat(l, n);
        } else if (issha(l, n) || xk == 'h') {
            if (issha(l, n)) xk = 'h';
            if (nb == xbcap) xbuf = xrealloc(xbuf, sizeof(char *) * (xbcap = xbcap ? xbcap * 2 : 64));
            xbuf[nb++] = xstrndup(l, n);
        } else
            put(l, n);
    } else if (mode_is("g"))
        sysline(l, n);
    else if (mode_is("b")) {
        if (!*f)
            put(l, n);
        else if (n > 6 && s_starts(l, n, "btime ") && all_digits(l + 6, n - 6)) {
            char b[64];
            long long v = (long long)(strtod(xstrndup(l + 6, n - 6), NULL) + uptime() + 0.5);
            int k = snprintf(b, sizeof b, "clock=%lld", v);
            put(b, (size_t)k);
        }
    } else if (mode.n > 0 && mode.p[0] == 'U') {
        if (unit(l, n, mode.p + 1, mode.n - 1)) put(l, n);
    } else if (mode_is("s")) {
        /* split(l, a, ":"); a[1] ":" state ":" a[3] ":" a[4] ":" a[5] ":" a[8] */
        const char *a[9];
        size_t al[9];
        size_t nf = split_char(l, n, ':', a, al, 9);
        const char *state = (nf < 2 || al[1] == 0) ? "empty" : (a[1][0] == '!' || a[1][0] == '*') ? "locked" : "set";
        static str o;
        s_clear(&o);
        if (nf > 0) s_add(&o, a[0], al[0]);
        s_addc(&o, ':');
        s_adds(&o, state);
        static const size_t idx[] = {2, 3, 4, 7};
        for (int k = 0; k < 4; k++) {
            s_addc(&o, ':');
            if (nf > idx[k]) s_add(&o, a[idx[k]], al[idx[k]]);
        }
        puts_(&o);
    } else if (!*f)
        put(l, n);
    else if (mode_is("Llines")) {
        size_t i = lead_blanks(l, n);
        if (!(i == n || l[i] == '#')) put_file_line(f, l, n);
    } else if (mode_is("Lall")) {
        size_t i = lead_blanks(l, n);
        if (!(i < n && l[i] == '#')) put_file_line(f, l, n);
    } else if (mode_is("Lsudo")) {
        size_t i = lead_blanks(l, n);
        int inc = i < n && (l[i] == '#' || l[i] == '@') && s_starts(l + i + 1, n - i - 1, "include");
        int hashnum = i + 1 < n && l[i] == '#' && l[i + 1] >= '0' && l[i + 1] <= '9';
        int plain = !(i == n || l[i] == '#');
        if (inc || hashnum || plain) put_file_line(f, l, n);
    } else
        put(l, n);
}

typedef struct {
    const char *f;
} feedctx;

static void feed_line(const char *l, size_t n, void *ctx) { feed(l, n, ((feedctx *)ctx)->f); }

/* awk: readfile */
static void readfile(const char *f) {
    size_t len;
    char *b = read_file(f, &len);
    if (!b) {
        ferr = 1;
        static str m;
        s_clear(&m);
        s_adds(&m, "cannot read ");
        s_adds(&m, f);
        add_err(m.p, m.n);
        return;
    }
    feedctx c = {f};
    each_line(b, len, feed_line, &c);
    free(b);
}
/* ---- control lines (awk: ctl) ---- */
static void ctl(const char *s, size_t n) {
    const char *a[6];
    size_t al[6];
    size_t na = split_ws(s, n, a, al, 6);
    if (na == 0) return;
    char verb = al[0] == 1 ? a[0][0] : 0;
    const char *arg = n > 2 ? s + 2 : "";
    size_t argl = n > 2 ? n - 2 : 0;
    char *argz = xstrndup(arg, argl);
#define A(i) (na > (i) ? xstrndup(a[i], al[i]) : xstrndup("", 0))
    if (verb == 'p') {
        inpart = 1;
        s_clear(&pname);
        if (na > 1) s_add(&pname, a[1], al[1]);
        maxl = na > 2 ? strtol(A(2), NULL, 10) : 0;
        s_clear(&mode);
        if (na > 3) s_add(&mode, a[3], al[3]);
        cnt = more = cut = 0;
        ferr = 0;
        nerr = 0;
        free(seen.e);
        memset(&seen, 0, sizeof seen);
        if (mode_is("X")) {
            nb = 0;
            xk = 0;
        }
        s_clear(&wuse);
        outs("@@testbed-part ");
        out(nonce.p, nonce.n);
        putchar(' ');
        out(pname.p, pname.n);
        outs("@@\n");
    } else if (verb == 'c') {
        if (inpart) readfile(argz);
    } else if (verb == 'R') {
        if (na > 1 && field_is(a[1], al[1], "skip"))
            walk_skip(na > 2 ? a[2] : "", na > 2 ? al[2] : 0);
        else
            walk_root(na > 1 ? a[1] : "", na > 1 ? al[1] : 0, na > 2 ? a[2] : "", na > 2 ? al[2] : 0);
    } else if (verb == 'N') {
        if (na > 1) {
            size_t off = al[1] + 3;
            wlist(a[1], al[1], off < n ? s + off : "", off < n ? n - off : 0);
        }
    } else if (verb == 'w') {
        wload(A(1), A(2), A(3), A(4));
    } else if (verb == 'W' || verb == 'H' || verb == 'G') {
        if (inpart) wpart(A(1), verb);
    } else if (verb == 'F') {
        walk_stat_of(arg, argl);
    } else if (verb == 'h') {
        walk_hash_of(arg, argl);
    } else if (verb == 'Z') {
        if (inpart) unitstates(argz);
    } else if (verb == 'P') {
        if (inpart) proctable(arg, argl);
    } else if (verb == 'r') {
        for (size_t i = 0; i < nb; i++) put(xbuf[i], strlen(xbuf[i]));
        nb = 0;
    } else if (verb == 'e') {
        if (mode_is("g")) sysflush();
        str rc = {0};
        if (na > 2) s_add(&rc, a[2], al[2]);
        int rc0 = rc.n == 1 && rc.p[0] == '0';
        if (wuse.n) {
            walk_part_end(wuse.p, &rc);
            rc0 = rc.n == 1 && rc.p[0] == '0';
        }
        if (ferr && rc0) {
            s_clear(&rc);
            s_adds(&rc, "2");
            rc0 = 0;
        }
        if (!rc0) pfail = 1;
        if (more || cut) {
            printf("@@testbed-truncated ");
            out(nonce.p, nonce.n);
            printf(" max_lines=%ld more=%ld long_lines=%ld@@\n", maxl, more, cut);
        }
        size_t k = 0;
        for (size_t i = 0; i < nerr && k < 20; i++, k++) {
            outs("@@testbed-stderr ");
            out(nonce.p, nonce.n);
            outs("@@ ");
            outs(errs[i]);
            putchar('\n');
        }
        if (na > 3) {
            size_t off = al[0] + al[1] + al[2] + 3;
            if (off < n) {
                char *ef = xstrndup(s + off, n - off);
                size_t len;
                char *b = read_file(ef, &len);
                if (b) {
                    size_t start = 0;
                    for (size_t i = 0; i <= len && k < 20; i++) {
                        if (i < len && b[i] != '\n') continue;
                        if (i == len && start == len) break;
                        outs("@@testbed-stderr ");
                        out(nonce.p, nonce.n);
                        outs("@@ ");
                        out(b + start, (i - start) > 500 ? 500 : i - start);
                        putchar('\n');
                        k++;
                        start = i + 1;
                    }
                    free(b);
                }
            }
        }
        outs("@@testbed-partend ");
        out(nonce.p, nonce.n);
        putchar(' ');
        if (na > 1) out(a[1], al[1]);
        outs(" rc=");
        out(rc.p, rc.n);
        outs("@@\n");
        inpart = 0;
    }
#undef A
}

static int first = 1;

static void line(const char *l, size_t n, void *ctx) {
    (void)ctx;
    if (first) {
        first = 0;
        const char *m = memmem(l, n, "nonce=", 6);
        if (nonce.n == 0 && m) {
            const char *v = m + 6;
            size_t k = 0;
            while (v + k < l + n && v[k] != ' ' && v[k] != '@') k++;
            if (k > 0) {
                s_add(&nonce, v, k);
                s_addc(&cs, '\036');
                s_add(&cs, nonce.p, nonce.n);
                s_addc(&cs, ' ');
                out(l, n);
                putchar('\n');
                return;
            }
        }
    }
    const char *i = nonce.n ? memmem(l, n, cs.p, cs.n) : NULL;
    if (!i) {
        feed(l, n, "");
        return;
    }
    if (i > l) feed(l, (size_t)(i - l), "");
    ctl(i + cs.n, n - (size_t)(i - l) - cs.n);
}

int filter_main(void) {
    static char obuf[1 << 16];
    setvbuf(stdout, obuf, _IOFBF, sizeof obuf);
    str pending = {0};
    char buf[1 << 16];
    for (;;) {
        ssize_t r = read(0, buf, sizeof buf);
        if (r < 0) {
            if (errno == EINTR) continue;
            break;
        }
        if (r == 0) break;
        size_t start = 0;
        for (size_t i = 0; i < (size_t)r; i++) {
            if (buf[i] != '\n') continue;
            if (pending.n) {
                s_add(&pending, buf + start, i - start);
                line(pending.p, pending.n, NULL);
                s_clear(&pending);
            } else
                line(buf + start, i - start, NULL);
            start = i + 1;
        }
        s_add(&pending, buf + start, (size_t)r - start);
    }
    if (pending.n) line(pending.p, pending.n, NULL);
    fflush(stdout);
    return 0;
}
