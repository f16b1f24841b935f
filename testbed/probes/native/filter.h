/* The output filter of snapshot.sh (its TB_FILTER awk program) in C: the same verbs, the
 * same output byte for byte, so snapshot.sh pipes its probes into either. See the
 * "Output grammar" and "Speed" sections of snapshot.sh for what it does. */
#ifndef TBPROBE_FILTER_H
#define TBPROBE_FILTER_H

int filter_main(void);

#endif
