// tests/progs/cxx_throw.cpp: C++ exceptions around a sync. sync_then_throw() makes one
// cudaDeviceSynchronize, then throws a std::runtime_error that main catches; done 3 times.
// Prints "caught 3". The agent must leave the program's C++ exception ABI (libgcc_s's
// _Unwind_RaiseException) as it is: test_agent.Library.test_unwinder_stays_private.
#include "common.h"
#include <stdexcept>

__attribute__((noinline)) void sync_then_throw(int i)
{
    CHECK(cudaDeviceSynchronize());
    throw std::runtime_error("step " + std::to_string(i));
}

int main()
{
    int caught = 0;
    for (int i = 0; i < 3; i++) {
        try {
            sync_then_throw(i);
        } catch (const std::runtime_error &) {
            caught++;
        }
    }
    std::printf("caught %d\n", caught);
    return 0;
}
