/* `tbprobe zerofree`: make the guest's free memory hold zeros, so that a saved memory image
 * (QEMU writes a zero page as a flag, not its 4 KiB) and every domain restored from it are
 * smaller. The page cache is left alone. */
#ifndef TBPROBE_ZEROFREE_H
#define TBPROBE_ZEROFREE_H

int zerofree_main(void);

#endif
