#!/bin/sh
# testbed machine-state snapshot.
#
# Uploaded to a guest and run once as root: `sh snapshot.sh [PROBE...]` (no arguments = all
# probes). POSIX sh only: must run under dash, bash and busybox ash. It never uses `set -e`;
# a failing or missing tool only marks its own probe or part unavailable/failed. It reads
# state and changes nothing outside its private work directory (under /run or /dev/shm when
# writable), which it removes on exit.
#
# Output grammar. NONCE is a random token drawn per run; a line is a marker only if it is
# exactly one of the forms below AND carries this run's NONCE, so probe output (file names,
# crontab lines, ...) can never be mistaken for a marker.
#
#   @@testbed-snapshot v=1 nonce=NONCE pid=PID up=SECONDS@@     first line
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
# /sys and /dev are never walked (only /dev/shm is listed, as a temp area).

# TESTBED_PROBE_PATH overrides the search path (tests use it to run with busybox tools only).
PATH=${TESTBED_PROBE_PATH:-/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin}
LC_ALL=C
QUOTING_STYLE=c
# No colours, pagers or locale-dependent output from any tool.
EINFO_COLOR=NO
SYSTEMD_COLORS=0
SYSTEMD_PAGER=
PAGER=cat
export PATH LC_ALL QUOTING_STYLE EINFO_COLOR SYSTEMD_COLORS SYSTEMD_PAGER PAGER
unset LANG LANGUAGE
umask 077

TB_TAB=$(printf '\t')
TB_MAXLINES=5000
TB_MAXLINE=4096
TB_LIMIT=$TB_MAXLINES
TB_COUNT=0
TB_PROBE=
TB_PROBE_RC=0
TB_UP=
# stat format shared by every file listing: type mode uid user gid group size mtime name.
# The name (%N) comes last; GNU stat quotes it C-style (QUOTING_STYLE=c), busybox prints it raw.
TB_STATFMT="%F${TB_TAB}%a${TB_TAB}%u${TB_TAB}%U${TB_TAB}%g${TB_TAB}%G${TB_TAB}%s${TB_TAB}%Y${TB_TAB}%N"
# Roots listed by `tmp_files` and searched by `secrets` (overridable for tests; no blanks).
TB_TMP_ROOTS=${TESTBED_PROBE_TMP_DIRS:-/tmp /var/tmp /dev/shm}
TB_SECRET_ROOTS=${TESTBED_PROBE_SECRET_DIRS:-/root /home /tmp /var/tmp /opt /srv /var/www /mnt}

tb_up() {
    TB_UP=
    read -r TB_UP _tb_rest 2>/dev/null </proc/uptime
}

tb_nonce() {
    TB_NONCE=
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
    if [ -n "$TB_HAVE_TIMEOUT" ]; then
        timeout "$_tb_secs" "$@"
    else
        "$@"
    fi
}

tb_workdir() {
    TB_W=
    for _tb_d in /run /dev/shm /tmp /var/tmp; do
        [ -d "$_tb_d" ] && [ -w "$_tb_d" ] || continue
        TB_W=$(mktemp -d "$_tb_d/testbed-probe.XXXXXXXX" 2>/dev/null) && [ -d "$TB_W" ] && return 0
        TB_W="$_tb_d/testbed-probe.$$"
        mkdir -m 700 "$TB_W" 2>/dev/null && return 0
        TB_W=
    done
    return 1
}

# tb_cap MAXLINES: copy stdin to stdout, newline-terminating the last line, cutting lines
# longer than TB_MAXLINE bytes and stopping after MAXLINES lines, then report any capping.
tb_cap() {
    awk -v max="$1" -v w="$TB_MAXLINE" -v n="$TB_NONCE" '
        NR > max { more = 1; exit }
        { if (length($0) > w) { $0 = substr($0, 1, w); cut++ } print }
        END {
            if (more || cut)
                printf "@@testbed-truncated %s max_lines=%d more=%d long_lines=%d@@\n", n, max, more, cut
        }'
}

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

