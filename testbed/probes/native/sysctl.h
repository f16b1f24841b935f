/* `grep -rs '' DIR...` over /proc/sys in one process: "PATH:LINE" for every line of every
 * readable file below the directories (kernel listing order, symlinks not followed), the
 * exit status grep gives (0 lines printed, 1 none, 2 a file could not be read). */
#ifndef TBPROBE_SYSCTL_H
#define TBPROBE_SYSCTL_H

int sysctl_main(int argc, char **argv);

#endif
