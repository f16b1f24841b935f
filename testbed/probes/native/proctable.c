/* See proctable.h. */
#include "proctable.h"

#include <stdlib.h>
#include <string.h>

#include "part.h"

void proctable(const char *s, size_t sl) {
    ids();
    const char **p = xmalloc(sizeof(char *) * (sl / 2 + 2));
    size_t *pl = xmalloc(sizeof(size_t) * (sl / 2 + 2));
    size_t np = split_ws(s, sl, p, pl, sl / 2 + 2);
    int found = 0;
    str f = {0}, cmd = {0}, o = {0}, nm = {0}, st = {0}, ppid = {0}, uid = {0};
    for (size_t k = 0; k < np; k++) {
        s_clear(&f);
        s_add(&f, p[k], pl[k]);
        s_adds(&f, "/status");
        s_clear(&nm), s_clear(&st), s_clear(&ppid), s_clear(&uid);
        size_t len;
        char *b = read_file(f.p, &len);
        if (b) {
            size_t start = 0;
            for (size_t i = 0; i <= len; i++) {
                if (i < len && b[i] != '\n') continue;
                if (i == len && start == len) break;
                const char *x = b + start;
                size_t xl = i - start;
                start = i + 1;
                str *dst = NULL;
                size_t skip = 0;
                if (s_starts(x, xl, "Name:"))
                    dst = &nm, skip = 5;
                else if (s_starts(x, xl, "State:"))
                    dst = &st, skip = 6;
                else if (s_starts(x, xl, "PPid:"))
                    dst = &ppid, skip = 5;
                else if (s_starts(x, xl, "Uid:")) {
                    const char *a[4];
                    size_t al[4];
                    /* split(x, a, /[ \t]+/): a[3] is the effective uid */
                    size_t na = 0, j = 0;
                    while (j <= xl && na < 4) {
                        size_t s0 = j;
                        while (j < xl && x[j] != ' ' && x[j] != '\t') j++;
                        a[na] = x + s0;
                        al[na++] = j - s0;
                        while (j < xl && (x[j] == ' ' || x[j] == '\t')) j++;
                        if (j >= xl) break;
                    }
                    s_clear(&uid);
                    if (na >= 3) s_add(&uid, a[2], al[2]);
                    continue;
                }
                if (dst) {
                    size_t j = skip;
                    while (j < xl && (x[j] == ' ' || x[j] == '\t')) j++;
                    s_clear(dst);
                    s_add(dst, x + j, xl - j);
                    if (dst == &st && st.n > 1) st.n = 1;
                }
            }
            free(b);
        }
        if (!all_digits(ppid.p, ppid.n) || !all_digits(uid.p, uid.n)) continue;
        s_clear(&f);
        s_add(&f, p[k], pl[k]);
        s_adds(&f, "/cmdline");
        s_clear(&cmd);
        b = read_file(f.p, &len);
        if (b) {
            /* getline records joined by " " (a last '\n' ends a record, it does not start one) */
            size_t n = len;
            if (n > 0 && b[n - 1] == '\n') n--;
            for (size_t i = 0; i < n; i++) s_addc(&cmd, (b[i] == '\n' || b[i] == 0) ? ' ' : b[i]);
            free(b);
        }
        while (cmd.n > 0 && cmd.p[cmd.n - 1] == ' ') cmd.n--;
        for (size_t i = 0; i < cmd.n; i++) {
            unsigned char c = (unsigned char)cmd.p[i];
            if ((c >= 1 && c <= 31) || c == 127)
                cmd.p[i] = '.';
            else if (c >= 128)
                cmd.p[i] = '?';
        }
        s_clear(&o);
        s_add(&o, p[k] + 6, pl[k] > 6 ? pl[k] - 6 : 0);
        s_addc(&o, ' ');
        s_add(&o, ppid.p, ppid.n);
        s_addc(&o, ' ');
        entry *e = map_get(&uname, uid.p, uid.n);
        if (e)
            s_adds(&o, e->val);
        else
            s_add(&o, uid.p, uid.n);
        s_addc(&o, ' ');
        if (cmd.n == 0) {
            s_addc(&o, '[');
            s_add(&o, nm.p ? nm.p : "", nm.n);
            s_addc(&o, ']');
            if (st.n == 1 && st.p[0] == 'Z') s_adds(&o, " <defunct>");
        } else
            s_add(&o, cmd.p, cmd.n);
        puts_(&o);
        found++;
    }
    if (!found) {
        ferr = 1;
        add_errz("no process found under /proc");
    }
}
