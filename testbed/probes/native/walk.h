/* The one walk of snapshot.sh in C: what its `find` command line does (stat lines, sha256
 * of chosen files, PEM markers of secret candidates, pruning), written to the same files in
 * the same formats, so the filter (awk or native) loads either. */
#ifndef TBPROBE_WALK_H
#define TBPROBE_WALK_H

int walk_main(int argc, char **argv);

#endif
