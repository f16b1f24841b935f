#!/bin/sh
# testbed machine-state snapshot.
#
# Uploaded to a guest and run once as root: `sh snapshot.sh [PROBE...]` (no arguments = all
# probes). POSIX sh only: must run under dash, bash and busybox ash. It never uses `set -e`;
# a failing or missing tool only marks its own probe or part unavailable/failed. It reads
# state and changes nothing outside its private work directory (under /run or /dev/shm when
# writable), which it removes on exit, or the directories its caller names for it:
# TESTBED_PROBE_WORKDIR (a work directory kept between runs) and TESTBED_PROBE_CACHE (dpkg's
# answers while its database is unchanged; see "One walk" below). TESTBED_PROBE_NATIVE names
# the native helper (`tbprobe`, a static binary the harness builds and places on the guest):
# where it is an executable file, it stands in for the filter's awk, the walk's find,
# sha256sum and grep, the sysctl probe's grep, the authorized_keys files' awk and timeout,
# with the same output byte for byte; the first line then says native=1.
#
# Output grammar. NONCE is a random token drawn per run; a line is a marker only if it is
# exactly one of the forms below AND carries this run's NONCE, so probe output (file names,
# crontab lines, ...) can never be mistaken for a marker.
#
#   @@testbed-snapshot v=1 nonce=NONCE pid=PID up=SECONDS native=0|1@@   first line
#   @@testbed-probe NONCE NAME up=SECONDS@@                      a probe starts
#   @@testbed-part NONCE PART@@                                  a part (one command) starts
#     ...the command's stdout, one line each (always newline-terminated, lines capped)...
#   @@testbed-truncated NONCE max_lines=N more=0|1 long_lines=M@@  output was capped
#   @@testbed-stderr NONCE@@ TEXT                                first stderr lines, one each
#   @@testbed-partend NONCE PART rc=RC@@                         a part ends (RC = exit status)
#   @@testbed-unavailable NONCE NAME: REASON@@                   probe or part NAME cannot run
#   @@testbed-end NONCE NAME rc=0|1 up=SECONDS@@                 a probe ends (1 = a part failed)
#   @@testbed-done NONCE probes=COUNT up=SECONDS@@               last line: the run completed
#
# Bounds: every part's output is capped (default 5000 lines, 4096 bytes per line); walks use
# find -xdev with pruning and a timeout; files are hashed only when smaller than 1 MiB; /proc,
# /sys and /dev are never walked (only /dev/shm is listed, as a temp area; /proc/sys is read
# for sysctl values).
#
# Speed. Guests may run under full emulation (QEMU TCG), where every process spawn costs tens
# of milliseconds, so the script spawns as few processes as it can: all output goes through
# ONE awk process (the "filter", TB_FILTER below) that frames and caps every part, reads
# plain files (passwd, crontabs, /proc/mounts, the process table, ...) itself, names file
# owners, and filters shared command output (one `systemctl list-units` serves services
# and timers). The shell talks to the filter with control lines "\036NONCE VERB ARGS"
# (unforgeable: they carry the nonce; found even after an unterminated last output line):
#   p NAME MAX MODE                  part begin; MODE - (plain), u (unique lines), S (stat
#                                    lines: numeric owner/group placeholders get their names
#                                    from /etc/passwd and /etc/group, read once instead of
#                                    two NSS lookups per file), X (S, but sha256sum lines are
#                                    kept back for `r`),
#                                    Ufailed|Uservice|Utimer (systemd units), s (shadow
#                                    states), Llines|Lall|Lsudo (FILE<TAB>LINE records of
#                                    `c` files), g (`grep -r` lines of /proc/sys turned
#                                    into `sysctl -a` lines), b (boot: the btime
#                                    line of a `c /proc/stat` becomes clock=EPOCH)
#   c FILE                           feed FILE's lines through the part's mode
#   r                                replay the lines an X part kept back (through put only)
#   e NAME RC [ERRFILE]              part end; the first lines of ERRFILE are its stderr
#   R SET ROOT, w WALK HASH ERR RC   the one walk's roots per set and its result files
#   N names|prune|deps WORD...       secret name globs, dirs secrets skip, app's dep trees
#   W SET, H SET, G SET              a set's stat lines, hashes, PEM headers (from the walk)
#   F FILE, h FILE, Z DIR            one file's stat line or hash; unit-file states under DIR
#   P /proc/PID...                   the process table, read from /proc (no ps process)

# TESTBED_PROBE_PATH overrides the search path (tests use it to run with busybox tools only).
PATH=${TESTBED_PROBE_PATH:-/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin}
LC_ALL=C
QUOTING_STYLE=c
# No colours, pagers or locale-dependent output from any tool.
EINFO_COLOR=NO
SYSTEMD_COLORS=0
SYSTEMD_PAGER=
PAGER=cat
# systemctl's D-Bus calls give up after 25 s by default; under emulation PID 1 needs about
# that long for list-unit-files alone, which then failed and lost every unit file state.
SYSTEMD_BUS_TIMEOUT=90
export PATH LC_ALL QUOTING_STYLE EINFO_COLOR SYSTEMD_COLORS SYSTEMD_PAGER PAGER SYSTEMD_BUS_TIMEOUT
unset LANG LANGUAGE
umask 077

TB_TAB=$(printf '\t')
TB_NL='
'
TB_MAXLINE=4096
TB_COUNT=0
TB_SEQ=0
TB_PROBE=
TB_PROBE_RC=0
TB_UP=
TB_UNITS=
TB_UNITS_RC=
TB_KREL=
# stat format shared by every file listing: type mode uid user gid group size mtime name.
# The name (%N) comes last; GNU stat quotes it C-style (QUOTING_STYLE=c), busybox prints it raw.
# User and group are printed as numbers here (%U/%G cost two NSS lookups, each re-reading
# /etc/passwd or /etc/group, per file) and named by the filter (mode S).
TB_STATFMT="%F${TB_TAB}%a${TB_TAB}%u${TB_TAB}%u${TB_TAB}%g${TB_TAB}%g${TB_TAB}%s${TB_TAB}%Y${TB_TAB}%N"
# Roots listed by `tmp_files` and searched by `secrets` (overridable for tests; no blanks).
TB_TMP_ROOTS=${TESTBED_PROBE_TMP_DIRS:-/tmp /var/tmp /dev/shm}
TB_SECRET_ROOTS=${TESTBED_PROBE_SECRET_DIRS:-/root /home /tmp /var/tmp /opt /srv /var/www /mnt}
# What `secrets` looks for by name (find -name globs) and the directories it does not enter;
# the one walk sends both to the filter (verb N), which matches them itself.
TB_SECRET_NAMES="*.pem *.key id_rsa id_dsa id_ecdsa id_ed25519 id_ecdsa_sk id_ed25519_sk *.p12 *.pfx *.jks \
*.keystore *.kdbx *.ppk *.crt *.cer *.der *.gpg .htpasswd .pgpass .netrc .git-credentials credentials* \
*.vault_pass .my.cnf"
TB_SECRET_PRUNE=".cache node_modules .git site-packages dist-packages .npm .cargo .rustup"
# Roots listed by `app_files` (application and user data; small, telling roots first so that
# the cap cuts the big ones) and the harness's own tree it leaves out (overridable for tests).
TB_APP_ROOTS=${TESTBED_PROBE_APP_DIRS:-/srv /var/www /opt /root /home /usr/local}
TB_APP_SKIP=${TESTBED_PROBE_APP_SKIP:-/opt/testbed}
# Dependency trees `app_files` lists but does not enter.
TB_APP_DEPS="node_modules site-packages dist-packages"
# The directory whose presence means "systemd is PID 1" (overridable for tests).
TB_SYSTEMD_RUN=${TESTBED_PROBE_SYSTEMD_RUN:-/run/systemd/system}
# The native helper (see the top): used only when it is an executable regular file and the
# portable path is not asked for.
TB_NATIVE=${TESTBED_PROBE_NATIVE:-}
if [ -z "$TB_NATIVE" ] || [ -n "${TESTBED_PROBE_PORTABLE:-}" ] || [ ! -f "$TB_NATIVE" ] || [ ! -x "$TB_NATIVE" ]; then
    TB_NATIVE=
fi
TB_NATIVE_ON=${TB_NATIVE:+1}
TB_NATIVE_ON=${TB_NATIVE_ON:-0}
# A directory of the harness's (where it keeps the native helper) that no probe lists, like
# the work directory.
TB_HIDE=${TESTBED_PROBE_HIDE:-/nonexistent}

