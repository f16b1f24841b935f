/* tbprobe: the native side of snapshot.sh, for guests where a static binary built on the lab
 * host runs (see testbed/probes/native/__init__.py). One program; its first five commands
 * are each a drop-in for what the script otherwise starts:
 *
 *   tbprobe filter          the output filter (the script's awk program TB_FILTER)
 *   tbprobe walk ...        the one walk (the script's find command; see walk.c)
 *   tbprobe sysctl DIR...   grep -rs '' DIR... (the sysctl probe's read of /proc/sys)
 *   tbprobe authkeys CFG... the authorized_keys files (the script's awk and loop; authkeys.h)
 *   tbprobe timeout S CMD   timeout S CMD (coreutils' timeout, as the script uses it)
 *   tbprobe zerofree        zero the guest's free memory before its state is saved
 *
 * Those five give the output their counterparts give, byte for byte, so the host's parsers
 * cannot tell them apart; the tests run the script both ways and compare. zerofree is the
 * harness's, before a lab's state is saved (testbed.runner.fastreset). */
#include <stdio.h>
#include <string.h>

#include "authkeys.h"
#include "filter.h"
#include "sysctl.h"
#include "timeout.h"
#include "walk.h"
#include "zerofree.h"

int main(int argc, char **argv) {
    if (argc >= 2 && strcmp(argv[1], "filter") == 0) return filter_main();
    if (argc >= 2 && strcmp(argv[1], "walk") == 0) return walk_main(argc - 2, argv + 2);
    if (argc >= 2 && strcmp(argv[1], "sysctl") == 0) return sysctl_main(argc - 2, argv + 2);
    if (argc >= 2 && strcmp(argv[1], "authkeys") == 0) return authkeys_main(argc - 2, argv + 2);
    if (argc >= 2 && strcmp(argv[1], "timeout") == 0) return timeout_main(argc - 2, argv + 2);
    if (argc >= 2 && strcmp(argv[1], "zerofree") == 0) return zerofree_main();
    if (argc >= 2 && strcmp(argv[1], "version") == 0) {
        puts("tbprobe 1");
        return 0;
    }
    fputs("usage: tbprobe filter | walk OPTIONS -- START... | sysctl DIR... | authkeys CONFIG... |\n"
          "       timeout SECONDS COMMAND... | zerofree | version\n", stderr);
    return 2;
}
