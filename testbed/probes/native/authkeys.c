/* See authkeys.h. */
#include "authkeys.h"

#include <ctype.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "util.h"

static char **pat;
static size_t npat;
static map seen;

/* awk's gsub(/LIT/, repl, s) for a literal pattern: "&" in repl is the match, "\&" an "&" */
static void gsub_lit(str *s, const char *lit, const char *repl) {
    size_t ll = strlen(lit);
    str o = {0};
    for (size_t i = 0; i < s->n;) {
        if (i + ll <= s->n && memcmp(s->p + i, lit, ll) == 0) {
            for (const char *r = repl; *r; r++) {
                if (r[0] == '\\' && r[1] == '&') {
                    s_addc(&o, '&');
                    r++;
                } else if (*r == '&')
                    s_adds(&o, lit);
                else
                    s_addc(&o, *r);
            }
            i += ll;
        } else
            s_addc(&o, s->p[i++]);
    }
    s_clear(s);
    if (o.n) s_add(s, o.p, o.n);
    free(o.p);
}

static void config_line(const char *l, size_t n, void *ctx) {
    (void)ctx;
    size_t i = 0;
    while (i < n && (l[i] == ' ' || l[i] == '\t')) i++;
    static const char key[] = "authorizedkeysfile";
    if (n - i < 18) return;
    for (size_t k = 0; k < 18; k++)
        if (tolower((unsigned char)l[i + k]) != key[k]) return;
    const char *rest = l + i + 18;
    size_t rn = n - i - 18;
    for (size_t a = 0; a < rn;) {
        while (a < rn && (rest[a] == ' ' || rest[a] == '\t')) a++;
        size_t b = a;
        while (b < rn && rest[b] != ' ' && rest[b] != '\t') b++;
        if (b > a && !(b - a == 4 && memcmp(rest + a, "none", 4) == 0)) {
            pat = xrealloc(pat, sizeof(char *) * (npat + 1));
            pat[npat++] = xstrndup(rest + a, b - a);
        }
        a = b;
    }
}

static void emit(const char *path, size_t n) {
    char *z = xstrndup(path, n);
    struct stat st;
    int made;
    if (stat(z, &st) == 0 && S_ISREG(st.st_mode)) {
        map_put(&seen, z, n, &made);
        if (made) {
            out(z, n);
            putchar('\n');
        }
    }
    free(z);
}

static map candidates;

static void passwd_line(const char *l, size_t n, void *ctx) {
    (void)ctx;
    const char *f[7];
    size_t fl[7];
    size_t nf = split_char(l, n, ':', f, fl, 7);
    if (nf < 6 || fl[5] == 0) return;
    if (npat == 0) {
        pat = xmalloc(sizeof(char *) * 2);
        pat[0] = xstrndup(".ssh/authorized_keys", 20);
        pat[1] = xstrndup(".ssh/authorized_keys2", 21);
        npat = 2;
    }
    char *home = xstrndup(f[5], fl[5]), *user = xstrndup(f[0], fl[0]), *uid = xstrndup(f[2], nf > 2 ? fl[2] : 0);
    for (size_t k = 0; k < npat; k++) {
        str p = {0};
        s_adds(&p, pat[k]);
        gsub_lit(&p, "%h", home);
        gsub_lit(&p, "%u", user);
        gsub_lit(&p, "%U", uid);
        gsub_lit(&p, "%%", "%");
        if (p.n == 0 || p.p[0] != '/') {
            str q = {0};
            s_adds(&q, home);
            s_addc(&q, '/');
            if (p.n) s_add(&q, p.p, p.n);
            free(p.p);
            p = q;
        }
        str c = {0}; /* gsub(/\/\/+/, "/") */
        for (size_t i = 0; i < p.n; i++)
            if (!(p.p[i] == '/' && c.n && c.p[c.n - 1] == '/' && i > 0 && p.p[i - 1] == '/')) s_addc(&c, p.p[i]);
        int made;
        map_put(&candidates, c.p ? c.p : "", c.n, &made);
        if (made) emit(c.p ? c.p : "", c.n);
        free(p.p);
        free(c.p);
    }
    free(home), free(user), free(uid);
}

int authkeys_main(int argc, char **argv) {
    static char obuf[1 << 14];
    setvbuf(stdout, obuf, _IOFBF, sizeof obuf);
    size_t len;
    char *b;
    for (int i = 0; i < argc; i++)
        if ((b = read_file(argv[i], &len))) each_line(b, len, config_line, NULL), free(b);
    if ((b = read_file("/etc/passwd", &len))) each_line(b, len, passwd_line, NULL), free(b);
    emit("/root/.ssh/authorized_keys", 26);
    emit("/root/.ssh/authorized_keys2", 27);
    fflush(stdout);
    return 0;
}
