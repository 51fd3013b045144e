// bench/rf_probe.cpp: the floor of backward attribution through torch's
// RecordFunction (issue 26 item 2): a global callback on FUNCTION and
// BACKWARD_FUNCTION scopes that only counts what it sees (ops whose
// RecordFunction carries an autograd sequence number, those that carry none,
// and backward nodes), switched on and off by the probe's caller. Built and
// loaded by bench/record_function_floor.py against the wheel's own headers;
// never part of the agent.
#include <ATen/record_function.h>

#include <atomic>

namespace
{
std::atomic<long> ops_with_seq, ops_without_seq, backward_nodes;
at::CallbackHandle handle;

std::unique_ptr<at::ObserverContext> on_start(const at::RecordFunction &fn)
{
    if (fn.scope() == at::RecordScope::BACKWARD_FUNCTION)
        backward_nodes.fetch_add(1, std::memory_order_relaxed);
    else if (fn.seqNr() >= 0)
        ops_with_seq.fetch_add(1, std::memory_order_relaxed);
    else
        ops_without_seq.fetch_add(1, std::memory_order_relaxed);
    return nullptr;
}

void on_end(const at::RecordFunction &, at::ObserverContext *)
{
}
} // namespace

extern "C" {
__attribute__((visibility("default"))) int rf_probe_on(void)
{
    try {
        if (!handle)
            handle = at::addGlobalCallback(
                at::RecordFunctionCallback(on_start, on_end)
                    .scopes({at::RecordScope::FUNCTION, at::RecordScope::BACKWARD_FUNCTION}));
        else
            at::reenableCallback(handle);
        return 0;
    } catch (...) {
        return -1;
    }
}

__attribute__((visibility("default"))) void rf_probe_off(void)
{
    if (handle)
        at::disableCallback(handle);
}

__attribute__((visibility("default"))) long rf_probe_count(int which)
{
    return which == 0   ? ops_with_seq.load()
           : which == 1 ? ops_without_seq.load()
                        : backward_nodes.load();
}
}
