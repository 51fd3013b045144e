/* agent/apis.c: names and families of the interposed entry points (see apis.h). Constant tables. */
#include "agent/apis.h"

static const char *const names[API_COUNT] = {
#define X(name, fam) [API_##name] = #name,
    SYNCSPY_APIS(X)
#undef X
};

static const unsigned char families[API_COUNT] = {
#define X(name, fam) [API_##name] = fam,
    SYNCSPY_APIS(X)
#undef X
};

const char *api_name(enum api_id id)
{
    return (unsigned)id < API_COUNT ? names[id] : "?";
}

enum api_family api_family(enum api_id id)
{
    return (unsigned)id < API_COUNT ? (enum api_family)families[id] : FAM_SYNC;
}
