/* sim/device_facts.h: the one simulated device as all three simulated libraries describe it
 * (libcudart's properties, libcuda's cuDeviceGet*): name, UUID, memory size. */
#ifndef SIM_DEVICE_FACTS_H
#define SIM_DEVICE_FACTS_H

#define SIM_DEVICE_NAME "Simulated CUDA device (syncspy)"
#define SIM_DEVICE_UUID "syncspy-simcuda" /* 16 bytes with its NUL */
#define SIM_DEVICE_BYTES (80ull << 30)

#endif