# tb_part NAME MAXLINES CMD [ARG...]: run CMD (a command or shell function) as one part.
tb_part() {
    _tb_pn=$1
    TB_LIMIT=$2
    shift 2
    printf '@@testbed-part %s %s@@\n' "$TB_NONCE" "$_tb_pn"
    if [ -n "$TB_W" ]; then
        "$@" >"$TB_W/out" 2>"$TB_W/err" </dev/null
        _tb_rc=$?
        tb_cap "$TB_LIMIT" <"$TB_W/out"
        if [ -s "$TB_W/err" ]; then
            awk -v n="$TB_NONCE" 'NR > 20 { exit }
                { printf "@@testbed-stderr %s@@ %s\n", n, substr($0, 1, 500) }' "$TB_W/err"
        fi
        : >"$TB_W/out"
    else
        # No writable work directory: the exit status cannot be recovered through the pipe.
        { "$@" 2>/dev/null </dev/null; } | tb_cap "$TB_LIMIT"
        _tb_rc=-1
    fi
    printf '@@testbed-partend %s %s rc=%s@@\n' "$TB_NONCE" "$_tb_pn" "$_tb_rc"
    [ "$_tb_rc" = 0 ] || TB_PROBE_RC=1
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

# tb_existing PATH...: print the arguments that exist (one per line, globs left unmatched
# are dropped).
tb_existing() {
    for _tb_f in "$@"; do
        [ -e "$_tb_f" ] || [ -L "$_tb_f" ] && printf '%s\n' "$_tb_f"
    done
}

# tb_stat_tree ROOT...: one stat line for each entry under the roots (the roots included),
# staying on their file systems and skipping this script's work directory.
tb_stat_tree() {
    tb_t 60 find "$@" -xdev -path "${TB_W:-/nonexistent}" -prune -o \
        -exec stat -c "$TB_STATFMT" {} + | head -n $((TB_LIMIT + 1))
}

# tb_hash_tree ROOT...: sha256 of each regular file smaller than 1 MiB under the roots.
tb_hash_tree() {
    tb_t 60 find "$@" -xdev -path "${TB_W:-/nonexistent}" -prune -o \
        -type f -size -1024k -exec sha256sum {} + | head -n $((TB_LIMIT + 1))
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

# tb_lines FILE...: "FILE<TAB>LINE" for every line that is neither empty nor a comment.
tb_lines() {
    [ $# -gt 0 ] || return 0
    awk -v t="$TB_TAB" '/^[ \t]*(#|$)/ { next } { print FILENAME t $0 }' "$@"
}

# tb_lines_all FILE...: "FILE<TAB>LINE" for every line except comments; blank lines are kept
# (as "FILE<TAB>") because deb822 stanzas are separated by them.
tb_lines_all() {
    [ $# -gt 0 ] || return 0
    awk -v t="$TB_TAB" '/^[ \t]*#/ { next } { print FILENAME t $0 }' "$@"
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

# ---------------------------------------------------------------------------------- probes

tb_boot_kv() {
    _tb_b=
    read -r _tb_b 2>/dev/null </proc/sys/kernel/random/boot_id
    printf 'boot_id=%s\n' "$_tb_b"
    _tb_b=
    read -r _tb_b _tb_rest 2>/dev/null </proc/uptime
    printf 'uptime=%s\n' "$_tb_b"
    printf 'clock=%s\n' "$(date -u +%s)"
}

p_boot() {
    tb_part boot 20 tb_boot_kv
}

tb_os_release() {
    for _tb_f in /etc/os-release /usr/lib/os-release; do
        if [ -r "$_tb_f" ]; then
            cat "$_tb_f"
            return $?
        fi
    done
    echo "no os-release file" >&2
    return 1
}

tb_kernel_kv() {
    printf 'sysname=%s\n' "$(uname -s)"
    printf 'release=%s\n' "$(uname -r)"
    printf 'machine=%s\n' "$(uname -m)"
    printf 'version=%s\n' "$(uname -v)"
    _tb_h=
    read -r _tb_h 2>/dev/null </proc/sys/kernel/hostname
    printf 'hostname=%s\n' "$_tb_h"
}

p_os() {
    tb_part os_release 200 tb_os_release
    tb_part kernel 20 tb_kernel_kv
}

p_tmp_files() {
    # shellcheck disable=SC2046,SC2086
    set -- $(tb_existing $TB_TMP_ROOTS)
    if [ $# -eq 0 ]; then
        tb_unavail tmp_files "none of $TB_TMP_ROOTS exists"
        return
    fi
    tb_part entries 5000 tb_stat_tree "$@"
}

tb_systemd_running() {
    [ -d /run/systemd/system ] && tb_have systemctl
}

tb_openrc_running() {
    tb_have rc-status && { [ -d /run/openrc ] || [ -d /lib/rc/init.d ] || [ -f /sbin/openrc ]; }
}

p_services() {
    _tb_any=
    if tb_systemd_running; then
        _tb_any=1
        tb_part systemd_failed 2000 tb_t 30 systemctl list-units --failed --plain --no-legend --no-pager
        tb_part systemd_services 5000 tb_t 30 systemctl list-units --type=service --all --plain --no-legend --no-pager
        tb_part systemd_unit_files 5000 tb_t 30 systemctl list-unit-files --no-legend --no-pager
    fi
    if tb_openrc_running; then
        _tb_any=1
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
    if tb_have ps; then
        tb_part ps 5000 tb_ps
    else
        tb_part proc 5000 tb_proc_walk
    fi
}

tb_shadow_state() {
    awk -F: '{
        p = $2
        if (p == "") s = "empty"
        else if (p ~ /^[!*]/) s = "locked"
        else s = "set"
        print $1 ":" s ":" $3 ":" $4 ":" $5 ":" $8
    }' /etc/shadow
}

p_users() {
    tb_part passwd 5000 cat /etc/passwd
    tb_part group 5000 cat /etc/group
    if [ -r /etc/shadow ]; then
        tb_part shadow 5000 tb_shadow_state
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
    IFS='
'
    # shellcheck disable=SC2086
    set -- $TB_FILES
    IFS=$_tb_ifs
    tb_part files 2000 tb_stat_files "$@"
    tb_part sha256 2000 tb_hash_files "$@"
    tb_part lines 5000 tb_sudo_lines "$@"
}

tb_sudo_lines() {
    awk -v t="$TB_TAB" '
        /^[ \t]*[#@]include/ { print FILENAME t $0; next }
        /^[ \t]*#[0-9]/ { print FILENAME t $0; next }
        /^[ \t]*(#|$)/ { next }
        { print FILENAME t $0 }' "$@"
}

# Candidate authorized_keys paths: AuthorizedKeysFile patterns from sshd_config (default
# .ssh/authorized_keys .ssh/authorized_keys2) expanded for every passwd entry, plus root.
tb_authkeys_paths() {
    # shellcheck disable=SC2046
    awk -F: -v cfg="$TB_W/sshd_config" '
        FILENAME == cfg {
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
        }' "$TB_W/sshd_config" /etc/passwd
}

p_authorized_keys() {
    if [ -z "$TB_W" ]; then
        tb_unavail authorized_keys "no work directory"
        return
    fi
    cat /etc/ssh/sshd_config /etc/ssh/sshd_config.d/*.conf >"$TB_W/sshd_config" 2>/dev/null
    TB_FILES=
    _tb_ifs=$IFS
    IFS='
'
    for _tb_f in $(tb_authkeys_paths) /root/.ssh/authorized_keys /root/.ssh/authorized_keys2; do
        [ -f "$_tb_f" ] || continue
        case "
$TB_FILES" in
            *"
$_tb_f
"*) continue ;;
        esac
        TB_FILES="$TB_FILES$_tb_f
"
    done
    # shellcheck disable=SC2086
    set -- $TB_FILES
    IFS=$_tb_ifs
    tb_part files 2000 tb_stat_files "$@"
    tb_part sha256 2000 tb_hash_files "$@"
    tb_part keys 5000 tb_lines "$@"
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
        tb_part dpkg 30000 dpkg-query -W -f '${Package}\t${Version}\t${Architecture}\t${db:Status-Abbrev}\n'
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
    IFS='
'
    # shellcheck disable=SC2086
    set -- $TB_FILES
    IFS=$_tb_ifs
    tb_part lines 5000 tb_lines_all "$@"
}

p_pkg_health() {
    _tb_any=
    if tb_have dpkg; then
        _tb_any=1
        tb_part dpkg_audit 500 tb_t 60 dpkg --audit
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

p_firewall() {
    tb_part_if nft nft 10000 tb_t 20 nft list ruleset
    tb_part_if iptables-save iptables 10000 tb_t 20 iptables-save
    tb_part_if ip6tables-save ip6tables 10000 tb_t 20 ip6tables-save
}

p_cron() {
    tb_collect_files /etc/crontab /etc/anacrontab /etc/cron.d/* /etc/crontabs/* \
        /var/spool/cron/crontabs/* /var/spool/cron/* /var/spool/cron/tabs/*
    _tb_ifs=$IFS
    IFS='
'
    # shellcheck disable=SC2086
    set -- $TB_FILES
    IFS=$_tb_ifs
    tb_part entries 5000 tb_lines "$@"
    tb_collect_files /etc/cron.hourly/* /etc/cron.daily/* /etc/cron.weekly/* \
        /etc/cron.monthly/* /etc/periodic/*/* /var/spool/cron/atjobs/* /var/spool/at/*
    IFS='
'
    # shellcheck disable=SC2086
    set -- $TB_FILES
    IFS=$_tb_ifs
    tb_part scripts 2000 tb_hash_files "$@"
    if tb_systemd_running; then
        tb_part systemd_timers 2000 tb_t 30 systemctl list-units --type=timer --all --plain --no-legend --no-pager
    else
        tb_unavail systemd_timers "systemd not running"
    fi
}

p_mounts() {
    tb_part mounts 2000 cat /proc/mounts
    tb_part_if df df 2000 tb_t 15 df -P
}

tb_sysctl() {
    if tb_have sysctl; then
        sysctl -a 2>/dev/null | awk '/^(net|kernel|vm)\./'
    else
        grep -rs '' /proc/sys/net /proc/sys/kernel /proc/sys/vm
    fi
}

p_sysctl() {
    tb_part sysctl 20000 tb_sysctl
}

p_etc_files() {
    tb_part stat 10000 tb_stat_tree /etc
    tb_part sha256 10000 tb_hash_tree /etc
}

# tb_secret_find names|content: print candidate files under TB_SECRET_DIRS, either by name
# (key material, certificates, credential stores; any depth) or by a PEM private-key header
# (files < 64 KiB at most 5 levels below a root, so that big trees stay cheap). Caches,
# VCS metadata and language package trees are pruned.
tb_secret_find() {
    _tb_mode=$1
    shift
    TB_DEPTH=
    if [ "$_tb_mode" = names ]; then
        set -- "$@" -type f \( -name '*.pem' -o -name '*.key' -o -name 'id_rsa' -o -name 'id_dsa' \
            -o -name 'id_ecdsa' -o -name 'id_ed25519' -o -name 'id_ecdsa_sk' -o -name 'id_ed25519_sk' \
            -o -name '*.p12' -o -name '*.pfx' -o -name '*.jks' -o -name '*.keystore' -o -name '*.kdbx' \
            -o -name '*.ppk' -o -name '*.crt' -o -name '*.cer' -o -name '*.der' -o -name '*.gpg' \
            -o -name '.htpasswd' -o -name '.pgpass' -o -name '.netrc' -o -name '.git-credentials' \
            -o -name 'credentials*' -o -name '*.vault_pass' -o -name '.my.cnf' \) -print
    else
        set -- "$@" -type f -size -64k -exec grep -l -E -e '-----BEGIN ([A-Z0-9]+ )*PRIVATE KEY-----' {} +
        TB_DEPTH="-maxdepth 5"
    fi
    # shellcheck disable=SC2086
    tb_t 30 find $TB_SECRET_DIRS $TB_DEPTH -xdev \( -path "${TB_W:-/nonexistent}" -o -name .cache \
        -o -name node_modules -o -name .git -o -name site-packages -o -name dist-packages \
        -o -name .npm -o -name .cargo -o -name .rustup \) -prune -o "$@" 2>/dev/null
}

p_secrets() {
    TB_SECRET_DIRS=
    for _tb_d in $TB_SECRET_ROOTS; do
        [ -d "$_tb_d" ] && TB_SECRET_DIRS="$TB_SECRET_DIRS $_tb_d"
    done
    if [ -z "$TB_SECRET_DIRS" ]; then
        tb_unavail secrets "none of $TB_SECRET_ROOTS exists"
        return
    fi
    TB_FILES=$( { tb_secret_find names; tb_secret_find content; } | awk '!seen[$0]++' | head -n 2000)
    _tb_ifs=$IFS
    IFS='
'
    # shellcheck disable=SC2086
    set -- $TB_FILES
    IFS=$_tb_ifs
    tb_part files 2000 tb_stat_files "$@"
    tb_part sha256 2000 tb_hash_files "$@"
    tb_part headers 5000 tb_pem_headers "$@"
}

tb_pem_headers() {
    [ $# -gt 0 ] || return 0
    find "$@" -maxdepth 0 -type f -size -1024k -exec grep -H -o -E '^-----BEGIN [A-Z0-9 ]+-----' {} + \
        2>/dev/null | awk '!seen[$0]++'
    return 0
}

p_network() {
    if tb_have ip; then
        tb_part addr 2000 ip -o addr show
        tb_part route 2000 ip route show
        tb_part route6 2000 ip -6 route show
    else
        tb_unavail network "ip not found"
    fi
}

# ------------------------------------------------------------------------------------ main

TB_ONLY="$*"
TB_HAVE_TIMEOUT=
timeout 5 true >/dev/null 2>&1 && TB_HAVE_TIMEOUT=1
tb_nonce
tb_workdir
if [ -n "$TB_W" ]; then
    trap 'rm -rf "$TB_W"' EXIT
    trap 'exit 143' HUP INT TERM
fi
tb_up
printf '@@testbed-snapshot v=1 nonce=%s pid=%s up=%s@@\n' "$TB_NONCE" "$$" "$TB_UP"

for _tb_probe in boot os tmp_files services listening processes users sudoers authorized_keys \
    packages repos pkg_health firewall cron mounts sysctl etc_files secrets network; do
    tb_want "$_tb_probe" || continue
    tb_begin "$_tb_probe"
    "p_$_tb_probe"
    tb_end
done

tb_up
printf '@@testbed-done %s probes=%s up=%s@@\n' "$TB_NONCE" "$TB_COUNT" "$TB_UP"
exit 0
