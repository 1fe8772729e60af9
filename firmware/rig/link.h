/* The byte link to the host (the UART on every rig). */
#ifndef NANDRIG_LINK_H
#define NANDRIG_LINK_H
#include <stddef.h>
#include <stdint.h>
int link_getc(void);  /* next received byte, or -1 when none is waiting */
void link_write(const uint8_t *p, size_t n);  /* waits until the link took every byte */
int link_put(uint8_t c);  /* one byte if the link takes it now (nonzero), else nothing */
#endif
