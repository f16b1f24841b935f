#define _GNU_SOURCE
/* See walk.h. Usage (snapshot.sh builds it from the same variables as its find command):
 *
 *   tbprobe walk --walk F --hash F --odd F [--skip PATH]... [--deadline S]
 *                [--hash-under DIR]... [--hash-path PATH]...
 *                [--secret-root DIR]... [--secret-prune NAME]... [--secret-name GLOB]...
 *                [--prune-path PATH]... [--prune-secret-root DIR]... [--prune-app-root DIR]...
 *                [--app-skip PATH] [--app-dep NAME]... -- START...
 *
 * For every entry under the start points (in order, depth first, directory entries in the
 * order the kernel lists them, symlinks not followed, not crossing into other file systems),
 * an entry equal to a --skip path is left out; a name or link target holding a newline or a tab
 * goes to --odd (one line) and is not entered; every other entry gets a walk line
 *   start TAB depth TAB type TAB mode TAB uid TAB gid TAB size TAB mtime TAB ctime TAB link TAB path
 * (find's %H %d %y %m %U %G %s %T@ %C@ %l %p). A regular file of at most 1023 KiB under a
 * --hash-under directory, equal to a --hash-path or a secret candidate gets a sha256sum line
 * in --hash; a secret candidate (a regular file under a --secret-root whose name and
 * directories are no --secret-prune name, named like a --secret-name and under 1 MiB, or of
 * at most 63 KiB and less than six levels deep) also gets one "PATH:MATCH" line per PEM
 * marker (grep -o -E '^-----BEGIN [A-Z0-9 ]+-----|.-----BEGIN ([A-Z0-9]+ )*PRIVATE KEY-----').
 * A directory is not entered when it is a --prune-path, a --secret-prune name below a
 * --prune-secret-root, or below a --prune-app-root: hidden, __pycache__, the --app-skip
 * path, an --app-dep name, or six levels down. Errors are reported on stderr as find and
 * sha256sum word them; exit status 0, 1 when an error was reported, 124 past the deadline.
 * One difference from find: an entry whose path is longer than PATH_MAX (4096 bytes, two
 * thousand levels of one-letter names) is reported as an error ("File name too long"), not
 * listed, since the walk works with whole paths. */
#include "walk.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <fnmatch.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "sha256.h"
#include "util.h"

#define HASH_MAX 1047552L /* find -size -1024k: under 1024 KiB rounded up */
#define SMALL_MAX 64512L  /* find -size -64k */

typedef struct {
    char **v;
    size_t n;
} list;

static list skip, hash_under, hash_path, secret_root, secret_prune, secret_name, prune_path, prune_sroot, prune_aroot,
    app_dep;
static const char *app_skip;
static FILE *fwalk, *fhash, *fodd;
static int rc;

static void add(list *l, char *s) {
    l->v = xrealloc(l->v, sizeof(char *) * (l->n + 1));
    l->v[l->n++] = s;
}

static void on_alarm(int sig) {
    (void)sig;
    _exit(124);
}

static void err_find(const char *path, int e) {
    fprintf(stderr, "find: '%s': %s\n", path, strerror(e));
    rc = 1;
}

/* -path "DIR/<anything>" (fnmatch without FNM_PATHNAME: any path below DIR) */
static int below(const char *path, const char *dir) {
    size_t n = strlen(dir);
    return strncmp(path, dir, n) == 0 && path[n] == '/';
}

/* -path "DIR/x/x/x/x/x/x": below DIR with at least five more slashes */
static int deep6(const char *path, const char *dir) {
    if (!below(path, dir)) return 0;
    int k = 0;
    for (const char *p = path + strlen(dir) + 1; *p; p++) k += *p == '/';
    return k >= 5;
}

static int any_name(const list *l, const char *base) {
    for (size_t i = 0; i < l->n; i++)
        if (fnmatch(l->v[i], base, 0) == 0) return 1;
    return 0;
}

