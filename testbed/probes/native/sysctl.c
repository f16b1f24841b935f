/* See sysctl.h. */
#include "sysctl.h"

#include <dirent.h>
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "util.h"

static int printed, failed;

static void one_file(const char *path) {
    size_t len;
    char *b = read_file(path, &len);
    if (!b) {
        failed = 1;
        return;
    }
    if (len == 0) {
        free(b);
        return;
    }
    if (memchr(b, 0, len)) {
        fprintf(stderr, "grep: %s: binary file matches\n", path);
        printed = 1;
        free(b);
        return;
    }
    size_t start = 0;
    for (size_t i = 0; i <= len; i++) {
        if (i < len && b[i] != '\n') continue;
        if (i == len && start == len) break;
        fputs(path, stdout);
        putchar(':');
        out(b + start, i - start);
        putchar('\n');
        printed = 1;
        start = i + 1;
    }
    free(b);
}

static void tree(const char *path, int top) {
    struct stat st;
    if ((top ? stat(path, &st) : lstat(path, &st)) != 0) {
        failed = 1;
        return;
    }
    if (S_ISLNK(st.st_mode)) return;
    if (!S_ISDIR(st.st_mode)) {
        one_file(path);
        return;
    }
    DIR *d = opendir(path);
    if (!d) {
        failed = 1;
        return;
    }
    str child = {0};
    struct dirent *e;
    while ((e = readdir(d))) {
        if (e->d_name[0] == '.' && (!e->d_name[1] || (e->d_name[1] == '.' && !e->d_name[2]))) continue;
        s_clear(&child);
        s_adds(&child, path);
        s_addc(&child, '/');
        s_adds(&child, e->d_name);
        tree(child.p, 0);
    }
    closedir(d);
    free(child.p);
}

int sysctl_main(int argc, char **argv) {
    static char obuf[1 << 16];
    setvbuf(stdout, obuf, _IOFBF, sizeof obuf);
    for (int i = 0; i < argc; i++) tree(argv[i], 1);
    fflush(stdout);
    return failed ? 2 : printed ? 0 : 1;
}
