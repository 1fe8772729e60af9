/* BCH driver: the engine beside the ONFI controller, one codeword at a time in the page buffer,
 * and the page's ECC layout (docs/protocol.md, "ECC layout"). */
#ifndef NANDRIG_BCH_H
#define NANDRIG_BCH_H
#include <stdint.h>

/* spare bytes 0-1 keep the bad-block mark, 2-13 are the FLARES page profile, parity follows */
#define ECC_PROFILE_OFFSET 2
#define ECC_PARITY_OFFSET 14

int bch_present(void);
uint32_t bch_ecc_bytes(uint8_t t);
/* the largest t whose parity for every data codeword fits the spare area (0: none, or no engine,
 * or the engine's codewords are not codeword_bytes long) */
uint8_t bch_t_max(uint32_t page_bytes, uint32_t spare_bytes, uint32_t codeword_bytes);
void bch_encode(uint32_t data_addr, uint32_t parity_addr, uint8_t t);
/* corrected bits, or -1 when uncorrectable (the codeword stays as read); an erased codeword
 * (at most t zero bits) is rewritten as 0xFF and reports its zero bits */
int bch_decode(uint32_t data_addr, uint32_t parity_addr, uint8_t t);
#endif
