// tests/progs/cxx_sites.cpp: calls the C++ library whose sync callers are hidden or static.
extern "C" void run_cxx_sites(void);
#include <cstdio>

int main()
{
    run_cxx_sites();
    std::printf("cxx_sites: done\n");
    return 0;
}
