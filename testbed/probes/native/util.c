/* See util.h. */
#include "util.h"

#include <errno.h>
#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

void die(const char *what) {
    fprintf(stderr, "tbprobe: %s\n", what);
    exit(70);
}

void *xmalloc(size_t n) {
    void *p = malloc(n ? n : 1);
    if (!p) die("out of memory");
    return p;
}

void *xrealloc(void *p, size_t n) {
    p = realloc(p, n ? n : 1);
    if (!p) die("out of memory");
    return p;
}

char *xstrndup(const char *s, size_t n) {
    char *p = xmalloc(n + 1);
    memcpy(p, s, n);
    p[n] = 0;
    return p;
}

void s_reserve(str *s, size_t more) {
    if (s->n + more + 1 <= s->cap) return;
    size_t cap = s->cap ? s->cap : 64;
    while (cap < s->n + more + 1) cap *= 2;
    s->p = xrealloc(s->p, cap);
    s->cap = cap;
}

void s_add(str *s, const char *p, size_t n) {
    s_reserve(s, n);
    memcpy(s->p + s->n, p, n);
    s->n += n;
    s->p[s->n] = 0;
}

void s_adds(str *s, const char *z) { s_add(s, z, strlen(z)); }

void s_addc(str *s, char c) { s_add(s, &c, 1); }

void s_clear(str *s) {
    s->n = 0;
    if (s->p) s->p[0] = 0;
}

int s_starts(const char *p, size_t n, const char *prefix) {
    size_t k = strlen(prefix);
    return n >= k && memcmp(p, prefix, k) == 0;
}

static size_t hash(const char *k, size_t n) {
    size_t h = 1469598103934665603ULL;
    for (size_t i = 0; i < n; i++) h = (h ^ (unsigned char)k[i]) * 1099511628211ULL;
    return h;
}

entry *map_get(const map *m, const char *k, size_t n) {
    if (!m->cap) return NULL;
    for (size_t i = hash(k, n) & (m->cap - 1);; i = (i + 1) & (m->cap - 1)) {
        entry *e = &m->e[i];
        if (!e->key) return NULL;
        if (e->klen == n && memcmp(e->key, k, n) == 0) return e;
    }
}

entry *map_put(map *m, const char *k, size_t n, int *made) {
    if ((m->used + 1) * 2 > m->cap) {
        map grown = {xmalloc(sizeof(entry) * (m->cap ? m->cap * 2 : 64)), m->cap ? m->cap * 2 : 64, 0};
        memset(grown.e, 0, sizeof(entry) * grown.cap);
        for (size_t i = 0; i < m->cap; i++) {
            entry *old = &m->e[i];
            if (!old->key) continue;
            size_t j = hash(old->key, old->klen) & (grown.cap - 1);
            while (grown.e[j].key) j = (j + 1) & (grown.cap - 1);
            grown.e[j] = *old;
            grown.used++;
        }
        free(m->e);
        *m = grown;
    }
    size_t i = hash(k, n) & (m->cap - 1);
    for (;; i = (i + 1) & (m->cap - 1)) {
        entry *e = &m->e[i];
        if (!e->key) break;
        if (e->klen == n && memcmp(e->key, k, n) == 0) {
            if (made) *made = 0;
            return e;
        }
    }
    entry *e = &m->e[i];
    e->key = xstrndup(k, n);
    e->klen = n;
    e->val = NULL;
    e->ival = 0;
    m->used++;
    if (made) *made = 1;
    return e;
}

char *read_file(const char *path, size_t *len) {
    int fd = open(path, O_RDONLY | O_CLOEXEC);
    if (fd < 0) return NULL;
    size_t cap = 4096, n = 0;
    char *buf = xmalloc(cap + 1);
    for (;;) {
        if (n == cap) buf = xrealloc(buf, (cap *= 2) + 1);
        ssize_t r = read(fd, buf + n, cap - n);
        if (r < 0) {
            if (errno == EINTR) continue;
            int err = errno;
            close(fd);
            free(buf);
            errno = err;
            return NULL;
        }
        if (r == 0) break;
        n += (size_t)r;
    }
    close(fd);
    buf[n] = 0;
    *len = n;
    return buf;
}

void each_line(const char *buf, size_t len, line_fn fn, void *ctx) {
    size_t start = 0;
    for (size_t i = 0; i < len; i++) {
        if (buf[i] == '\n') {
            fn(buf + start, i - start, ctx);
            start = i + 1;
        }
    }
    if (start < len) fn(buf + start, len - start, ctx);
}

size_t split_char(const char *l, size_t n, char sep, const char **f, size_t *fl, size_t max) {
    size_t k = 0, start = 0;
    if (n == 0) return 0; /* awk: an empty string has no fields */
    for (size_t i = 0; i <= n; i++) {
        if (i == n || l[i] == sep) {
            if (k < max) {
                f[k] = l + start;
                fl[k] = i - start;
            }
            k++;
            start = i + 1;
        }
    }
    return k;
}

size_t split_ws(const char *l, size_t n, const char **f, size_t *fl, size_t max) {
    size_t k = 0, i = 0;
    while (i < n) {
        while (i < n && (l[i] == ' ' || l[i] == '\t' || l[i] == '\n')) i++;
        if (i >= n) break;
        size_t s = i;
        while (i < n && l[i] != ' ' && l[i] != '\t' && l[i] != '\n') i++;
        if (k < max) {
            f[k] = l + s;
            fl[k] = i - s;
        }
        k++;
    }
    return k;
}

int all_digits(const char *p, size_t n) {
    if (n == 0) return 0;
    for (size_t i = 0; i < n; i++)
        if (p[i] < '0' || p[i] > '9') return 0;
    return 1;
}

void out(const char *p, size_t n) { fwrite(p, 1, n, stdout); }

void outs(const char *z) { fputs(z, stdout); }
