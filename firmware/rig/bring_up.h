/* Start-up: the chip on each target identified and at its fastest timing mode (main.c, and the parity tests' stub). */
#ifndef NANDRIG_BRING_UP_H
#define NANDRIG_BRING_UP_H
#include <stdint.h>
#include "onfi.h"

/* chips[k] on CE# k, k < n: bit k of the result when a chip answered there */
uint8_t bring_up(struct chip *chips, uint8_t n);

#endif