/* -path "x/NAME/x" for one of l's names */
static int any_dir_in_path(const list *l, const char *path) {
    for (size_t i = 0; i < l->n; i++) {
        size_t n = strlen(l->v[i]);
        for (const char *p = strchr(path, '/'); p; p = strchr(p + 1, '/'))
            if (strncmp(p + 1, l->v[i], n) == 0 && p[1 + n] == '/') return 1;
    }
    return 0;
}

static int secret_candidate(const char *path, const char *base, long long size) {
    int under = 0;
    for (size_t i = 0; i < secret_root.n && !under; i++) under = below(path, secret_root.v[i]);
    if (!under) return 0;
    for (size_t i = 0; i < secret_prune.n; i++)
        if (fnmatch(secret_prune.v[i], base, 0) == 0) return 0;
    if (any_dir_in_path(&secret_prune, path)) return 0;
    if (any_name(&secret_name, base) && size <= HASH_MAX) return 1;
    if (size > SMALL_MAX) return 0;
    for (size_t i = 0; i < secret_root.n; i++)
        if (deep6(path, secret_root.v[i])) return 0;
    return 1;
}

static int to_hash(const char *path, const char *base, long long size, int secret) {
    if (size > HASH_MAX) return 0;
    for (size_t i = 0; i < hash_under.n; i++)
        if (below(path, hash_under.v[i])) return 1;
    for (size_t i = 0; i < hash_path.n; i++)
        if (strcmp(path, hash_path.v[i]) == 0) return 1;
    (void)base;
    return secret;
}

