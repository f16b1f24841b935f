/* `tbprobe timeout SECONDS COMMAND [ARG...]`: what the script's `timeout` does for it, without
 * starting a dynamically linked program: COMMAND in a process group of its own; at the
 * deadline SIGTERM to that group and exit status 124; otherwise COMMAND's status (a signal
 * that ended it ends this process too, so a shell sees 128 + it; 126 when it cannot be run,
 * 127 when it is not found). */
#ifndef TBPROBE_TIMEOUT_H
#define TBPROBE_TIMEOUT_H

int timeout_main(int argc, char **argv);

#endif
