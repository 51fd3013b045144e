/* tests/progs/cupti_client.c: a program that is a CUPTI client itself (as torch.profiler's
 * Kineto is), to check that syncspy never breaks it. Each step is client_sync (a 2 ms kernel and
 * cudaDeviceSynchronize through the shim) and drvlib_stream_sync (driver API only).
 * `cupti_client first N`: subscribes (cuptiSubscribe) before any CUDA call, then N steps.
 * `cupti_client late N`: N steps, then subscribes (cuptiSubscribe_v2), then N steps more.
 * Its callback counts the cudaDeviceSynchronize ENTER callbacks it receives; it prints the
 * subscription's result and that count. */
#include "common.h"
#include <cupti.h>
#include <string.h>

void drvlib_setup(unsigned long long kernel_ns);
void drvlib_stream_sync(void);
void drvlib_teardown(void);

static void k_client(void) {}
static int enters;

static void CUPTIAPI on_callback(void *userdata, CUpti_CallbackDomain domain,
                                 CUpti_CallbackId cbid, const void *cbdata)
{
    const CUpti_CallbackData *d = cbdata;
    if (userdata == &enters && domain == CUPTI_CB_DOMAIN_RUNTIME_API &&
        cbid == CUPTI_RUNTIME_TRACE_CBID_cudaDeviceSynchronize_v3020 &&
        d->callbackSite == CUPTI_API_ENTER && !strcmp(d->functionName, "cudaDeviceSynchronize"))
        enters++;
}

static CUptiResult subscribe(int v2)
{
    CUpti_SubscriberHandle h;
    CUptiResult r;
    if (v2) {
        char old[128] = "";
        CUpti_SubscriberParams p = {.structSize = CUpti_SubscriberParams_STRUCT_SIZE,
                                    .subscriberName = "cupti_client",
                                    .oldSubscriberName = old,
                                    .oldSubscriberSize = sizeof old};
        r = cuptiSubscribe_v2(&h, on_callback, &enters, &p);
    } else {
        r = cuptiSubscribe(&h, on_callback, &enters);
    }
    if (r == CUPTI_SUCCESS)
        r = cuptiEnableCallback(1, h, CUPTI_CB_DOMAIN_RUNTIME_API,
                                CUPTI_RUNTIME_TRACE_CBID_cudaDeviceSynchronize_v3020);
    return r;
}

__attribute__((noinline)) void client_sync(void)
{
    launch((const void *)k_client, 0);
    CHECK(cudaDeviceSynchronize());
}

static void steps(int n)
{
    for (int i = 0; i < n; i++) {
        client_sync();
        drvlib_stream_sync();
        mark_step();
    }
}

int main(int argc, char **argv)
{
    int late = argc > 1 && !strcmp(argv[1], "late");
    int n = argc > 2 ? atoi(argv[2]) : 3;
    CUptiResult r = CUPTI_SUCCESS;
    simcuda_set_kernel_ns((const void *)k_client, 2 * MS);
    if (!late)
        r = subscribe(0);
    drvlib_setup(2 * MS);
    steps(n);
    if (late) {
        r = subscribe(1);
        steps(n);
    }
    drvlib_teardown();
    const char *text = "?";
    cuptiGetResultString(r, &text);
    printf("cupti_client: subscribe %s, %d callbacks\n", text, enters);
    return 0;
}
