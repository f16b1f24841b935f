/* `tbprobe authkeys CONFIG...`: the authorized_keys files the snapshot reads, as the script
 * finds them with an awk program and a loop (tb_authkeys_files): the AuthorizedKeysFile
 * patterns of the sshd configuration files (default .ssh/authorized_keys and
 * .ssh/authorized_keys2), expanded for every /etc/passwd entry with a home (%h, %u, %U,
 * %% as awk's gsub does them, relative patterns under the home, repeated slashes made one),
 * those that are regular files (links followed), each once, in that order; then root's
 * two default files when they are regular files not listed yet. One path per line. */
#ifndef TBPROBE_AUTHKEYS_H
#define TBPROBE_AUTHKEYS_H

int authkeys_main(int argc, char **argv);

#endif