# The output filter (see "Speed" above). Portable awk: mawk, gawk, busybox and one-true-awk.
TB_FILTER='
function uptime(   u, a) {
    u = 0
    if ((getline u < "/proc/uptime") > 0) { split(u, a, " "); u = a[1] + 0 }
    close("/proc/uptime")
    return u
}
function put(l) {
    if (mode == "u") { if (l in seen) return; seen[l] = 1 }
    if (cnt >= max) { more = 1; return }
    cnt++
    if (length(l) > w) { l = substr(l, 1, w); cut++ }
    print l
}
function sysline(l,   i, p) {
    i = index(l, ":")
    if (i == 0) { put(l); return }
    p = substr(l, 1, i - 1)
    if (p == sk) { sv = sv " " substr(l, i + 1); return }
    sysflush()
    sk = p; sv = substr(l, i + 1)
}
function sysflush(   np, parts, i, c, k) {
    if (sk == "" || substr(sk, 1, 10) != "/proc/sys/" || sk ~ /\/(base_reachable_time|retrans_time)$/) {
        sk = ""; return
    }
    np = split(substr(sk, 11), parts, "/"); k = ""
    for (i = 1; i <= np; i++) { c = parts[i]; gsub(/\./, "/", c); k = (i == 1) ? c : k "." c }
    put(k " = " sv)
    sk = ""
}
function unit(l, kind,   a, k, u) {
    if (split(l, a, " ") < 4) return 0
    k = 1
    if (a[1] !~ /\./) k = 2
    u = a[k]
    if (kind == "failed") return a[k + 1] == "failed" || a[k + 2] == "failed" || a[k + 3] == "failed"
    return substr(u, length(u) - length(kind)) == "." kind
}
function ids(   x, a) {
    if (idsread) return
    idsread = 1
    while ((getline x < "/etc/passwd") > 0) { split(x, a, ":"); if (a[3] != "" && !(a[3] in uname)) uname[a[3]] = a[1] }
    close("/etc/passwd")
    while ((getline x < "/etc/group") > 0) { split(x, a, ":"); if (a[3] != "" && !(a[3] in gname)) gname[a[3]] = a[1] }
    close("/etc/group")
}
function statline(l,   f, nf, i, o) {
    nf = split(l, f, "\t")
    if (nf < 9 || f[3] !~ /^[0-9]+$/ || f[5] !~ /^[0-9]+$/ || f[4] != f[3] || f[6] != f[5]) return l
    ids()
    o = f[1] "\t" f[2] "\t" f[3] "\t" ((f[3] in uname) ? uname[f[3]] : "UNKNOWN")
    o = o "\t" f[5] "\t" ((f[5] in gname) ? gname[f[5]] : "UNKNOWN")
    for (i = 7; i <= nf; i++) o = o "\t" f[i]
    return o
}
function issha(l,   o) {
    o = (substr(l, 1, 1) == "\\") ? 2 : 1
    return substr(l, o + 64, 1) == " " && substr(l, o, 64) !~ /[^0-9a-f]/ && length(l) > o + 65
}
function feed(l, f,   a, s) {
    if (!inpart) {
        # a probe whose part failed ends with rc=1 (a walk part learns its status here)
        if (index(l, "@@testbed-probe " n " ") == 1) pfail = 0
        else if (pfail && index(l, "@@testbed-end " n " ") == 1) sub(/ rc=0 up=/, " rc=1 up=", l)
        print l
        return
    }
    if (mode == "-" || mode == "u") put(l)
    else if (mode == "S") put(statline(l))
    else if (mode == "X") {
        if (l ~ /^[a-z][a-z ]*\t[0-7]+\t[0-9]+\t/) { xk = "s"; put(statline(l)) }
        else if (issha(l)) { xk = "h"; buf[++nb] = l }
        else if (xk == "h") buf[++nb] = l
        else put(l)
    }
    else if (mode == "g") sysline(l)
    else if (mode == "b") {
        if (f == "") put(l)
        else if (l ~ /^btime [0-9]+$/) put("clock=" int(substr(l, 7) + uptime() + 0.5))
    }
    else if (substr(mode, 1, 1) == "U") { if (unit(l, substr(mode, 2))) put(l) }
    else if (mode == "s") {
        split(l, a, ":")
        if (a[2] == "") s = "empty"
        else if (a[2] ~ /^[!*]/) s = "locked"
        else s = "set"
        put(a[1] ":" s ":" a[3] ":" a[4] ":" a[5] ":" a[8])
    } else if (f == "") put(l)
    else if (mode == "Llines") { if (l !~ /^[ \t]*(#|$)/) put(f "\t" l) }
    else if (mode == "Lall") { if (l !~ /^[ \t]*#/) put(f "\t" l) }
    else if (mode == "Lsudo") {
        if (l ~ /^[ \t]*[#@]include/ || l ~ /^[ \t]*#[0-9]/ || l !~ /^[ \t]*(#|$)/) put(f "\t" l)
    } else put(l)
}
function readfile(f,   r, x) {
    while ((r = (getline x < f)) > 0) feed(x, f)
    close(f)
    if (r < 0) { ferr = 1; errs[++nerr] = "cannot read " f }
}
# ---- the walk index (verbs R, w, W, H, G, F, h, Z; see "One walk" below) ----
function typename(y, sz) {
    if (y == "f") return (sz == "0") ? "regular empty file" : "regular file"
    if (y == "d") return "directory"
    if (y == "l") return "symbolic link"
    if (y == "p") return "fifo"
    if (y == "s") return "socket"
    if (y == "b") return "block special file"
    if (y == "c") return "character special file"
    return "weird file"
}
function cq(s,   o, i, c, k) {
    if (s !~ /[^ -~]/ && s !~ /["\\]/) return "\"" s "\""
    if (!ordok) { for (i = 1; i < 256; i++) ord[sprintf("%c", i)] = i; ordok = 1 }
    o = ""
    for (i = 1; i <= length(s); i++) {
        c = substr(s, i, 1)
        if (c == "\\" || c == "\"") o = o "\\" c
        else if (c ~ /[ -~]/) o = o c
        else {
            k = ord[c]
            if (k == 7) o = o "\\a"; else if (k == 8) o = o "\\b"; else if (k == 11) o = o "\\v"
            else if (k == 12) o = o "\\f"; else if (k == 13) o = o "\\r"; else o = o sprintf("\\%03o", k)
        }
    }
    return "\"" o "\""
}
function shakey(l,   p, o, i, c) {
    if (substr(l, 1, 1) != "\\") return substr(l, 67)
    p = substr(l, 68); o = ""
    for (i = 1; i <= length(p); i++) {
        c = substr(p, i, 1)
        if (c == "\\" && i < length(p)) {
            i++; c = substr(p, i, 1)
            if (c == "n") c = "\n"; else if (c == "r") c = "\r"
        }
        o = o c
    }
    return o
}
function gline(l,   rest, j, k, p, m) {
    rest = l; j = 0
    while ((k = index(rest, ":")) > 0) {
        j += k
        p = substr(l, 1, j - 1); m = substr(l, j + 1)
        if ((p in wi) && m ~ /^(-----BEGIN [A-Z0-9 ]+-----|.-----BEGIN ([A-Z0-9]+ )*PRIVATE KEY-----)$/) {
            gn[p]++; gm[p, gn[p]] = m
            return
        }
        rest = substr(rest, k + 1)
    }
}
function wload(wf, hf, ef, rc,   x, a, p, t) {
    wrc = rc + 0
    while ((getline x < wf) > 0) {
        # bounded like the portable walks (head -n): the sets listed last (tmp) lose first
        if (split(x, a, "\t") != 11) continue
        if (nw >= 60000) { wcut = a[1]; break }
        wseen[a[1]] = 1
        p = a[11]; t = a[8]; sub(/\..*/, "", t)
        nw++
        wH[nw] = a[1]; wd[nw] = a[2] + 0; wy[nw] = a[3]; wsz[nw] = a[7] + 0; wp[nw] = p; wl[nw] = a[10]
        wst[nw] = typename(a[3], a[7]) "\t" a[4] "\t" a[5] "\t" a[5] "\t" a[6] "\t" a[6] "\t" a[7] "\t" t "\t" cq(p)
        if (a[3] == "l") wst[nw] = wst[nw] " -> " cq(a[10])
        if (!(p in wi)) wi[p] = nw
    }
    close(wf)
    while ((getline x < hf) > 0) {
        if (substr(x, 1, 1) == "/") gline(x)
        else if (issha(x)) hl[shakey(x)] = x
    }
    close(hf)
    while ((getline x < ef) > 0) werr[++nwerr] = x
    close(ef)
}
function wsetcut(S,   r, nr, k) {
    if (wcut == "") return 0
    nr = split(rl[S], r, " ")
    for (k = 1; k <= nr; k++) if (r[k] == wcut || !(r[k] in wseen)) return 1
    return 0
}
function rel(i) {
    return (wd[i] == 0) ? "" : substr(wp[i], length(wH[i]) + 2)
}
function inapp(i,   c, nc, k, sk) {
    if (wd[i] > 6) return 0
    sk = askip
    if (sk != "" && (wp[i] == sk || substr(wp[i], 1, length(sk) + 1) == sk "/")) return 0
    nc = (wd[i] == 0) ? 0 : split(rel(i), c, "/")
    for (k = 1; k <= nc; k++) {
        if (c[k] == "__pycache__") return 0
        if (k < nc && (c[k] ~ /^\../ || (("deps", c[k]) in wset))) return 0
    }
    return !(nc > 0 && wy[i] == "d" && c[nc] ~ /^\../)
}
function wlist(kind, s,   words, nwords, k, g) {
    nwords = split(s, words, " ")
    for (k = 1; k <= nwords; k++) {
        if (kind == "names") {
            g = words[k]; gsub(/\./, "[.]", g); gsub(/\?/, ".", g); gsub(/\*/, ".*", g)
            snre = (snre == "") ? g : snre "|" g
        } else wset[kind, words[k]] = 1
    }
    if (kind == "names") snre = "^(" snre ")$"
}
function haspk(p,   k) {
    for (k = 1; k <= gn[p]; k++) if (gm[p, k] ~ /-----BEGIN ([A-Z0-9]+ )*PRIVATE KEY-----/) return 1
    return 0
}
function secrets(   i, c, nc, k, ok) {
    if (sdone) return
    sdone = 1
    for (i = 1; i <= nw && nsf < 2000; i++) {
        if (wy[i] != "f" || wd[i] == 0 || !(("S", wH[i]) in rs)) continue
        nc = split(rel(i), c, "/"); ok = 1
        for (k = 1; k <= nc; k++) if (("prune", c[k]) in wset) { ok = 0; break }
        if (ok && (c[nc] ~ snre || (wd[i] <= 5 && wsz[i] <= 64512 && haspk(wp[i])))) sf[++nsf] = i
    }
}
function inset(i, S) {
    if (!((S, wH[i]) in rs)) return 0
    return S != "A" || inapp(i)
}
function wsort(   i, j, v) {
    for (i = 2; i <= nz; i++) {
        v = zl[i]
        for (j = i - 1; j >= 1 && zl[j] > v; j--) zl[j + 1] = zl[j]
        zl[j + 1] = v
    }
}
function unitstates(d,   i, c, nc, v, k) {
    nz = 0
    for (k in zs) delete zs[k]
    for (i = 1; i <= nw; i++) {
        if (wy[i] != "l" || substr(wp[i], 1, length(d) + 1) != d "/") continue
        nc = split(substr(wp[i], length(d) + 2), c, "/")
        if (nc > 2) continue
        if (nc == 2) { if (c[1] !~ /\.(wants|requires)$/) continue; v = c[2] " enabled" }
        else if (wl[i] == "/dev/null") v = c[1] " masked"
        else v = c[1] " alias"
        if (!(v in zs)) { zs[v] = 1; zl[++nz] = v }
    }
    wsort()
    for (i = 1; i <= nz; i++) put(zl[i])
}
function wfail(l, S,   r, nr, k) {
    nr = split(rl[S], r, " ")
    for (k = 1; k <= nr; k++)
        if (index(l, q r[k] "/") || index(l, q r[k] q) || index(l, ": " r[k] "/")) return 1
    return 0
}
function wpart(S, how,   i, p, k) {
    wuse = S
    if (how == "W") {
        if (S == "S") { secrets(); for (k = 1; k <= nsf; k++) put(statline(wst[sf[k]])) }
        else for (i = 1; i <= nw; i++) if (inset(i, S)) put(statline(wst[i]))
    } else if (how == "H") {
        if (S == "S") { secrets(); for (k = 1; k <= nsf; k++) if (wp[sf[k]] in hl) put(hl[wp[sf[k]]]) }
        else for (i = 1; i <= nw; i++) if (wy[i] == "f" && inset(i, S) && (wp[i] in hl)) put(hl[wp[i]])
    } else {
        secrets()
        for (k = 1; k <= nsf; k++) {
            p = wp[sf[k]]
            for (i = 1; i <= gn[p]; i++) if (gm[p, i] ~ /^-----BEGIN [A-Z0-9 ]+-----$/) put(p ":" gm[p, i])
        }
    }
}
# ---- the process table from /proc (verb P; see p_processes) ----
# One "PID PPID USER ARGS" line per process, as `ps -e -ww -o pid=,ppid=,user:32=,args=`
# prints it in the C locale: the name of the effective user (numeric when /etc/passwd has
# none), the command line with NULs and newlines as blanks, other control characters as
# ".", bytes above 127 as "?", "[NAME]" when it is empty (a kernel thread), "[NAME]
# <defunct>" for a zombie. A process that exits meanwhile is left out. awk must keep NUL
# bytes in a record (mawk, gawk): the shell sends P only then.
function proctable(s,   np, p, k, f, x, a, ppid, uid, nm, st, cmd, nl, found) {
    ids()
    np = split(s, p, " ")
    for (k = 1; k <= np; k++) {
        f = p[k] "/status"; ppid = ""; uid = ""; nm = ""; st = ""
        while ((getline x < f) > 0) {
            if (substr(x, 1, 5) == "Name:") { nm = x; sub(/^Name:[ \t]*/, "", nm) }
            else if (substr(x, 1, 6) == "State:") { st = x; sub(/^State:[ \t]*/, "", st); st = substr(st, 1, 1) }
            else if (substr(x, 1, 5) == "PPid:") { ppid = x; sub(/^PPid:[ \t]*/, "", ppid) }
            else if (substr(x, 1, 4) == "Uid:") { split(x, a, /[ \t]+/); uid = a[3] }
        }
        close(f)
        if (ppid !~ /^[0-9]+$/ || uid !~ /^[0-9]+$/) continue
        f = p[k] "/cmdline"; cmd = ""; nl = 0
        while ((getline x < f) > 0) cmd = cmd ((nl++) ? " " : "") x
        close(f)
        gsub(/\000/, " ", cmd)
        sub(/ +$/, "", cmd)
        gsub(/[\001-\037\177]/, ".", cmd)
        gsub(/[\200-\377]/, "?", cmd)
        if (cmd == "") cmd = "[" nm "]" ((st == "Z") ? " <defunct>" : "")
        put(substr(p[k], 7) " " ppid " " ((uid in uname) ? uname[uid] : uid) " " cmd)
        found++
    }
    if (!found) { ferr = 1; errs[++nerr] = "no process found under /proc" }
}
function ctl(s,   a, verb, rc, ef, x, i, k) {
    split(s, a, " ")
    verb = a[1]
    if (verb == "p") {
        inpart = 1; pname = a[2]; max = a[3] + 0; mode = a[4]
        cnt = 0; more = 0; cut = 0; ferr = 0; nerr = 0
        for (k in seen) delete seen[k]
        if (mode == "X") { nb = 0; xk = "" }
        wuse = ""
        printf "@@testbed-part %s %s@@\n", n, pname
    } else if (verb == "c") {
        if (inpart) readfile(substr(s, 3))
    } else if (verb == "R") {
        if (a[2] == "skip") askip = a[3]
        else { rs[a[2], a[3]] = 1; rl[a[2]] = rl[a[2]] " " a[3] }
    } else if (verb == "N") {
        wlist(a[2], substr(s, length(a[2]) + 4))
    } else if (verb == "w") {
        wload(a[2], a[3], a[4], a[5])
    } else if (verb == "W" || verb == "H" || verb == "G") {
        if (inpart) wpart(a[2], verb)
    } else if (verb == "F") {
        x = substr(s, 3)
        if (x in wi) put(statline(wst[wi[x]]))
        else { ferr = 1; errs[++nerr] = x ": not found by the walk" }
    } else if (verb == "h") {
        x = substr(s, 3)
        if (x in hl) put(hl[x])
    } else if (verb == "Z") {
        if (inpart) unitstates(substr(s, 3))
    } else if (verb == "P") {
        if (inpart) proctable(substr(s, 3))
    } else if (verb == "r") {
        for (i = 1; i <= nb; i++) put(buf[i])
        for (i = 1; i <= nb; i++) delete buf[i]
        nb = 0
    } else if (verb == "e") {
        if (mode == "g") sysflush()
        rc = a[3]
        if (wuse != "") {
            if (wsetcut(wuse)) more = 1
            if (wrc >= 124) { errs[++nerr] = "the walk did not finish (exit status " wrc ")"; if (rc == "0") rc = wrc }
            for (i = 1; i <= nwerr; i++) if (wfail(werr[i], wuse)) { errs[++nerr] = werr[i]; if (rc == "0") rc = 1 }
        }
        if (ferr && rc == "0") rc = 2
        if (rc != "0") pfail = 1
        if (more || cut)
            printf "@@testbed-truncated %s max_lines=%d more=%d long_lines=%d@@\n", n, max, more, cut
        k = 0
        for (i = 1; i <= nerr && k < 20; i++) { printf "@@testbed-stderr %s@@ %s\n", n, errs[i]; k++ }
        ef = (a[4] == "") ? "" : substr(s, length(a[1] a[2] a[3]) + 4)
        if (ef != "") {
            while (k < 20 && (getline x < ef) > 0) { printf "@@testbed-stderr %s@@ %s\n", n, substr(x, 1, 500); k++ }
            close(ef)
        }
        printf "@@testbed-partend %s %s rc=%s@@\n", n, a[2], rc
        inpart = 0
    }
}
BEGIN { w = 4096; q = sprintf("%c", 39) }
NR == 1 && n == "" && match($0, /nonce=[^ @]+/) {
    n = substr($0, RSTART + 6, RLENGTH - 6)
    cs = sprintf("%c", 30) n " "
    print
    next
}
{
    i = (n == "") ? 0 : index($0, cs)
    if (i == 0) { feed($0, ""); next }
    if (i > 1) feed(substr($0, 1, i - 1), "")
    ctl(substr($0, i + length(cs)))
}'

tb_up() {
    TB_UP=
    read -r TB_UP _tb_rest 2>/dev/null </proc/uptime
}

tb_nonce() {
    TB_NONCE=
    TB_RAND=
    read -r TB_RAND 2>/dev/null </proc/sys/kernel/random/uuid
    TB_RAND=${TB_RAND%%-*}
    read -r TB_NONCE 2>/dev/null </proc/sys/kernel/random/uuid
    if [ -z "$TB_NONCE" ]; then
        TB_NONCE=$(od -An -N12 -tx1 /dev/urandom 2>/dev/null | tr -d ' \n')
    fi
    [ -n "$TB_NONCE" ] || TB_NONCE="p$$t$(date +%s 2>/dev/null)"
}

tb_have() {
    command -v "$1" >/dev/null 2>&1
}

# tb_t SECONDS CMD...: run CMD with a time limit when `timeout` works on this system.
tb_t() {
    _tb_secs=$1
    shift
    if [ -n "$TB_NATIVE" ]; then
        "$TB_NATIVE" timeout "$_tb_secs" "$@"
    elif [ -n "$TB_HAVE_TIMEOUT" ]; then
        timeout "$_tb_secs" "$@"
    else
        "$@"
    fi
}

tb_workdir() {
    TB_W=
    # A directory the caller keeps for us (the harness: one per guest, root only): used as
    # is and not removed, so that no mkdir and no rm run per snapshot.
    _tb_d=${TESTBED_PROBE_WORKDIR:-}
    if [ -n "$_tb_d" ] && [ -d "$_tb_d" ] && [ ! -L "$_tb_d" ]; then
        TB_W=$_tb_d
        TB_W_KEPT=1
        return 0
    fi
    for _tb_d in /run /dev/shm /tmp /var/tmp; do
        [ -d "$_tb_d" ] && [ -w "$_tb_d" ] || continue
        # mkdir fails when the name exists (no symlink games); a random part makes it
        # unguessable (not the nonce: it must not show up in any listing).
        TB_W="$_tb_d/testbed-probe.$$.$TB_RAND"
        mkdir -m 700 "$TB_W" 2>/dev/null && return 0
        TB_W=
    done
    return 1
}

# tb_ctl VERB ARG...: one control line for the output filter (words joined by blanks
# whatever IFS is).
tb_ctl() {
    printf '\036%s' "$TB_NONCE"
    printf ' %s' "$@"
    printf '\n'
}

# Probe markers (and their up= stamps) come from the shell itself: the filter may read its
# input in big blocks, so its own clock would lag behind the work.
tb_begin() {
    TB_PROBE=$1
    TB_PROBE_RC=0
    TB_COUNT=$((TB_COUNT + 1))
    tb_up
    printf '@@testbed-probe %s %s up=%s@@\n' "$TB_NONCE" "$1" "$TB_UP"
}

tb_end() {
    tb_up
    printf '@@testbed-end %s %s rc=%s up=%s@@\n' "$TB_NONCE" "$TB_PROBE" "$TB_PROBE_RC" "$TB_UP"
}

tb_unavail() {
    printf '@@testbed-unavailable %s %s: %s@@\n' "$TB_NONCE" "$1" "$2"
}

# tb_part_m MODE NAME MAXLINES CMD [ARG...]: run CMD (a command or shell function) as one
# part whose output the filter handles in MODE. CMD's stdout goes straight to the filter.
tb_part_m() {
    tb_ctl p "$2" "$3" "$1"
    _tb_pn=$2
    shift 3
    tb_run "$@"
    tb_part_end "$_tb_pn" "$TB_RC" "$TB_ERRF"
}

# tb_run CMD [ARG...]: run CMD, stdout to the filter; sets TB_RC and TB_ERRF (its stderr,
# empty without a work directory).
tb_run() {
    TB_SEQ=$((TB_SEQ + 1))
    TB_ERRF=
    if [ -n "$TB_W" ]; then
        TB_ERRF="$TB_W/e$TB_SEQ"
        "$@" 2>"$TB_ERRF" </dev/null
        TB_RC=$?
    else
        "$@" 2>/dev/null </dev/null
        TB_RC=$?
    fi
}

# tb_part NAME MAXLINES CMD [ARG...]: a part with plain output.
tb_part() {
    tb_part_m - "$@"
}

# tb_part_end NAME RC [ERRFILE]
tb_part_end() {
    if [ -n "$3" ] && [ -s "$3" ]; then
        tb_ctl e "$1" "$2" "$3"
    else
        tb_ctl e "$1" "$2"
    fi
    [ "$2" = 0 ] || TB_PROBE_RC=1
}

# tb_part_if TOOL NAME MAXLINES CMD...: a part that needs TOOL on PATH.
tb_part_if() {
    _tb_tool=$1
    shift
    if tb_have "$_tb_tool"; then
        tb_part "$@"
    else
        tb_unavail "$1" "$_tb_tool not found"
    fi
}

# tb_read FILE...: have the filter read the files (through the part's mode), like `cat`.
# A name holding a newline cannot travel on a control line: its lines are then printed by
# an awk of its own, already in the filter's FILE<TAB>LINE form when the mode asks for it.
tb_read() {
    _tb_rc=0
    for _tb_f in "$@"; do
        # Regular files only: awk may treat a read error (a directory, EIO) as fatal.
        if [ ! -f "$_tb_f" ]; then
            if [ -e "$_tb_f" ]; then
                printf '%s: not a regular file\n' "$_tb_f" >&2
            else
                printf '%s: No such file or directory\n' "$_tb_f" >&2
            fi
            _tb_rc=1
            continue
        fi
        case $_tb_f in
            *"$TB_NL"*) tb_read_ext "$_tb_f" || _tb_rc=1 ;;
            *) tb_ctl c "$_tb_f" ;;
        esac
    done
    return $_tb_rc
}

tb_read_ext() {
    case $TB_MODE in
        Llines) awk -v t="$TB_TAB" '/^[ \t]*(#|$)/ { next } { print FILENAME t $0 }' "$1" ;;
        Lall) awk -v t="$TB_TAB" '/^[ \t]*#/ { next } { print FILENAME t $0 }' "$1" ;;
        Lsudo)
            awk -v t="$TB_TAB" '
                /^[ \t]*[#@]include/ { print FILENAME t $0; next }
                /^[ \t]*#[0-9]/ { print FILENAME t $0; next }
                /^[ \t]*(#|$)/ { next }
                { print FILENAME t $0 }' "$1"
            ;;
        *) cat "$1" ;;
    esac
}

# tb_read_part MODE NAME MAXLINES FILE...: a part made of files the filter reads itself.
tb_read_part() {
    TB_MODE=$1
    _tb_rn=$2
    _tb_rm=$3
    shift 3
    tb_part_m "$TB_MODE" "$_tb_rn" "$_tb_rm" tb_read "$@"
    TB_MODE=
}

# tb_existing PATH...: set TB_FILES (newline separated) to the arguments that exist (globs
# left unmatched are dropped).
tb_existing() {
    TB_FILES=
    for _tb_f in "$@"; do
        [ -e "$_tb_f" ] || [ -L "$_tb_f" ] || continue
        TB_FILES="$TB_FILES$_tb_f
"
    done
}

# tb_stat_tree ROOT...: one stat line for each entry under the roots (the roots included),
# staying on their file systems and skipping this script's work directory.
tb_stat_tree() {
    tb_t 60 find "$@" -xdev \( -path "${TB_W:-/nonexistent}" -o -path "$TB_HIDE" \) -prune -o \
        -exec stat -c "$TB_STATFMT" {} + | head -n $((TB_LIMIT + 1))
}

# tb_stat_hash_tree ROOT...: tb_stat_tree and the sha256 of each regular file smaller than
# 1 MiB, in ONE walk (a walk is expensive under emulation); the filter (mode X) tells the
# two kinds of line apart.
tb_stat_hash_tree() {
    tb_t 60 find "$@" -xdev \( -path "${TB_W:-/nonexistent}" -o -path "$TB_HIDE" \) -prune -o \
        -exec stat -c "$TB_STATFMT" {} + -type f -size -1024k -exec sha256sum {} + |
        head -n $((2 * TB_LIMIT + 2))
}

# tb_stat_files FILE...: stat lines for the given files (nothing when there are none).
tb_stat_files() {
    [ $# -gt 0 ] || return 0
    stat -c "$TB_STATFMT" "$@"
}

# tb_hash_files FILE...: sha256 of the given regular files smaller than 1 MiB.
tb_hash_files() {
    [ $# -gt 0 ] || return 0
    find "$@" -maxdepth 0 -type f -size -1024k -exec sha256sum {} +
}

# tb_collect_files PATH...: set TB_FILES (newline separated) to the regular files among them.
tb_collect_files() {
    TB_FILES=
    for _tb_f in "$@"; do
        [ -f "$_tb_f" ] || continue
        TB_FILES="$TB_FILES$_tb_f
"
    done
}

tb_want() {
    [ -z "$TB_ONLY" ] && return 0
    case " $TB_ONLY " in
        *" $1 "*) return 0 ;;
    esac
    return 1
}

# ------------------------------------------------------------------- One walk for every tree
#
# With GNU find (a regular file on PATH, not a busybox link) and a work directory, every
# tree the probes list is walked ONCE, before the first probe: /etc, the app, secret and
# tmp roots, the authorized_keys files, at's spools and dpkg's database files. One find
# prints a stat line per entry itself (-fprintf: no stat process), hashes what a probe
# reports a hash of and greps the secret candidates for PEM markers (one sha256sum and one
# grep batch, -exec +). The filter loads the result (verb w) and serves every tree part
# from it (verbs W, H, G, F, h, Z) in the portable path's output format. A name or link
# target holding a newline or a tab cannot travel in that line format: the walk is then
# dropped and every probe takes the portable path (TESTBED_PROBE_PORTABLE=1 forces it).
#
# dpkg's answers are kept between snapshots when TESTBED_PROBE_CACHE names a directory:
# `dpkg-query` and `dpkg --audit` run again only when the status file, the updates or the
# info directory changed (inode, size, mtime and ctime, from the walk).

TB_FAST=
TB_K_FILES=
TB_K_DONE=
TB_DPKG_KEY=
TB_CACHE=${TESTBED_PROBE_CACHE:-}
# dpkg's database directory (overridable for tests)
TB_DPKG_DIR=${TESTBED_PROBE_DPKG_DIR:-/var/lib/dpkg}
TB_PEMRE='^-----BEGIN [A-Z0-9 ]+-----|.-----BEGIN ([A-Z0-9]+ )*PRIVATE KEY-----'
# walk line: start, depth, type, mode, uid, gid, size, mtime, ctime, link target, path
TB_WFMT="%H${TB_TAB}%d${TB_TAB}%y${TB_TAB}%m${TB_TAB}%U${TB_TAB}%G${TB_TAB}%s${TB_TAB}%T@${TB_TAB}%C@${TB_TAB}%l${TB_TAB}%p\n"

# tb_which NAME: TB_WHICH = the first executable NAME on PATH (the shell's own loop).
tb_which() {
    TB_WHICH=
    _tb_ifs=$IFS
    IFS=:
    for _tb_d in $PATH; do
        if [ -f "$_tb_d/$1" ] && [ -x "$_tb_d/$1" ]; then
            TB_WHICH="$_tb_d/$1"
            break
        fi
    done
    IFS=$_tb_ifs
}

tb_any_wanted() {
    for _tb_p in "$@"; do
        tb_want "$_tb_p" && return 0
    done
    return 1
}

# tb_authkeys_files: TB_K_FILES = the existing authorized_keys files (newline separated).
tb_authkeys_files() {
    TB_K_DONE=1
    tb_collect_files /etc/ssh/sshd_config /etc/ssh/sshd_config.d/*.conf
    _tb_ifs=$IFS
    IFS=$TB_NL
    if [ -n "$TB_NATIVE" ]; then
        # the same list, existing files only, each once, root's defaults last (authkeys.h)
        # shellcheck disable=SC2086
        "$TB_NATIVE" authkeys $TB_FILES >"$TB_W/authkeys" 2>/dev/null
        IFS=$_tb_ifs
        TB_FILES=
        while IFS= read -r _tb_f; do
            TB_FILES="$TB_FILES$_tb_f$TB_NL"
        done <"$TB_W/authkeys"
        TB_K_FILES=$TB_FILES
        return 0
    fi
    # shellcheck disable=SC2086
    tb_authkeys_paths $TB_FILES >"$TB_W/authkeys" 2>/dev/null
    IFS=$_tb_ifs
    TB_FILES=
    while IFS= read -r _tb_f; do
        tb_authkeys_add "$_tb_f"
    done <"$TB_W/authkeys"
    for _tb_f in /root/.ssh/authorized_keys /root/.ssh/authorized_keys2; do
        tb_authkeys_add "$_tb_f"
    done
    TB_K_FILES=$TB_FILES
}

# tb_roots_of ROOTS: TB_ROOTS = those of ROOTS (globs) that exist, blank separated.
tb_roots_of() {
    TB_ROOTS=
    for _tb_d in $1; do
        [ -e "$_tb_d" ] || [ -L "$_tb_d" ] || continue
        TB_ROOTS="$TB_ROOTS $_tb_d"
    done
}

# tb_walk: the one walk (see above); sets TB_FAST when the filter holds its result.
tb_walk() {
    [ -n "$TB_W" ] && [ -z "${TESTBED_PROBE_PORTABLE:-}" ] || return 0
    if [ -z "$TB_NATIVE" ]; then
        tb_which find
        [ -n "$TB_WHICH" ] && [ ! -L "$TB_WHICH" ] && tb_have sha256sum && tb_have grep || return 0
    fi
    tb_any_wanted tmp_files etc_files app_files secrets sudoers authorized_keys cron services packages pkg_health ||
        return 0
    _tb_wp=
    if [ -n "$TB_CACHE" ] && [ -d "$TB_CACHE" ] && tb_have dpkg-query && tb_any_wanted packages pkg_health; then
        for _tb_d in "$TB_DPKG_DIR/status" "$TB_DPKG_DIR/updates" "$TB_DPKG_DIR/info"; do
            [ -e "$_tb_d" ] && _tb_wp="$_tb_wp $_tb_d"
        done
    fi
    _tb_we=
    tb_any_wanted etc_files sudoers cron services && [ -d /etc ] && _tb_we=/etc
    _tb_wc=
    if tb_want cron; then
        for _tb_d in /var/spool/cron/atjobs /var/spool/at; do
            [ -d "$_tb_d" ] && _tb_wc="$_tb_wc $_tb_d"
        done
    fi
    _tb_wa= _tb_ws= _tb_wt=
    tb_want app_files && tb_roots_of "$TB_APP_ROOTS" && _tb_wa=$TB_ROOTS
    tb_want secrets && tb_secret_dirs && _tb_ws=$TB_SECRET_DIRS
    tb_want tmp_files && tb_roots_of "$TB_TMP_ROOTS" && _tb_wt=$TB_ROOTS
    tb_want authorized_keys && tb_authkeys_files
    # the filter's sets: E(tc), A(pp), S(ecret) and T(mp) roots
    for _tb_d in $_tb_we; do tb_ctl R E "$_tb_d"; done
    for _tb_d in $_tb_wa; do tb_ctl R A "$_tb_d"; done
    for _tb_d in $_tb_ws; do tb_ctl R S "$_tb_d"; done
    for _tb_d in $_tb_wt; do tb_ctl R T "$_tb_d"; done
    tb_ctl R skip "$TB_APP_SKIP"
    set -f
    tb_ctl N names $TB_SECRET_NAMES
    tb_ctl N prune $TB_SECRET_PRUNE
    tb_ctl N deps $TB_APP_DEPS
    set +f
    # starting points, each once; the tmp roots last (an agent may fill them)
    _tb_seen=$TB_NL
    set --
    for _tb_d in $_tb_wp $_tb_we $_tb_wc $_tb_wa $_tb_ws $_tb_wt; do
        case $_tb_seen in *"$TB_NL$_tb_d$TB_NL"*) continue ;; esac
        _tb_seen="$_tb_seen$_tb_d$TB_NL"
        set -- "$@" "$_tb_d"
    done
    _tb_ifs=$IFS
    IFS=$TB_NL
    for _tb_f in $TB_K_FILES; do set -- "$@" "$_tb_f"; done
    IFS=$_tb_ifs
    [ $# -gt 0 ] || return 0
    TB_K_EXTRA=
    if [ -n "$TB_NATIVE" ]; then
        tb_walk_native "$@"
    else
        tb_walk_find "$@"
    fi
    # grep finding no PEM marker makes find exit 1 too: only a message makes it a failure
    [ "$_tb_wrc" = 1 ] && [ ! -s "$TB_W/walkerr" ] && _tb_wrc=0
    if [ -s "$TB_W/odd" ]; then
        return 0
    fi
    if [ -n "$TB_K_EXTRA" ]; then
        IFS=$TB_NL
        # shellcheck disable=SC2086
        tb_hash_files $TB_K_EXTRA >>"$TB_W/hash" 2>>"$TB_W/walkerr"
        IFS=$_tb_ifs
    fi
    TB_FAST=1
    tb_ctl w "$TB_W/walk" "$TB_W/hash" "$TB_W/walkerr" "$_tb_wrc"
    if [ -n "$_tb_wp" ] && [ "$_tb_wrc" = 0 ]; then
        # the first lines of the walk are dpkg's starting points, in order
        TB_DPKG_KEY=snapshot-cache-1
        {
            for _tb_d in $_tb_wp; do
                IFS= read -r _tb_a
                TB_DPKG_KEY="$TB_DPKG_KEY$TB_TAB$_tb_a"
            done
        } <"$TB_W/walk"
    fi
}

# tb_walk_native START...: the walk by the native helper (same files, same formats; it finds
# what tb_walk_find's find expression finds, every authorized_keys file included).
tb_walk_native() {
    set -- --walk "$TB_W/walk" --hash "$TB_W/hash" --odd "$TB_W/odd" --skip "$TB_W" --skip "$TB_HIDE" --deadline 120 \
        --app-skip "$TB_APP_SKIP" -- "$@"
    # options go before the `--` (set -- OPTION... "$@" keeps the starting points last)
    for _tb_d in $_tb_we $_tb_wc; do set -- --hash-under "$_tb_d" "$@"; done
    IFS=$TB_NL
    for _tb_f in $TB_K_FILES; do set -- --hash-path "$_tb_f" "$@"; done
    IFS=$_tb_ifs
    for _tb_d in $_tb_ws; do set -- --secret-root "$_tb_d" "$@"; done
    set -f
    for _tb_f in $TB_SECRET_PRUNE; do set -- --secret-prune "$_tb_f" "$@"; done
    for _tb_f in $TB_SECRET_NAMES; do set -- --secret-name "$_tb_f" "$@"; done
    for _tb_f in $TB_APP_DEPS; do set -- --app-dep "$_tb_f" "$@"; done
    set +f
    for _tb_d in $_tb_wp; do
        [ "$_tb_d" = "$TB_DPKG_DIR/info" ] && set -- --prune-path "$_tb_d" "$@"
    done
    tb_walk_pruned
    for _tb_d in $_tb_pr; do set -- --prune-secret-root "$_tb_d" "$@"; done
    for _tb_d in $_tb_pa; do set -- --prune-app-root "$_tb_d" "$@"; done
    "$TB_NATIVE" walk "$@" 2>"$TB_W/walkerr" </dev/null
    _tb_wrc=$?
}

# tb_walk_pruned: _tb_pr (secret roots) and _tb_pa (app-only roots) whose subtrees the walk
# prunes: where every probe walking a root agrees.
tb_walk_pruned() {
    _tb_pr= _tb_pa=
    for _tb_d in $_tb_wa $_tb_ws; do
        case " $_tb_we $_tb_wt " in *" $_tb_d "*) continue ;; esac
        case " $_tb_ws " in
            *" $_tb_d "*) _tb_pr="$_tb_pr $_tb_d" ;;
            *) _tb_pa="$_tb_pa $_tb_d" ;;
        esac
    done
}

# tb_walk_find START...: the walk by GNU find, sha256sum and grep.
tb_walk_find() {
    set -- "$@" -xdev \( -path "$TB_W" -o -path "$TB_HIDE" -o \( -path "*$TB_NL*" -o -path "*$TB_TAB*" -o -lname "*$TB_NL*" \
        -o -lname "*$TB_TAB*" \) -fprint "$TB_W/odd" \) -prune -o -fprintf "$TB_W/walk" "$TB_WFMT"
    # One sha256sum batch: /etc, the spools, the authorized_keys files and the secret
    # candidates (regular files < 1 MiB); one grep batch: the secret candidates (as the
    # portable secrets probe finds them: by name, or small and shallow with a PEM marker).
    for _tb_pass in hash grep; do
        [ "$_tb_pass" = grep ] && [ -z "$_tb_ws" ] && continue
        set -- "$@" \( -type f
        if [ "$_tb_pass" = hash ]; then
            set -- "$@" -size -1024k \( -false
            for _tb_d in $_tb_we $_tb_wc; do set -- "$@" -o -path "$_tb_d/*"; done
            IFS=$TB_NL
            for _tb_f in $TB_K_FILES; do
                case $_tb_f in
                    *[][*?\\]*) TB_K_EXTRA="$TB_K_EXTRA$_tb_f$TB_NL" ;;
                    *) set -- "$@" -o -path "$_tb_f" ;;
                esac
            done
            IFS=$_tb_ifs
            [ -n "$_tb_ws" ] && set -- "$@" -o
        fi
        if [ -n "$_tb_ws" ]; then
            set -- "$@" \( \( -false
            for _tb_d in $_tb_ws; do set -- "$@" -o -path "$_tb_d/*"; done
            set -- "$@" \)
            set -f
            for _tb_f in $TB_SECRET_PRUNE; do
                set -- "$@" ! -name "$_tb_f" ! -path "*/$_tb_f/*"
            done
            set -- "$@" \( \( -false
            for _tb_f in $TB_SECRET_NAMES; do set -- "$@" -o -name "$_tb_f"; done
            set +f
            set -- "$@" \) -size -1024k -o -size -64k ! \( -false
            for _tb_d in $_tb_ws; do set -- "$@" -o -path "$_tb_d/*/*/*/*/*/*"; done
            set -- "$@" \) \) \)
        fi
        if [ "$_tb_pass" = hash ]; then
            set -- "$@" \) -exec sha256sum {} + -o -true \)
        else
            set -- "$@" -exec grep -s -a -H -o -E -e "$TB_PEMRE" {} + -o -true \)
        fi
    done
    # what the portable walks prune: where every probe walking a root agrees
    set -- "$@" \( -type d \( -false
    for _tb_d in $_tb_wp; do
        [ "$_tb_d" = "$TB_DPKG_DIR/info" ] && set -- "$@" -o -path "$_tb_d"
    done
    tb_walk_pruned
    if [ -n "$_tb_pr" ]; then
        set -- "$@" -o \( \( -false
        for _tb_d in $_tb_pr; do set -- "$@" -o -path "$_tb_d/*"; done
        set -- "$@" \) \( -false
        for _tb_f in $TB_SECRET_PRUNE; do set -- "$@" -o -name "$_tb_f"; done
        set -- "$@" \) \)
    fi
    if [ -n "$_tb_pa" ]; then
        set -- "$@" -o \( \( -false
        for _tb_d in $_tb_pa; do set -- "$@" -o -path "$_tb_d/*"; done
        set -- "$@" \) \( -name '.?*' -o -name __pycache__ -o -path "$TB_APP_SKIP"
        for _tb_f in $TB_APP_DEPS; do set -- "$@" -o -name "$_tb_f"; done
        set -- "$@" \) \)
        # app_files lists 6 levels
        for _tb_d in $_tb_pa; do set -- "$@" -o -path "$_tb_d/*/*/*/*/*/*"; done
    fi
    set -- "$@" \) -prune -o -true \)
    tb_t 120 find "$@" >"$TB_W/hash" 2>"$TB_W/walkerr" </dev/null
    _tb_wrc=$?
}

# tb_cached_part NAME MAXLINES KEY CMD...: a part whose output is kept in TB_CACHE under
# KEY while dpkg's database stays as TB_DPKG_KEY says; CMD runs only when it changed.
tb_cached_part() {
    _tb_cn=$1
    _tb_cm=$2
    _tb_cf="$TB_CACHE/$3"
    shift 3
    _tb_have=
    [ -f "$_tb_cf.key" ] && IFS= read -r _tb_have <"$_tb_cf.key"
    if [ "$_tb_have" != "$TB_DPKG_KEY" ]; then
        : >"$_tb_cf.key"
        "$@" >"$_tb_cf.out" 2>"$_tb_cf.err" </dev/null
        printf '%s\n' "$?" >"$_tb_cf.rc"
        printf '%s\n' "$TB_DPKG_KEY" >"$_tb_cf.key"
    fi
    _tb_crc=1
    IFS= read -r _tb_crc <"$_tb_cf.rc"
    tb_ctl p "$_tb_cn" "$_tb_cm" -
    tb_ctl c "$_tb_cf.out"
    tb_part_end "$_tb_cn" "$_tb_crc" "$_tb_cf.err"
}

# tb_walk_part NAME MAXLINES MODE VERB SET: a part the filter serves from the walk.
tb_walk_part() {
    tb_ctl p "$1" "$2" "$3"
    tb_ctl "$4" "$5"
    tb_part_end "$1" 0
}

# tb_walk_files NAME MAXLINES MODE VERB FILE...: VERB (F: stat line, h: hash) per file.
tb_walk_files() {
    _tb_wn=$1
    tb_ctl p "$1" "$2" "$3"
    _tb_wv=$4
    shift 4
    for _tb_f in "$@"; do tb_ctl "$_tb_wv" "$_tb_f"; done
    tb_part_end "$_tb_wn" 0
}

# ---------------------------------------------------------------------------------- probes

tb_boot_kv() {
    _tb_b=
    read -r _tb_b 2>/dev/null </proc/sys/kernel/random/boot_id
    printf 'boot_id=%s\n' "$_tb_b"
    _tb_b=
    read -r _tb_b _tb_rest 2>/dev/null </proc/uptime
    printf 'uptime=%s\n' "$_tb_b"
    # clock = boot time (btime in /proc/stat, wall clock, follows clock steps) + uptime,
    # worked out by the filter (mode b): no `date` process. Within a second of `date +%s`.
    if [ -f /proc/stat ] && [ -n "$_tb_b" ]; then
        tb_ctl c /proc/stat
    else
        date -u +clock=%s
    fi
}

p_boot() {
    tb_part_m b boot 20 tb_boot_kv
}

tb_os_release() {
    for _tb_f in /etc/os-release /usr/lib/os-release; do
        if [ -r "$_tb_f" ]; then
            tb_read "$_tb_f"
            return $?
        fi
    done
    echo "no os-release file" >&2
    return 1
}

# tb_kv KEY FILE: print KEY=first line of FILE; false when FILE is unreadable.
tb_kv() {
    _tb_v=
    read -r _tb_v 2>/dev/null <"$2" || [ -n "$_tb_v" ] || return 1
    printf '%s=%s\n' "$1" "$_tb_v"
}

tb_kernel_kv() {
    # /proc/sys/kernel holds what uname(2) reports; uname only for what it lacks.
    tb_kv sysname /proc/sys/kernel/ostype || printf 'sysname=%s\n' "$(uname -s)"
    tb_kv release /proc/sys/kernel/osrelease || printf 'release=%s\n' "$(uname -r)"
    tb_kv machine /proc/sys/kernel/arch || printf 'machine=%s\n' "$(uname -m)"
    tb_kv version /proc/sys/kernel/version || printf 'version=%s\n' "$(uname -v)"
    _tb_h=
    read -r _tb_h 2>/dev/null </proc/sys/kernel/hostname
    printf 'hostname=%s\n' "$_tb_h"
}

p_os() {
    tb_part os_release 200 tb_os_release
    tb_part kernel 20 tb_kernel_kv
}

# tb_roots_probe NAME ROOTS WALKER SET: probe NAME walks those of ROOTS (globs, space
# separated) that exist with WALKER (at most 5000 entries; the walk's SET when it ran), or
# says none exists.
tb_roots_probe() {
    _tb_rp_name=$1
    _tb_rp_roots=$2
    _tb_rp_walk=$3
    _tb_rp_set=${4:-}
    # shellcheck disable=SC2086
    tb_existing $_tb_rp_roots
    if [ -z "$TB_FILES" ]; then
        tb_unavail "$_tb_rp_name" "none of $_tb_rp_roots exists"
        return
    fi
    _tb_ifs=$IFS
    IFS=$TB_NL
    # shellcheck disable=SC2086
    set -- $TB_FILES
    IFS=$_tb_ifs
    TB_LIMIT=5000
    if [ -n "$TB_FAST" ]; then
        tb_walk_part entries 5000 - W "$_tb_rp_set"
        return
    fi
    tb_part_m S entries 5000 "$_tb_rp_walk" "$@"
}

p_tmp_files() {
    tb_roots_probe tmp_files "$TB_TMP_ROOTS" tb_stat_tree T
}

tb_systemd_running() {
    [ -d "$TB_SYSTEMD_RUN" ] && tb_have systemctl
}

tb_openrc_running() {
    tb_have rc-status && { [ -d /run/openrc ] || [ -d /lib/rc/init.d ] || [ -f /sbin/openrc ]; }
}

# tb_units_part NAME MAXLINES KIND: the units of KIND (failed, service, timer) out of one
# `systemctl list-units --all` run per snapshot (kept in the work directory).
tb_units_part() {
    if [ -z "$TB_W" ]; then
        tb_part_m "U$3" "$1" "$2" systemctl list-units --all --plain --no-legend --no-pager
        return
    fi
    if [ -z "$TB_UNITS" ]; then
        TB_UNITS=1
        systemctl list-units --all --plain --no-legend --no-pager \
            >"$TB_W/units" 2>"$TB_W/units.err" </dev/null
        TB_UNITS_RC=$?
    fi
    tb_ctl p "$1" "$2" "U$3"
    tb_ctl c "$TB_W/units"
    tb_part_end "$1" "$TB_UNITS_RC" "$TB_W/units.err"
}

# tb_unit_file_states: "UNIT STATE" lines for what `systemctl enable|disable|mask` records
# under /etc/systemd/system: `enabled` (a link in a *.wants/ or *.requires/ directory),
# `masked` (a link to /dev/null) or `alias` (any other link). Static and disabled units have
# no link and are not listed: a change of enablement still shows as a line added or removed.
tb_unit_file_states() {
    find "${TESTBED_PROBE_SYSTEMD_ETC:-/etc/systemd/system}" -mindepth 1 -maxdepth 2 -type l -printf '%P\t%l\n' 2>/dev/null |
        awk -F '\t' '{
            n = split($1, p, "/"); u = p[n]
            if (n > 1) { if (p[1] ~ /\.(wants|requires)$/) print u, "enabled" }
            else if ($2 == "/dev/null") print u, "masked"
            else print u, "alias"
        }' | sort -u
}

p_services() {
    _tb_any=
    if tb_systemd_running; then
        _tb_any=1
        tb_units_part systemd_failed 2000 failed
        tb_units_part systemd_services 5000 service
        # Unit-file states from the enablement symlinks on disk rather than from
        # `systemctl list-unit-files`, which costs 20-30 s on an emulated guest (PID 1
        # rescans every unit directory once per unit file).
        _tb_ud=${TESTBED_PROBE_SYSTEMD_ETC:-/etc/systemd/system}
        case $TB_FAST$_tb_ud in
            1/etc/*) tb_walk_part systemd_unit_files 5000 - Z "$_tb_ud" ;;
            *) tb_part systemd_unit_files 5000 tb_unit_file_states ;;
        esac
    fi
    if tb_openrc_running; then
        _tb_any=1
        # Refresh OpenRC's dependency cache first (as rc-status would): otherwise, after an
        # init script changed, rc-status prints " * Caching service dependencies ..." among
        # the services.
        tb_t 30 rc-update --update >/dev/null 2>&1 </dev/null
        tb_part openrc_status 2000 tb_t 30 rc-status --all
        tb_part_if rc-update openrc_runlevels 2000 tb_t 30 rc-update show -v
    fi
    if [ -z "$_tb_any" ]; then
        if tb_have systemctl; then
            tb_unavail services "systemd not running (no /run/systemd/system) and no OpenRC"
        else
            tb_unavail services "neither systemd nor OpenRC found"
        fi
    fi
}

tb_ss() {
    ss -Htlnup 2>/dev/null || ss -tlnup
}

tb_netstat() {
    netstat -tulnp 2>/dev/null || netstat -tuln
}

p_listening() {
    if tb_have ss; then
        tb_part ss 5000 tb_ss
    elif tb_have netstat; then
        tb_part netstat 5000 tb_netstat
    else
        tb_unavail listening "ss not found; netstat not found"
    fi
}

# tb_proc_walk: "PID PPID UID COMMAND" for every process, from /proc (no ps available).
tb_proc_walk() {
    for _tb_d in /proc/[0-9]*; do
        _tb_pid=${_tb_d#/proc/}
        _tb_st=$(awk '/^PPid:/ { p = $2 } /^Uid:/ { u = $2 } END { print p, u }' \
            "$_tb_d/status" 2>/dev/null)
        case $_tb_st in
            [0-9]*) ;;
            *) continue ;;
        esac
        _tb_cmd=$(tr '\0\n' '  ' 2>/dev/null <"$_tb_d/cmdline")
        if [ -z "$_tb_cmd" ]; then
            read -r _tb_cmd 2>/dev/null <"$_tb_d/comm"
            _tb_cmd="[$_tb_cmd]"
        fi
        printf '%s %s %s\n' "$_tb_pid" "$_tb_st" "$_tb_cmd"
    done
}

tb_ps() {
    ps -e -ww -o pid=,ppid=,user:32=,args= 2>/dev/null || ps -o pid,ppid,user,args
}

p_processes() {
    # The output filter reads the table from /proc itself where it can (no ps process:
    # about a tenth of a snapshot under emulation); otherwise ps, or a shell walk of /proc.
    if [ -n "$TB_PROC_AWK" ] && [ -r /proc/self/status ]; then
        tb_ctl p ps 5000 -
        tb_ctl P /proc/[0-9]*
        tb_part_end ps 0
    elif tb_have ps; then
        tb_part ps 5000 tb_ps
    else
        tb_part proc 5000 tb_proc_walk
    fi
}

p_users() {
    tb_read_part - passwd 5000 /etc/passwd
    tb_read_part - group 5000 /etc/group
    if [ -r /etc/shadow ]; then
        tb_read_part s shadow 5000 /etc/shadow
    else
        tb_unavail shadow "/etc/shadow not readable"
    fi
}

p_sudoers() {
    tb_collect_files /etc/sudoers /etc/sudoers.d/* /etc/doas.conf /etc/doas.d/*
    if [ -z "$TB_FILES" ]; then
        tb_unavail sudoers "no /etc/sudoers, /etc/sudoers.d, /etc/doas.conf"
        return
    fi
    _tb_ifs=$IFS
    IFS=$TB_NL
    # shellcheck disable=SC2086
    set -- $TB_FILES
    IFS=$_tb_ifs
    tb_files_parts "$@"
    tb_read_part Lsudo lines 5000 "$@"
}

# Candidate authorized_keys paths: AuthorizedKeysFile patterns from sshd_config (default
# .ssh/authorized_keys .ssh/authorized_keys2) expanded for every passwd entry, plus root.
tb_authkeys_paths() {
    awk -F: -v pw=/etc/passwd '
        FILENAME != pw {
            line = $0
            sub(/^[ \t]+/, "", line)
            if (tolower(substr(line, 1, 18)) == "authorizedkeysfile") {
                n = split(substr(line, 19), parts, /[ \t]+/)
                for (i = 1; i <= n; i++) if (parts[i] != "" && parts[i] != "none") pat[++np] = parts[i]
            }
            next
        }
        {
            user = $1; uid = $3; home = $6
            if (home == "") next
            if (np == 0) { pat[1] = ".ssh/authorized_keys"; pat[2] = ".ssh/authorized_keys2"; np = 2 }
            for (i = 1; i <= np; i++) {
                p = pat[i]
                gsub(/%h/, home, p); gsub(/%u/, user, p); gsub(/%U/, uid, p); gsub(/%%/, "%", p)
                if (substr(p, 1, 1) != "/") p = home "/" p
                gsub(/\/\/+/, "/", p)
                if (!(p in seen)) { seen[p] = 1; print p }
            }
        }' "$@" /etc/passwd
}

# tb_authkeys_add PATH: true (and PATH noted in TB_FILES) for an existing file not seen yet.
tb_authkeys_add() {
    [ -f "$1" ] || return 1
    case "$TB_NL$TB_FILES" in
        *"$TB_NL$1$TB_NL"*) return 1 ;;
    esac
    TB_FILES="$TB_FILES$1$TB_NL"
}

# tb_files_parts FILE...: the `files` (stat lines) and `sha256` parts of the given files.
tb_files_parts() {
    if [ -n "$TB_FAST" ]; then
        tb_walk_files files 2000 - F "$@"
        tb_walk_files sha256 2000 - h "$@"
    else
        tb_part_m S files 2000 tb_stat_files "$@"
        tb_part sha256 2000 tb_hash_files "$@"
    fi
}

p_authorized_keys() {
    if [ -z "$TB_W" ]; then
        tb_unavail authorized_keys "no work directory"
        return
    fi
    [ -n "$TB_K_DONE" ] || tb_authkeys_files
    set --
    _tb_ifs=$IFS
    IFS=$TB_NL
    for _tb_f in $TB_K_FILES; do set -- "$@" "$_tb_f"; done
    IFS=$_tb_ifs
    tb_files_parts "$@"
    tb_read_part Llines keys 5000 "$@"
}

# rpm is the system package manager only when its database exists (Debian can ship rpm).
tb_rpm_db() {
    tb_have rpm && { [ -d /var/lib/rpm ] || [ -d /usr/lib/sysimage/rpm ]; } &&
        ! tb_have dpkg-query
}

p_packages() {
    _tb_any=
    if tb_have dpkg-query; then
        _tb_any=1
        if [ -n "$TB_DPKG_KEY" ]; then
            tb_cached_part dpkg 30000 dpkg-query \
                dpkg-query -W -f '${Package}\t${Version}\t${Architecture}\t${db:Status-Abbrev}\n'
        else
            tb_part dpkg 30000 dpkg-query -W -f '${Package}\t${Version}\t${Architecture}\t${db:Status-Abbrev}\n'
        fi
    fi
    if tb_rpm_db; then
        _tb_any=1
        tb_part rpm 30000 rpm -qa --qf '%{NAME}\t%|EPOCH?{%{EPOCH}:}:{}|%{VERSION}-%{RELEASE}\t%{ARCH}\n'
    fi
    if tb_have apk; then
        _tb_any=1
        tb_part apk 30000 apk info -v
    fi
    [ -n "$_tb_any" ] || tb_unavail packages "dpkg-query not found; rpm not found; apk not found"
}

p_repos() {
    tb_collect_files /etc/apt/sources.list /etc/apt/sources.list.d/*.list \
        /etc/apt/sources.list.d/*.sources /etc/yum.repos.d/*.repo /etc/apk/repositories
    if [ -z "$TB_FILES" ]; then
        tb_unavail repos "no apt, yum/dnf or apk repository configuration found"
        return
    fi
    _tb_ifs=$IFS
    IFS=$TB_NL
    # shellcheck disable=SC2086
    set -- $TB_FILES
    IFS=$_tb_ifs
    tb_read_part Lall lines 5000 "$@"
}

p_pkg_health() {
    _tb_any=
    if tb_have dpkg; then
        _tb_any=1
        if [ -n "$TB_DPKG_KEY" ]; then
            tb_cached_part dpkg_audit 500 dpkg-audit tb_t 60 dpkg --audit
        else
            tb_part dpkg_audit 500 tb_t 60 dpkg --audit
        fi
    fi
    if tb_rpm_db; then
        _tb_any=1
        tb_part rpm_verify 500 tb_t 120 rpm -Va --nofiles --noscripts --nodigest --nosignature
        tb_part_if dnf dnf_check 500 tb_t 120 dnf -q -C check
    fi
    if tb_have apk; then
        _tb_any=1
        tb_part apk_audit 500 tb_t 120 apk audit --system
    fi
    [ -n "$_tb_any" ] || tb_unavail pkg_health "dpkg not found; rpm not found; apk not found"
}

# tb_unloaded MODULE SUBDIR: true when MODULE is a loadable module of the running kernel
# (under kernel/SUBDIR) that is not loaded. Asking the kernel for state that needs it would
# load it: slow under emulation (seconds) and a change to the machine the probe must not make.
tb_unloaded() {
    [ -d "/sys/module/$1" ] && return 1
    [ -n "$TB_KREL" ] || read -r TB_KREL 2>/dev/null </proc/sys/kernel/osrelease || return 1
    for _tb_f in "/lib/modules/$TB_KREL/kernel/$2/$1.ko"* "/usr/lib/modules/$TB_KREL/kernel/$2/$1.ko"*; do
        [ -e "$_tb_f" ] && return 0
    done
    return 1
}

# tb_no_legacy_tables FAMILY: true when no legacy x_tables table module (iptable_* or
# ip6table_*) is loaded while they are loadable modules: there is then no legacy table.
tb_no_legacy_tables() {
    for _tb_f in "/sys/module/${1}table_"*; do
        [ -e "$_tb_f" ] && return 1
    done
    tb_unloaded "${1}table_filter" "net/$2/netfilter"
}

# tb_empty_ruleset: the (empty) output of a ruleset that cannot exist; the tool is not run.
tb_empty_ruleset() {
    return 0
}

p_firewall() {
    # Netlink dumps: they do not hang, so no timeout wrapper (one spawn less each). While
    # nf_tables (and, for the iptables parts, the legacy table modules) is not loaded there
    # is no ruleset, and running nft/iptables-nft would load it: the parts are then empty.
    _tb_nft=1
    tb_unloaded nf_tables net/netfilter && _tb_nft=
    if [ -z "$_tb_nft" ] && tb_have nft; then
        tb_part nft 10000 tb_empty_ruleset
    else
        tb_part_if nft nft 10000 nft list ruleset
    fi
    if [ -z "$_tb_nft" ] && tb_have iptables-save && tb_no_legacy_tables ip ipv4; then
        tb_part iptables 10000 tb_empty_ruleset
    else
        tb_part_if iptables-save iptables 10000 iptables-save
    fi
    if [ -z "$_tb_nft" ] && tb_have ip6tables-save && tb_no_legacy_tables ip6 ipv6; then
        tb_part ip6tables 10000 tb_empty_ruleset
    else
        tb_part_if ip6tables-save ip6tables 10000 ip6tables-save
    fi
}

p_cron() {
    tb_collect_files /etc/crontab /etc/anacrontab /etc/cron.d/* /etc/crontabs/* \
        /var/spool/cron/crontabs/* /var/spool/cron/* /var/spool/cron/tabs/*
    _tb_ifs=$IFS
    IFS=$TB_NL
    # shellcheck disable=SC2086
    set -- $TB_FILES
    IFS=$_tb_ifs
    tb_read_part Llines entries 5000 "$@"
    tb_collect_files /etc/cron.hourly/* /etc/cron.daily/* /etc/cron.weekly/* \
        /etc/cron.monthly/* /etc/periodic/*/* /var/spool/cron/atjobs/* /var/spool/at/*
    IFS=$TB_NL
    # shellcheck disable=SC2086
    set -- $TB_FILES
    IFS=$_tb_ifs
    if [ -n "$TB_FAST" ]; then
        tb_walk_files scripts 2000 - h "$@"
    else
        tb_part scripts 2000 tb_hash_files "$@"
    fi
    if tb_systemd_running; then
        tb_units_part systemd_timers 2000 timer
    else
        tb_unavail systemd_timers "systemd not running"
    fi
}

p_mounts() {
    tb_read_part - mounts 2000 /proc/mounts
    tb_part_if df df 2000 tb_t 15 df -P
}

# tb_sysctl_grep: "PATH:VALUE" for every value under /proc/sys/{net,kernel,vm}, in one grep
# process (the filter turns them into `sysctl -a` lines). Unreadable entries (write-only
# triggers, unset secrets) make grep exit 2: expected, not a failure.
tb_sysctl_grep() {
    set --
    for _tb_d in /proc/sys/net /proc/sys/kernel /proc/sys/vm; do
        [ -d "$_tb_d" ] && set -- "$@" "$_tb_d"
    done
    if [ $# -eq 0 ]; then
        echo "no /proc/sys/net, /proc/sys/kernel or /proc/sys/vm" >&2
        return 1
    fi
    if [ -n "$TB_NATIVE" ]; then
        "$TB_NATIVE" sysctl "$@"
    else
        grep -rs '' "$@"
    fi
    _tb_rc=$?
    [ "$_tb_rc" -eq 2 ] && return 0
    return "$_tb_rc"
}

tb_sysctl() {
    sysctl -a 2>/dev/null | awk '/^(net|kernel|vm)\./'
}

p_sysctl() {
    if [ -d /proc/sys ] && { [ -n "$TB_NATIVE" ] || tb_have grep; }; then
        tb_part_m g sysctl 20000 tb_sysctl_grep
    elif tb_have sysctl; then
        tb_part sysctl 20000 tb_sysctl
    else
        tb_unavail sysctl "no /proc/sys and sysctl not found"
    fi
}

p_etc_files() {
    if [ -n "$TB_FAST" ]; then
        tb_walk_part stat 10000 - W E
        tb_walk_part sha256 10000 - H E
        return
    fi
    TB_LIMIT=10000
    tb_ctl p stat 10000 X
    tb_run tb_stat_hash_tree /etc
    tb_part_end stat "$TB_RC" "$TB_ERRF"
    tb_ctl p sha256 10000 -
    tb_ctl r
    tb_part_end sha256 "$TB_RC"
}

# tb_app_find ROOT...: one stat line for each regular file, symlink and directory at most 6
# levels below the roots, in ONE walk (batched stat, no process per file), staying on their
# file systems. Pruned: dot-directories (caches, VCS metadata, virtualenvs, ~/.ssh: noise, or
# listed by their own probes), __pycache__, TB_APP_SKIP and this script's work directory.
# Dependency trees (node_modules, site-packages, dist-packages) are listed but not entered.
tb_app_find() {
    set -- "$@" -xdev -maxdepth 6 \( -path "${TB_W:-/nonexistent}" -o -path "$TB_HIDE" -o -path "$TB_APP_SKIP" \
        -o -name __pycache__ -o -type d -name '.?*' \) -prune -o \( \(
    _tb_or=  # no -false: busybox find lacks it
    for _tb_f in $TB_APP_DEPS; do
        set -- "$@" $_tb_or -name "$_tb_f"
        _tb_or=-o
    done
    tb_t 60 find "$@" \) -prune -o -type f -o -type l -o -type d \) \
        -exec stat -c "$TB_STATFMT" {} + | head -n $((TB_LIMIT + 1))
}

p_app_files() {
    tb_roots_probe app_files "$TB_APP_ROOTS" tb_app_find A
}

# tb_secret_find: print candidate files under TB_SECRET_DIRS in one walk: by name (key
# material, certificates, credential stores; any depth) or else by a PEM private-key header
# (files < 64 KiB at most 5 levels below a root, so that big trees stay cheap). Caches,
# VCS metadata and language package trees are pruned.
tb_secret_find() {
    set -f
    set -- \( -path "${TB_W:-/nonexistent}" -o -path "$TB_HIDE"
    for _tb_f in $TB_SECRET_PRUNE; do set -- "$@" -o -name "$_tb_f"; done
    set -- "$@" \) -prune -o -type f \( \(
    _tb_or=  # no -false: busybox find lacks it
    for _tb_f in $TB_SECRET_NAMES; do
        set -- "$@" $_tb_or -name "$_tb_f"
        _tb_or=-o
    done
    set -- "$@" \) -print -o
    for _tb_d in $TB_SECRET_DIRS; do
        set -- "$@" ! -path "$_tb_d/*/*/*/*/*/*"
    done
    set +f
    # shellcheck disable=SC2086
    tb_t 30 find $TB_SECRET_DIRS -xdev "$@" -size -64k \
        -exec grep -l -E -e '-----BEGIN ([A-Z0-9]+ )*PRIVATE KEY-----' {} + \) 2>/dev/null
}

# tb_secret_dirs: TB_SECRET_DIRS = those of TB_SECRET_ROOTS that are directories.
tb_secret_dirs() {
    TB_SECRET_DIRS=
    for _tb_d in $TB_SECRET_ROOTS; do
        [ -d "$_tb_d" ] && TB_SECRET_DIRS="$TB_SECRET_DIRS $_tb_d"
    done
    return 0
}

p_secrets() {
    tb_secret_dirs
    if [ -z "$TB_SECRET_DIRS" ]; then
        tb_unavail secrets "none of $TB_SECRET_ROOTS exists"
        return
    fi
    if [ -n "$TB_FAST" ]; then
        tb_walk_part files 2000 - W S
        tb_walk_part sha256 2000 - H S
        tb_walk_part headers 5000 u G S
        return
    fi
    if [ -n "$TB_W" ]; then
        tb_secret_find >"$TB_W/secrets"
        # At most 2000 files; read by the shell itself (no head, no subshell).
        set --
        while IFS= read -r _tb_f && [ $# -lt 2000 ]; do
            set -- "$@" "$_tb_f"
        done <"$TB_W/secrets"
    else
        TB_FILES=$(tb_secret_find | head -n 2000)
        _tb_ifs=$IFS
        IFS=$TB_NL
        # shellcheck disable=SC2086
        set -- $TB_FILES
        IFS=$_tb_ifs
    fi
    tb_part_m S files 2000 tb_stat_files "$@"
    tb_part sha256 2000 tb_hash_files "$@"
    tb_part_m u headers 5000 tb_pem_headers "$@"
}

tb_pem_headers() {
    [ $# -gt 0 ] || return 0
    find "$@" -maxdepth 0 -type f -size -1024k -exec grep -H -o -E '^-----BEGIN [A-Z0-9 ]+-----' {} + \
        2>/dev/null
    return 0
}

p_network() {
    if tb_have ip; then
        tb_part addr 2000 ip -o addr show
        tb_which busybox
        _tb_bb=$TB_WHICH
        tb_which ip
        if [ -n "$TB_WHICH" ] && { [ -z "$_tb_bb" ] || ! [ "$TB_WHICH" -ef "$_tb_bb" ]; }; then
            # iproute2 (not busybox's applet): both families' routes in one process, every
            # table (the host keeps the main table's, as `ip route` and `ip -6 route` show them)
            tb_part route_all 5000 ip route show table all
        else
            tb_part route 2000 ip route show
            tb_part route6 2000 ip -6 route show
        fi
    else
        tb_unavail network "ip not found"
    fi
}

# Router probes (FRR): only where vtysh exists. Each vtysh call is a part of its own, so a
# daemon that is down costs only its own part; JSON where FRR offers it. Kernel routes and
# the nftables ruleset are the `network` and `firewall` probes' (taken on every node).
TB_FRR_CONF=${TESTBED_PROBE_FRR_CONF:-/etc/frr/frr.conf}

tb_vtysh() {
    tb_t 30 vtysh -c "$1"
}

p_router() {
    if ! tb_have vtysh; then
        tb_unavail router "vtysh not found"
        return
    fi
    tb_part running 5000 tb_vtysh "show running-config"
    if [ -f "$TB_FRR_CONF" ]; then
        tb_read_part - saved 5000 "$TB_FRR_CONF"
    else
        tb_unavail saved "no $TB_FRR_CONF"
    fi
    tb_part rib 20000 tb_vtysh "show ip route json"
    tb_part ospf 5000 tb_vtysh "show ip ospf neighbor json"
    tb_part bgp 5000 tb_vtysh "show bgp summary json"
    tb_part bfd 5000 tb_vtysh "show bfd peers json"
    tb_part_if ip links 2000 ip -o link show
}

# ------------------------------------------------------------------------------------ main

tb_main() {
    trap - EXIT
    tb_up
    printf '@@testbed-snapshot v=1 nonce=%s pid=%s up=%s native=%s@@\n' "$TB_NONCE" "$$" "$TB_UP" "$TB_NATIVE_ON"
    tb_walk
    for _tb_probe in boot os tmp_files services listening processes users sudoers authorized_keys \
        packages repos pkg_health firewall cron mounts sysctl etc_files secrets app_files network router; do
        tb_want "$_tb_probe" || continue
        tb_begin "$_tb_probe"
        "p_$_tb_probe"
        tb_end
    done
    tb_up
    printf '@@testbed-done %s probes=%s up=%s@@\n' "$TB_NONCE" "$TB_COUNT" "$TB_UP"
}

TB_ONLY="$*"
# GNU timeout (a file of its own) works; a symlink is most likely busybox, whose old
# versions want `timeout -t SECS`: test that one (two processes) before relying on it.
TB_HAVE_TIMEOUT=
tb_which timeout
TB_TIMEOUT=$TB_WHICH
case $TB_TIMEOUT in
    /*)
        if [ ! -L "$TB_TIMEOUT" ] || timeout 5 true >/dev/null 2>&1; then
            TB_HAVE_TIMEOUT=1
        fi
        ;;
esac
tb_nonce
TB_W_KEPT=
tb_workdir
if [ -n "$TB_W" ] && [ -z "$TB_W_KEPT" ]; then
    trap 'rm -rf "$TB_W"' EXIT
    trap 'exit 143' HUP INT TERM
fi
# Everything goes through the filter (the native one, or awk): without either there is no
# output to frame.
tb_which awk
TB_AWK=$TB_WHICH
# busybox's awk cuts a record at a NUL byte (/proc/PID/cmdline): processes then come from
# ps; TESTBED_PROBE_PORTABLE=1 asks for ps too. The native filter keeps NUL bytes.
TB_PROC_AWK=
if [ -n "$TB_NATIVE" ]; then
    TB_PROC_AWK=1
elif [ -n "$TB_AWK" ] && [ -z "${TESTBED_PROBE_PORTABLE:-}" ]; then
    tb_which busybox
    { [ -n "$TB_WHICH" ] && [ "$TB_AWK" -ef "$TB_WHICH" ]; } || TB_PROC_AWK=1
fi
if [ -z "$TB_AWK" ] && [ -z "$TB_NATIVE" ]; then
    tb_up
    printf '@@testbed-snapshot v=1 nonce=%s pid=%s up=%s native=%s@@\n' "$TB_NONCE" "$$" "$TB_UP" "$TB_NATIVE_ON"
    echo "snapshot: awk not found" >&2
    exit 1
fi
if [ -n "$TB_NATIVE" ]; then
    tb_main | "$TB_NATIVE" filter
elif [ -n "$TB_W" ] && printf '%s\n' "$TB_FILTER" >"$TB_W/filter.awk"; then
    tb_main | awk -f "$TB_W/filter.awk"
else
    tb_main | awk "$TB_FILTER"
fi
exit 0
