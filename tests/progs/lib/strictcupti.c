/* tests/progs/lib/strictcupti.c: a libcupti.so.13 that behaves as NVIDIA's does without a usable
 * driver (tests/e2e/test_cupti.py DriverGate): cuptiSubscribe aborts the process unless the
 * process's libcuda.so.1 is loaded and initialized (cuDeviceGetCount succeeds), and
 * cuptiGetResultString always aborts (CUDA 13.2's libcupti recurses there until the stack ends
 * when it cannot start its driver). STRICTCUPTI_REFUSE=1: a subscription that would be allowed
 * answers CUPTI_ERROR_NOT_INITIALIZED instead. Callbacks are never called. */
#include <cupti.h>
#include <dlfcn.h>
#include <stdio.h>
#include <stdlib.h>
#include <unistd.h>

#define API __attribute__((visibility("default")))

static void die(const char *why)
{
    static const char head[] = "strictcupti: ";
    (void)!write(2, head, sizeof head - 1);
    for (const char *p = why; *p; p++)
        (void)!write(2, p, 1);
    (void)!write(2, "\n", 1);
    abort();
}

static int driver_initialized(void)
{
    void *h = dlopen("libcuda.so.1", RTLD_LAZY | RTLD_NOLOAD);
    if (!h)
        return 0;
    int (*count)(int *) = (int (*)(int *))dlsym(h, "cuDeviceGetCount");
    int n = 0;
    int ok = count && count(&n) == 0 && n > 0;
    dlclose(h);
    return ok;
}

static CUptiResult subscribe(CUpti_SubscriberHandle *sub)
{
    if (!driver_initialized())
        die("subscribed before the driver was initialized");
    const char *refuse = getenv("STRICTCUPTI_REFUSE");
    if (refuse && *refuse == '1')
        return CUPTI_ERROR_NOT_INITIALIZED;
    static int handle;
    *sub = (CUpti_SubscriberHandle)&handle;
    fprintf(stderr, "strictcupti: subscribed after the driver's initialization\n");
    return CUPTI_SUCCESS;
}

API CUptiResult cuptiSubscribe(CUpti_SubscriberHandle *sub, CUpti_CallbackFunc cb, void *u)
{
    (void)cb, (void)u;
    return subscribe(sub);
}

API CUptiResult cuptiSubscribe_v2(CUpti_SubscriberHandle *sub, CUpti_CallbackFunc cb, void *u,
                                  CUpti_SubscriberParams *params)
{
    (void)cb, (void)u, (void)params;
    return subscribe(sub);
}

API CUptiResult cuptiUnsubscribe(CUpti_SubscriberHandle sub)
{
    (void)sub;
    return CUPTI_SUCCESS;
}

API CUptiResult cuptiEnableCallback(uint32_t enable, CUpti_SubscriberHandle sub,
                                    CUpti_CallbackDomain domain, CUpti_CallbackId cbid)
{
    (void)enable, (void)sub, (void)domain, (void)cbid;
    return CUPTI_SUCCESS;
}

API CUptiResult cuptiGetResultString(CUptiResult result, const char **str)
{
    (void)result, (void)str;
    die("cuptiGetResultString called");
    return CUPTI_ERROR_UNKNOWN;
}
