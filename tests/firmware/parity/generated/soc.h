/* The native parity build's SoC: the rig's BCH engine (its registers are the stub bus's, stub_bus.c). */
#ifndef NANDRIG_PARITY_SOC_H
#define NANDRIG_PARITY_SOC_H
#define BCH_M 15
#define BCH_K_BYTES 2048
#ifndef BCH_T_MAX
#define BCH_T_MAX 64
#endif
#endif