static int upper_digit(unsigned char c) { return (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9'); }

/* end of the longest (WORD " ")* "PRIVATE KEY-----" at s[q..n), or 0 */
static size_t pk_end(const unsigned char *s, size_t n, size_t q) {
    size_t best = 0;
    for (;;) {
        if (n - q >= 16 && memcmp(s + q, "PRIVATE KEY-----", 16) == 0) best = q + 16;
        size_t w = q;
        while (w < n && upper_digit(s[w])) w++;
        if (w == q || w >= n || s[w] != ' ') return best;
        q = w + 1;
    }
}

/* grep -o of the PEM pattern over one line: each leftmost-longest match, then on after it */
static void grep_line(const char *path, const unsigned char *s, size_t n) {
    size_t pos = 0;
    while (pos < n) {
        size_t end = 0;
        if (pos == 0 && n >= 11 && memcmp(s, "-----BEGIN ", 11) == 0) {
            size_t i = 11;
            while (i < n && (upper_digit(s[i]) || s[i] == ' ')) i++;
            if (i > 11 && n - i >= 5 && memcmp(s + i, "-----", 5) == 0) end = i + 5;
        }
        if (n - pos > 12 && memcmp(s + pos + 1, "-----BEGIN ", 11) == 0) {
            size_t e = pk_end(s, n, pos + 12);
            if (e > end) end = e;
        }
        if (!end) {
            pos++;
            continue;
        }
        fprintf(fhash, "%s:", path);
        fwrite(s + pos, 1, end - pos, fhash);
        fputc('\n', fhash);
        pos = end;
    }
}

static void sha_line(const char *path, const char *hex) {
    int esc = strpbrk(path, "\\\n\r") != NULL;
    if (!esc) {
        fprintf(fhash, "%s  %s\n", hex, path);
        return;
    }
    fprintf(fhash, "\\%s  ", hex);
    for (const char *p = path; *p; p++) {
        if (*p == '\\')
            fputs("\\\\", fhash);
        else if (*p == '\n')
            fputs("\\n", fhash);
        else if (*p == '\r')
            fputs("\\r", fhash);
        else
            fputc(*p, fhash);
    }
    fputc('\n', fhash);
}

static void hash_and_grep(const char *path, int hash, int grep) {
    int fd = open(path, O_RDONLY | O_NOCTTY | O_NONBLOCK | O_CLOEXEC);
    if (fd < 0) {
        if (hash) {
            fprintf(stderr, "sha256sum: %s: %s\n", path, strerror(errno));
            rc = 1;
        }
        return;
    }
    sha256_ctx c;
    sha256_init(&c);
    str line = {0};
    unsigned char buf[65536];
    int failed = 0;
    for (;;) {
        ssize_t r = read(fd, buf, sizeof buf);
        if (r < 0) {
            if (errno == EINTR) continue;
            if (hash) {
                fprintf(stderr, "sha256sum: %s: %s\n", path, strerror(errno));
                rc = 1;
            }
            failed = 1;
            break;
        }
        if (r == 0) break;
        if (hash) sha256_update(&c, buf, (size_t)r);
        if (grep) {
            size_t start = 0;
            for (size_t i = 0; i < (size_t)r; i++) {
                if (buf[i] != '\n') continue;
                s_add(&line, (char *)buf + start, i - start);
                grep_line(path, (unsigned char *)line.p, line.n);
                s_clear(&line);
                start = i + 1;
            }
            s_add(&line, (char *)buf + start, (size_t)r - start);
        }
    }
    close(fd);
    if (grep && line.n) grep_line(path, (unsigned char *)line.p, line.n);
    free(line.p);
    if (hash && !failed) {
        char hex[65];
        sha256_hex(&c, hex);
        sha_line(path, hex);
    }
}

static char type_letter(mode_t m) {
    if (S_ISREG(m)) return 'f';
    if (S_ISDIR(m)) return 'd';
    if (S_ISLNK(m)) return 'l';
    if (S_ISFIFO(m)) return 'p';
    if (S_ISSOCK(m)) return 's';
    if (S_ISBLK(m)) return 'b';
    if (S_ISCHR(m)) return 'c';
    return 'U';
}

static int pruned_dir(const char *path, const char *base) {
    for (size_t i = 0; i < prune_path.n; i++)
        if (strcmp(path, prune_path.v[i]) == 0) return 1;
    for (size_t i = 0; i < prune_sroot.n; i++)
        if (below(path, prune_sroot.v[i]) && any_name(&secret_prune, base)) return 1;
    for (size_t i = 0; i < prune_aroot.n; i++) {
        if (below(path, prune_aroot.v[i]) &&
            ((base[0] == '.' && base[1]) || strcmp(base, "__pycache__") == 0 ||
             (app_skip && strcmp(path, app_skip) == 0) || any_name(&app_dep, base)))
            return 1;
        if (deep6(path, prune_aroot.v[i])) return 1;
    }
    return 0;
}

static void visit(const char *start, const char *path, int depth, dev_t dev);

static void entries(const char *start, const char *path, int depth, dev_t dev) {
    DIR *d = opendir(path);
    if (!d) {
        err_find(path, errno);
        return;
    }
    str child = {0};
    for (;;) {
        errno = 0;
        struct dirent *e = readdir(d);
        if (!e) {
            if (errno) err_find(path, errno);
            break;
        }
        if (e->d_name[0] == '.' && (!e->d_name[1] || (e->d_name[1] == '.' && !e->d_name[2]))) continue;
        s_clear(&child);
        s_adds(&child, path);
        if (!(child.n && child.p[child.n - 1] == '/')) s_addc(&child, '/');
        s_adds(&child, e->d_name);
        visit(start, child.p, depth + 1, dev);
    }
    closedir(d);
    free(child.p);
}

static void visit(const char *start, const char *path, int depth, dev_t dev) {
    for (size_t i = 0; i < skip.n; i++)
        if (strcmp(path, skip.v[i]) == 0) return;
    struct stat st;
    if (lstat(path, &st) != 0) {
        err_find(path, errno);
        return;
    }
    static char link[4096]; /* used before the recursion only: deep trees keep small frames */
    link[0] = 0;
    if (S_ISLNK(st.st_mode)) {
        ssize_t k = readlink(path, link, sizeof link - 1);
        link[k > 0 ? k : 0] = 0;
    }
    if (strpbrk(path, "\n\t") || strpbrk(link, "\n\t")) {
        fprintf(fodd, "%s\n", path);
        return;
    }
    const char *base = strrchr(path, '/');
    base = (base && base[1]) ? base + 1 : path;
    fprintf(fwalk, "%s\t%d\t%c\t%o\t%u\t%u\t%lld\t%lld.%09ld0\t%lld.%09ld0\t%s\t%s\n", start, depth,
            type_letter(st.st_mode), (unsigned)(st.st_mode & 07777), (unsigned)st.st_uid, (unsigned)st.st_gid,
            (long long)st.st_size, (long long)st.st_mtim.tv_sec, st.st_mtim.tv_nsec, (long long)st.st_ctim.tv_sec,
            st.st_ctim.tv_nsec, link, path);
    if (S_ISREG(st.st_mode)) {
        int secret = secret_root.n && secret_candidate(path, base, st.st_size);
        int hash = to_hash(path, base, st.st_size, secret);
        if (hash || secret) hash_and_grep(path, hash, secret);
    }
    if (!S_ISDIR(st.st_mode) || pruned_dir(path, base)) return;
    if (depth > 0 && st.st_dev != dev) return; /* -xdev */
    entries(start, path, depth, depth == 0 ? st.st_dev : dev);
}

static FILE *open_out(const char *path) {
    FILE *f = fopen(path, "w");
    if (!f) {
        fprintf(stderr, "tbprobe walk: %s: %s\n", path, strerror(errno));
        exit(2);
    }
    return f;
}

int walk_main(int argc, char **argv) {
    const char *walkf = NULL, *hashf = NULL, *oddf = NULL;
    int i = 0;
    for (; i < argc; i++) {
        char *a = argv[i];
        if (strcmp(a, "--") == 0) {
            i++;
            break;
        }
        if (i + 1 >= argc) {
            fprintf(stderr, "tbprobe walk: %s needs a value\n", a);
            return 2;
        }
        char *v = argv[++i];
        if (!strcmp(a, "--walk")) walkf = v;
        else if (!strcmp(a, "--hash")) hashf = v;
        else if (!strcmp(a, "--odd")) oddf = v;
        else if (!strcmp(a, "--skip")) add(&skip, v);
        else if (!strcmp(a, "--deadline")) {
            signal(SIGALRM, on_alarm);
            alarm((unsigned)atoi(v));
        } else if (!strcmp(a, "--hash-under")) add(&hash_under, v);
        else if (!strcmp(a, "--hash-path")) add(&hash_path, v);
        else if (!strcmp(a, "--secret-root")) add(&secret_root, v);
        else if (!strcmp(a, "--secret-prune")) add(&secret_prune, v);
        else if (!strcmp(a, "--secret-name")) add(&secret_name, v);
        else if (!strcmp(a, "--prune-path")) add(&prune_path, v);
        else if (!strcmp(a, "--prune-secret-root")) add(&prune_sroot, v);
        else if (!strcmp(a, "--prune-app-root")) add(&prune_aroot, v);
        else if (!strcmp(a, "--app-skip")) app_skip = v;
        else if (!strcmp(a, "--app-dep")) add(&app_dep, v);
        else {
            fprintf(stderr, "tbprobe walk: unknown option %s\n", a);
            return 2;
        }
    }
    if (!walkf || !hashf || !oddf) {
        fprintf(stderr, "tbprobe walk: --walk, --hash and --odd are required\n");
        return 2;
    }
    fwalk = open_out(walkf);
    fhash = open_out(hashf);
    fodd = open_out(oddf);
    static char b1[1 << 16], b2[1 << 16];
    setvbuf(fwalk, b1, _IOFBF, sizeof b1);
    setvbuf(fhash, b2, _IOFBF, sizeof b2);
    for (; i < argc; i++) visit(argv[i], argv[i], 0, 0);
    fclose(fwalk);
    fclose(fhash);
    fclose(fodd);
    return rc;
}
