// examples/minitorch/minitorch.cpp: libminitorch.so, PyTorch's native side in miniature for the
// demo and the Python end-to-end tests, on syncspy's simulated CUDA device. Functions carry
// PyTorch's names (at::native::nonzero_cuda, at::native::index, _local_scalar_dense_cuda,
// torch::autograd::generated::GatherBackward0::apply, ...) and sync the way PyTorch does, so the
// stacks syncspy records read like the real ones. The flat extern "C" API at the end is what
// the Python package calls through ctypes.
//
// How values are computed: the simulated device runs no code and its device memory is plain
// host memory, so every op computes its result on the host, at launch time, straight into the
// output's device memory, then launches the kernel that stands for it (which occupies the
// stream for a modelled duration). Data-dependent sizes (nonzero, unique, boolean masks) are
// read back as PyTorch does: cudaMemcpyAsync into pinned memory, then cudaStreamSynchronize.
#include "examples/minitorch/minitorch.h"

#include <cuda_runtime_api.h>
#include <dlfcn.h>
#include <pthread.h>

#include <algorithm>
#include <cmath>
#include <condition_variable>
#include <cstdio>
#include <cstring>
#include <deque>
#include <map>
#include <memory>
#include <mutex>
#include <numeric>
#include <string>
#include <thread>
#include <vector>

#include "simcuda.h"

#define MT_API extern "C" __attribute__((visibility("default")))
#define NOINLINE __attribute__((noinline))

namespace {
thread_local std::string last_error;

// An error for the caller (Python raises RuntimeError with it).
struct Error {
    std::string what;
};

void check(cudaError_t e, const char *call)
{
    if (e != cudaSuccess)
        throw Error{std::string(call) + ": " + cudaGetErrorName(e)};
}
} // namespace

#define C10_CUDA_CHECK(call) check((call), #call)

// ---- kernels: host addresses naming device kernels, with a modelled duration --------------

namespace at {
namespace native {
namespace kernels {
// name, then its modelled duration: fixed ns + ns per element (elements: what the op touches;
// multiply-adds for the gemms). Chosen so the demo's syncs wait a few ms each.
#define MT_KERNELS(X)                                                                              \
    X(fill_kernel, 4000, 0.02)                                                                     \
    X(normal_kernel, 6000, 0.05)                                                                   \
    X(random_kernel, 6000, 0.05)                                                                   \
    X(randperm_kernel, 40000, 0.5)                                                                 \
    X(copy_kernel, 3000, 0.02)                                                                     \
    X(add_kernel, 5000, 0.2)                                                                       \
    X(sub_kernel, 5000, 0.2)                                                                       \
    X(mul_kernel, 5000, 0.2)                                                                       \
    X(div_kernel, 5000, 0.2)                                                                       \
    X(compare_kernel, 4000, 0.1)                                                                   \
    X(where_kernel, 5000, 0.1)                                                                     \
    X(relu_kernel, 5000, 0.2)                                                                      \
    X(gemm_kernel, 8000, 2.0)                                                                     \
    X(nonzero_count_kernel, 60000, 0.2)                                                            \
    X(nonzero_write_kernel, 20000, 0.2)                                                            \
    X(sort_kernel, 1500000, 2.0)                                                                    \
    X(unique_kernel, 50000, 0.5)                                                                   \
    X(index_kernel, 10000, 0.2)                                                                    \
    X(index_put_kernel, 10000, 0.2)                                                                \
    X(masked_fill_kernel, 5000, 0.1)                                                               \
    X(gather_kernel, 10000, 0.2)                                                                   \
    X(reduce_kernel, 8000, 0.1)                                                                    \
    X(log_softmax_kernel, 20000, 0.5)                                                              \
    X(nll_loss_kernel, 15000, 0.5)                                                                 \
    X(backward_kernel, 10000, 0.4)                                                                 \
    X(gemm_backward_kernel, 10000, 1.0)                                                           \
    X(scatter_add_sort_kernel, 500000, 2.0)                                                        \
    X(accumulate_grad_kernel, 4000, 0.1)                                                           \
    X(sgd_kernel, 4000, 0.1)

// Each kernel is its own function: its address is the kernel's identity on the simulator
// (simcuda_set_kernel_ns, cudaLaunchKernel). The bodies differ (each stores its own name) so
// that no identical-code folding can merge two kernels into one address.
const char *volatile last_kernel_body;
#define MT_DEFINE_KERNEL(name, fixed, per) \
    NOINLINE void name() { last_kernel_body = #name; }
MT_KERNELS(MT_DEFINE_KERNEL)
} // namespace kernels
} // namespace native

namespace cuda {
struct KernelInfo {
    const char *name;
    void (*fn)();
    uint64_t fixed_ns;
    double ns_per_element;
};

#define MT_KERNEL_INFO(name, fixed, per) {#name, at::native::kernels::name, fixed, per},
#define MT_KERNEL_ID(name, fixed, per) K_##name,
enum KernelId { MT_KERNELS(MT_KERNEL_ID) kernel_count };
KernelInfo kernel_table[kernel_count] = {MT_KERNELS(MT_KERNEL_INFO)};
#define KERNEL(name) (at::cuda::kernel_table[at::cuda::K_##name])

std::mutex launch_mu; // the duration and the launch go together

size_t kernel_index(const char *name)
{
    for (size_t i = 0; i < kernel_count; i++)
        if (strcmp(kernel_table[i].name, name) == 0)
            return i;
    return kernel_count;
}

// PyTorch's default: the legacy default stream.
cudaStream_t getCurrentCUDAStream() { return 0; }

void launch_kernel(const KernelInfo &k, int64_t elements)
{
    uint64_t ns = k.fixed_ns + (uint64_t)(k.ns_per_element * (double)std::max<int64_t>(elements, 0));
    dim3 grid((unsigned)std::max<int64_t>(1, std::min<int64_t>(elements / 256, 65535)), 1, 1);
    dim3 block(256, 1, 1);
    std::lock_guard<std::mutex> g(launch_mu);
    simcuda_set_kernel_ns((const void *)k.fn, ns);
    C10_CUDA_CHECK(cudaLaunchKernel((const void *)k.fn, grid, block, nullptr, 0, getCurrentCUDAStream()));
}

// c10/cuda/CUDAFunctions.h: inline, so the sync shows up in the op that asked for it.
inline __attribute__((always_inline)) void memcpy_and_sync(void *dst, const void *src, size_t nbytes,
                                                           cudaMemcpyKind kind, cudaStream_t stream)
{
    C10_CUDA_CHECK(cudaMemcpyAsync(dst, src, nbytes, kind, stream));
    C10_CUDA_CHECK(cudaStreamSynchronize(stream));
}

// A small pinned buffer per thread for scalars read back (CachingHostAllocator's job).
void *pinned_scratch()
{
    thread_local void *p;
    if (!p)
        C10_CUDA_CHECK(cudaHostAlloc(&p, 64, cudaHostAllocDefault));
    return p;
}
} // namespace cuda

// ---- tensors and the caching allocator -----------------------------------------------------

struct TensorImpl {
    float *data; // device memory (host-addressable on the simulator)
    int64_t numel;
    size_t bytes; // the allocator's block size
};

class Tensor {
public:
    explicit Tensor(TensorImpl *impl) : impl_(impl) {}
    float *data_ptr() const { return impl_->data; }
    int64_t numel() const { return impl_->numel; }
    TensorImpl *release() const { return impl_; }

private:
    TensorImpl *impl_;
};
// The dispatcher's entry of each operator (aten's generated Operators.cpp): every call from
// Python goes through at::_ops::<name>_<overload>::call, which is how syncspy names the operator
// the user called (output/hints.c), so the miniature keeps it.
namespace _ops {
struct nonzero {
    static Tensor call(const Tensor &self);
};
struct _unique2 {
    static Tensor call(const Tensor &self, bool sorted);
};
struct index_Tensor {
    static Tensor call(const Tensor &self, const Tensor &indices, bool is_mask, int64_t row);
};
struct _local_scalar_dense {
    static double call(const Tensor &self);
};
} // namespace _ops
} // namespace at

namespace c10 {
namespace cuda {
namespace CUDACachingAllocator {
// Blocks go back to a free list, never to cudaFree (which would synchronize the device), as
// PyTorch's caching allocator does. Sizes round up to a power of two.
std::mutex mu;
std::multimap<size_t, void *> *free_blocks = new std::multimap<size_t, void *>;

size_t round_size(size_t bytes)
{
    size_t s = 512;
    while (s < bytes)
        s <<= 1;
    return s;
}

NOINLINE void *raw_alloc(size_t bytes)
{
    {
        std::lock_guard<std::mutex> g(mu);
        auto it = free_blocks->find(bytes);
        if (it != free_blocks->end()) {
            void *p = it->second;
            free_blocks->erase(it);
            return p;
        }
    }
    void *p = nullptr;
    C10_CUDA_CHECK(cudaMalloc(&p, bytes));
    return p;
}

void raw_delete(void *p, size_t bytes)
{
    std::lock_guard<std::mutex> g(mu);
    free_blocks->emplace(bytes, p);
}
} // namespace CUDACachingAllocator
} // namespace cuda
} // namespace c10

namespace at {
namespace detail {
Tensor empty_cuda(int64_t numel)
{
    if (numel < 0)
        throw Error{"negative size"};
    size_t bytes = c10::cuda::CUDACachingAllocator::round_size((size_t)std::max<int64_t>(numel, 1) * sizeof(float));
    float *data = (float *)c10::cuda::CUDACachingAllocator::raw_alloc(bytes);
    return Tensor(new TensorImpl{data, numel, bytes});
}
} // namespace detail

// ---- ops ------------------------------------------------------------------------------------

namespace native {
using at::cuda::launch_kernel;
using at::cuda::memcpy_and_sync;

static uint64_t splitmix64(uint64_t &s)
{
    uint64_t z = (s += 0x9e3779b97f4a7c15ull);
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
    return z ^ (z >> 31);
}

static double uniform01(uint64_t &s) { return (double)(splitmix64(s) >> 11) * (1.0 / 9007199254740992.0); }

Tensor &fill_(Tensor &self, double value)
{
    std::fill(self.data_ptr(), self.data_ptr() + self.numel(), (float)value);
    launch_kernel(KERNEL(fill_kernel), self.numel());
    return self;
}

Tensor &normal_(Tensor &self, uint64_t seed)
{
    float *d = self.data_ptr();
    for (int64_t i = 0; i < self.numel(); i++) {
        double u1 = std::max(uniform01(seed), 1e-12), u2 = uniform01(seed);
        d[i] = (float)(std::sqrt(-2.0 * std::log(u1)) * std::cos(2 * M_PI * u2));
    }
    launch_kernel(KERNEL(normal_kernel), self.numel());
    return self;
}

Tensor &random_(Tensor &self, int64_t low, int64_t high, uint64_t seed)
{
    if (high <= low)
        throw Error{"random_: high must be greater than low"};
    float *d = self.data_ptr();
    for (int64_t i = 0; i < self.numel(); i++)
        d[i] = (float)(low + (int64_t)(splitmix64(seed) % (uint64_t)(high - low)));
    launch_kernel(KERNEL(random_kernel), self.numel());
    return self;
}

Tensor randperm_cuda(int64_t n, uint64_t seed)
{
    Tensor out = at::detail::empty_cuda(n);
    float *d = out.data_ptr();
    for (int64_t i = 0; i < n; i++)
        d[i] = (float)i;
    for (int64_t i = n - 1; i > 0; i--)
        std::swap(d[i], d[splitmix64(seed) % (uint64_t)(i + 1)]);
    launch_kernel(KERNEL(randperm_kernel), n);
    return out;
}

Tensor clone(const Tensor &self)
{
    Tensor out = at::detail::empty_cuda(self.numel());
    std::copy(self.data_ptr(), self.data_ptr() + self.numel(), out.data_ptr());
    launch_kernel(KERNEL(copy_kernel), self.numel());
    return out;
}

static double apply_binary(int op, double a, double b)
{
    switch (op) {
    case MT_ADD: return a + b;
    case MT_SUB: return a - b;
    case MT_MUL: return a * b;
    default: return a / b;
    }
}

static const at::cuda::KernelInfo &binary_kernel(int op)
{
    switch (op) {
    case MT_ADD: return KERNEL(add_kernel);
    case MT_SUB: return KERNEL(sub_kernel);
    case MT_MUL: return KERNEL(mul_kernel);
    default: return KERNEL(div_kernel);
    }
}

// TensorIterator's job in two dimensions: broadcasting by zero strides.
Tensor binary_op(int op, const Tensor &a, const Tensor &b, int64_t rows, int64_t cols, int64_t a_rs,
                 int64_t a_cs, int64_t b_rs, int64_t b_cs)
{
    if (op < MT_ADD || op > MT_DIV)
        throw Error{"unknown binary op"};
    auto last = [&](int64_t rs, int64_t cs) { return rows && cols ? (rows - 1) * rs + (cols - 1) * cs : -1; };
    if (last(a_rs, a_cs) >= a.numel() || last(b_rs, b_cs) >= b.numel())
        throw Error{"binary op: shapes do not broadcast"};
    Tensor out = at::detail::empty_cuda(rows * cols);
    const float *x = a.data_ptr(), *y = b.data_ptr();
    float *o = out.data_ptr();
    for (int64_t r = 0; r < rows; r++)
        for (int64_t c = 0; c < cols; c++)
            o[r * cols + c] = (float)apply_binary(op, x[r * a_rs + c * a_cs], y[r * b_rs + c * b_cs]);
    launch_kernel(binary_kernel(op), rows * cols);
    return out;
}

Tensor scalar_op(int op, const Tensor &self, double s, bool reverse)
{
    if (op < MT_ADD || op > MT_DIV)
        throw Error{"unknown binary op"};
    Tensor out = at::detail::empty_cuda(self.numel());
    const float *x = self.data_ptr();
    for (int64_t i = 0; i < self.numel(); i++)
        out.data_ptr()[i] = (float)(reverse ? apply_binary(op, s, x[i]) : apply_binary(op, x[i], s));
    launch_kernel(binary_kernel(op), self.numel());
    return out;
}

Tensor compare(int op, const Tensor &self, double s)
{
    Tensor out = at::detail::empty_cuda(self.numel());
    const float *x = self.data_ptr();
    for (int64_t i = 0; i < self.numel(); i++) {
        bool r;
        switch (op) {
        case MT_EQ: r = x[i] == s; break;
        case MT_NE: r = x[i] != s; break;
        case MT_LT: r = x[i] < s; break;
        case MT_LE: r = x[i] <= s; break;
        case MT_GT: r = x[i] > s; break;
        case MT_GE: r = x[i] >= s; break;
        default: throw Error{"unknown comparison"};
        }
        out.data_ptr()[i] = r ? 1.0f : 0.0f;
    }
    launch_kernel(KERNEL(compare_kernel), self.numel());
    return out;
}

// torch.where(cond, a, b): no sync, the output has cond's size.
Tensor where(const Tensor &cond, const Tensor &a, const Tensor &b, int64_t n)
{
    for (const Tensor *t : {&cond, &a, &b})
        if (t->numel() != n && t->numel() != 1)
            throw Error{"where: shapes do not broadcast"};
    auto at_ = [](const Tensor &t, int64_t i) { return t.data_ptr()[t.numel() == 1 ? 0 : i]; };
    Tensor out = at::detail::empty_cuda(n);
    for (int64_t i = 0; i < n; i++)
        out.data_ptr()[i] = at_(cond, i) != 0.0f ? at_(a, i) : at_(b, i);
    launch_kernel(KERNEL(where_kernel), n);
    return out;
}

Tensor relu(const Tensor &self)
{
    Tensor out = at::detail::empty_cuda(self.numel());
    for (int64_t i = 0; i < self.numel(); i++)
        out.data_ptr()[i] = std::max(self.data_ptr()[i], 0.0f);
    launch_kernel(KERNEL(relu_kernel), self.numel());
    return out;
}

// x (n, in) @ w (out, in)^T + bias (out)
Tensor linear(const Tensor &x, const Tensor &w, const Tensor &bias, int64_t n, int64_t in, int64_t out_features)
{
    if (x.numel() != n * in || w.numel() != out_features * in || bias.numel() != out_features)
        throw Error{"linear: shape mismatch"};
    Tensor out = at::detail::empty_cuda(n * out_features);
    const float *X = x.data_ptr(), *W = w.data_ptr(), *B = bias.data_ptr();
    float *O = out.data_ptr();
    for (int64_t r = 0; r < n; r++)
        for (int64_t o = 0; o < out_features; o++) {
            float acc = B[o];
            for (int64_t k = 0; k < in; k++)
                acc += X[r * in + k] * W[o * in + k];
            O[r * out_features + o] = acc;
        }
    launch_kernel(KERNEL(gemm_kernel), n * in * out_features);
    return out;
}

// aten/src/ATen/native/cuda/Nonzero.cu: count on the device, bring the count to the host to
// size the output (the sync), then write the indices.
NOINLINE Tensor nonzero_cuda(const Tensor &self)
{
    int64_t count = 0;
    for (int64_t i = 0; i < self.numel(); i++)
        count += self.data_ptr()[i] != 0.0f;
    Tensor count_dev = at::detail::empty_cuda(1);
    count_dev.data_ptr()[0] = (float)count;
    launch_kernel(KERNEL(nonzero_count_kernel), self.numel());
    float *count_host = (float *)at::cuda::pinned_scratch();
    memcpy_and_sync(count_host, count_dev.data_ptr(), sizeof(float), cudaMemcpyDeviceToHost,
                    at::cuda::getCurrentCUDAStream());
    int64_t n = (int64_t)count_host[0];
    c10::cuda::CUDACachingAllocator::raw_delete(count_dev.data_ptr(), count_dev.release()->bytes);
    delete count_dev.release();
    Tensor out = at::detail::empty_cuda(n);
    for (int64_t i = 0, j = 0; i < self.numel() && j < n; i++)
        if (self.data_ptr()[i] != 0.0f)
            out.data_ptr()[j++] = (float)i;
    launch_kernel(KERNEL(nonzero_write_kernel), self.numel());
    return out;
}

// aten/src/ATen/native/cuda/Unique.cu: sort, mark the first of each run, bring the number of
// unique values to the host (the sync), then compact.
NOINLINE Tensor unique_cuda(const Tensor &self, bool sorted)
{
    (void)sorted; // always sorted, as on CUDA
    std::vector<float> v(self.data_ptr(), self.data_ptr() + self.numel());
    std::sort(v.begin(), v.end());
    v.erase(std::unique(v.begin(), v.end()), v.end());
    launch_kernel(KERNEL(sort_kernel), self.numel());
    Tensor count_dev = at::detail::empty_cuda(1);
    count_dev.data_ptr()[0] = (float)v.size();
    launch_kernel(KERNEL(unique_kernel), self.numel());
    float *count_host = (float *)at::cuda::pinned_scratch();
    memcpy_and_sync(count_host, count_dev.data_ptr(), sizeof(float), cudaMemcpyDeviceToHost,
                    at::cuda::getCurrentCUDAStream());
    int64_t n = (int64_t)count_host[0];
    c10::cuda::CUDACachingAllocator::raw_delete(count_dev.data_ptr(), count_dev.release()->bytes);
    delete count_dev.release();
    Tensor out = at::detail::empty_cuda(n);
    std::copy(v.begin(), v.begin() + n, out.data_ptr());
    return out;
}

static Tensor gather_rows(const Tensor &self, const float *idx, int64_t n, int64_t row)
{
    int64_t rows = row ? self.numel() / row : 0;
    Tensor out = at::detail::empty_cuda(n * row);
    for (int64_t i = 0; i < n; i++) {
        int64_t r = (int64_t)idx[i];
        if (r < 0)
            r += rows;
        if (r < 0 || r >= rows) {
            delete out.release();
            throw Error{"index " + std::to_string((int64_t)idx[i]) + " is out of bounds for size " +
                        std::to_string(rows)};
        }
        std::copy(self.data_ptr() + r * row, self.data_ptr() + (r + 1) * row, out.data_ptr() + i * row);
    }
    launch_kernel(KERNEL(index_kernel), n * row);
    return out;
}

// self[indices]: a boolean mask becomes integer indices through nonzero (the sync), as
// aten's expandTensors does; integer indices are used as they are (no sync).
NOINLINE Tensor index(const Tensor &self, const Tensor &indices, bool is_mask, int64_t row)
{
    if (row <= 0 || self.numel() % row != 0)
        throw Error{"index: bad row size"};
    if (!is_mask)
        return gather_rows(self, indices.data_ptr(), indices.numel(), row);
    if (indices.numel() != self.numel() / row)
        throw Error{"index: the mask's shape does not match the indexed tensor"};
    Tensor nz = at::_ops::nonzero::call(indices);
    Tensor out = gather_rows(self, nz.data_ptr(), nz.numel(), row);
    c10::cuda::CUDACachingAllocator::raw_delete(nz.data_ptr(), nz.release()->bytes);
    delete nz.release();
    return out;
}

// self[indices] = value with integer indices: no sync.
void index_put_(Tensor &self, const Tensor &indices, double value)
{
    for (int64_t i = 0; i < indices.numel(); i++) {
        int64_t r = (int64_t)indices.data_ptr()[i];
        if (r < 0 || r >= self.numel())
            throw Error{"index_put_: index out of bounds"};
        self.data_ptr()[r] = (float)value;
    }
    launch_kernel(KERNEL(index_put_kernel), indices.numel());
}

namespace {
// aten/src/ATen/native/cuda/Indexing.cu: the accumulating index_put_ of a backward, its boolean
// index made integer indices by nonzero (the sync).
NOINLINE void index_put_with_sort_kernel_impl(int64_t work)
{
    Tensor mask = at::detail::empty_cuda(work > 0 ? work : 1);
    Tensor indices = nonzero_cuda(mask);
    launch_kernel(KERNEL(index_put_kernel), indices.numel() > 0 ? indices.numel() : 1);
    c10::cuda::CUDACachingAllocator::raw_delete(indices.data_ptr(), indices.release()->bytes);
    delete indices.release();
    c10::cuda::CUDACachingAllocator::raw_delete(mask.data_ptr(), mask.release()->bytes);
    delete mask.release();
}
} // namespace

NOINLINE void index_put_with_sort_kernel(int64_t work)
{
    index_put_with_sort_kernel_impl(work);
}

void masked_fill_(Tensor &self, const Tensor &mask, double value)
{
    if (mask.numel() != self.numel())
        throw Error{"masked_fill_: the mask's shape does not match"};
    for (int64_t i = 0; i < self.numel(); i++)
        if (mask.data_ptr()[i] != 0.0f)
            self.data_ptr()[i] = (float)value;
    launch_kernel(KERNEL(masked_fill_kernel), self.numel());
}

Tensor gather(const Tensor &self, const Tensor &index)
{
    Tensor out = at::detail::empty_cuda(index.numel());
    for (int64_t i = 0; i < index.numel(); i++) {
        int64_t r = (int64_t)index.data_ptr()[i];
        if (r < 0 || r >= self.numel()) {
            delete out.release();
            throw Error{"gather: index out of bounds"};
        }
        out.data_ptr()[i] = self.data_ptr()[r];
    }
    launch_kernel(KERNEL(gather_kernel), index.numel());
    return out;
}

Tensor slice(const Tensor &self, int64_t start, int64_t stop, int64_t row)
{
    if (row <= 0 || start < 0 || stop < start || stop * row > self.numel())
        throw Error{"slice: out of range"};
    Tensor out = at::detail::empty_cuda((stop - start) * row);
    std::copy(self.data_ptr() + start * row, self.data_ptr() + stop * row, out.data_ptr());
    launch_kernel(KERNEL(copy_kernel), (stop - start) * row);
    return out;
}

Tensor sum(const Tensor &self, bool mean)
{
    double acc = 0;
    for (int64_t i = 0; i < self.numel(); i++)
        acc += self.data_ptr()[i];
    Tensor out = at::detail::empty_cuda(1);
    out.data_ptr()[0] = (float)(mean ? acc / (double)self.numel() : acc);
    launch_kernel(KERNEL(reduce_kernel), self.numel());
    return out;
}

// The count stays on the device: no sync (unlike nonzero).
Tensor count_nonzero_cuda(const Tensor &self)
{
    int64_t n = 0;
    for (int64_t i = 0; i < self.numel(); i++)
        n += self.data_ptr()[i] != 0.0f;
    Tensor out = at::detail::empty_cuda(1);
    out.data_ptr()[0] = (float)n;
    launch_kernel(KERNEL(reduce_kernel), self.numel());
    return out;
}

void sort(const Tensor &self, Tensor *values, Tensor *indices)
{
    std::vector<int64_t> order((size_t)self.numel());
    std::iota(order.begin(), order.end(), 0);
    const float *d = self.data_ptr();
    std::stable_sort(order.begin(), order.end(), [d](int64_t a, int64_t b) { return d[a] < d[b]; });
    Tensor v = at::detail::empty_cuda(self.numel());
    Tensor ix = at::detail::empty_cuda(self.numel());
    for (size_t i = 0; i < order.size(); i++) {
        v.data_ptr()[i] = d[order[i]];
        ix.data_ptr()[i] = (float)order[i];
    }
    launch_kernel(KERNEL(sort_kernel), self.numel());
    *values = v;
    *indices = ix;
}

// log_softmax + nll_loss with reduction=mean; the weight total stays on the device (no sync).
Tensor cross_entropy_loss(const Tensor &pred, const Tensor &target, int64_t classes, int64_t ignore_index)
{
    if (classes <= 0 || pred.numel() != target.numel() * classes)
        throw Error{"cross_entropy: pred must be (N, C) and target (N)"};
    double total = 0;
    int64_t valid = 0;
    for (int64_t r = 0; r < target.numel(); r++) {
        int64_t t = (int64_t)target.data_ptr()[r];
        if (t == ignore_index)
            continue;
        if (t < 0 || t >= classes)
            throw Error{"cross_entropy: target " + std::to_string(t) + " is out of bounds"};
        const float *row = pred.data_ptr() + r * classes;
        float mx = *std::max_element(row, row + classes);
        double z = 0;
        for (int64_t c = 0; c < classes; c++)
            z += std::exp((double)row[c] - mx);
        total += std::log(z) + mx - row[t];
        valid++;
    }
    launch_kernel(KERNEL(log_softmax_kernel), pred.numel());
    Tensor out = at::detail::empty_cuda(1);
    out.data_ptr()[0] = (float)(total / (double)valid); // NaN when every target is ignored, like torch
    launch_kernel(KERNEL(nll_loss_kernel), pred.numel());
    return out;
}

// aten/src/ATen/native/cuda/CUDAScalar.cu: .item() copies the scalar into pinned memory and
// waits for the stream.
NOINLINE double _local_scalar_dense_cuda(const Tensor &self)
{
    if (self.numel() != 1)
        throw Error{"a Tensor with " + std::to_string(self.numel()) +
                    " elements cannot be converted to Scalar"};
    float *host = (float *)at::cuda::pinned_scratch();
    memcpy_and_sync(host, self.data_ptr(), sizeof(float), cudaMemcpyDeviceToHost, at::cuda::getCurrentCUDAStream());
    return host[0];
}

// .cpu() into a fresh (pageable) CPU tensor: cudaMemcpyAsync from pageable memory waits.
NOINLINE void copy_device_to_host(void *dst, const Tensor &src)
{
    C10_CUDA_CHECK(cudaMemcpyAsync(dst, src.data_ptr(), (size_t)src.numel() * sizeof(float),
                                   cudaMemcpyDeviceToHost, at::cuda::getCurrentCUDAStream()));
}

NOINLINE Tensor copy_host_to_device(const void *src, int64_t n)
{
    Tensor out = at::detail::empty_cuda(n);
    C10_CUDA_CHECK(cudaMemcpyAsync(out.data_ptr(), src, (size_t)n * sizeof(float), cudaMemcpyHostToDevice,
                                   at::cuda::getCurrentCUDAStream()));
    return out;
}

void sgd_update_(Tensor &param, const Tensor &grad, Tensor *momentum_buffer, double lr, double momentum)
{
    if (grad.numel() != param.numel() || (momentum_buffer && momentum_buffer->numel() != param.numel()))
        throw Error{"sgd: shape mismatch"};
    for (int64_t i = 0; i < param.numel(); i++) {
        float g = grad.data_ptr()[i];
        if (momentum_buffer) {
            float &m = momentum_buffer->data_ptr()[i];
            m = (float)(momentum * m + g);
            g = m;
        }
        param.data_ptr()[i] -= (float)(lr * g);
    }
    launch_kernel(KERNEL(sgd_kernel), param.numel());
}
} // namespace native

namespace _ops {
NOINLINE Tensor nonzero::call(const Tensor &self) { return at::native::nonzero_cuda(self); }
NOINLINE Tensor _unique2::call(const Tensor &self, bool sorted) { return at::native::unique_cuda(self, sorted); }
NOINLINE Tensor index_Tensor::call(const Tensor &self, const Tensor &indices, bool is_mask, int64_t row)
{
    return at::native::index(self, indices, is_mask, row);
}
NOINLINE double _local_scalar_dense::call(const Tensor &self) { return at::native::_local_scalar_dense_cuda(self); }
} // namespace _ops
} // namespace at

namespace c10 {
namespace cuda {
NOINLINE void device_synchronize() { C10_CUDA_CHECK(cudaDeviceSynchronize()); }
} // namespace cuda
} // namespace c10

// ---- autograd: backward runs on the engine's device thread, as PyTorch's does for CUDA ------

namespace torch {
namespace autograd {
using variable_list = std::vector<at::Tensor>;

struct Node {
    virtual ~Node() = default;
    virtual variable_list apply(variable_list &&grads) = 0;
    variable_list operator()(variable_list &&grads) { return apply(std::move(grads)); }
};

namespace generated {
// The backward of pointwise ops and reductions: kernels only.
struct PointwiseBackward : Node {
    int64_t work;
    explicit PointwiseBackward(int64_t w) : work(w) {}
    variable_list apply(variable_list &&grads) override
    {
        at::cuda::launch_kernel(KERNEL(backward_kernel), work);
        return std::move(grads);
    }
};

struct MmBackward0 : Node {
    int64_t work;
    explicit MmBackward0(int64_t w) : work(w) {}
    variable_list apply(variable_list &&grads) override
    {
        at::cuda::launch_kernel(KERNEL(gemm_backward_kernel), work); // grad wrt input
        at::cuda::launch_kernel(KERNEL(gemm_backward_kernel), work); // grad wrt weight
        return std::move(grads);
    }
};

// torch.gather's backward is a scatter_add: kernels only. (Older PyTorch releases sorted the
// indices under torch.use_deterministic_algorithms(True) and synced here; torch 2.15 does not:
// tests/torch/test_backward.py checks the real one.)
struct GatherBackward0 : Node {
    int64_t work;
    explicit GatherBackward0(int64_t w) : work(w) {}
    NOINLINE variable_list apply(variable_list &&grads) override
    {
        at::cuda::launch_kernel(KERNEL(backward_kernel), work);
        return std::move(grads);
    }
};

// The backward of x[bool_mask] (x needing grad): index_put_ of the gradient, whose boolean
// index becomes integer indices through nonzero (the sync), inside the autograd thread, as
// torch 2.15's IndexBackward0 -> index_backward -> _index_put_impl_ -> index_put_with_sort_kernel
// -> expandTensors -> nonzero does (tests/torch/test_backward.py checks the real one).
struct IndexBackward0 : Node {
    int64_t work;
    explicit IndexBackward0(int64_t w) : work(w) {}
    NOINLINE variable_list apply(variable_list &&grads) override
    {
        at::native::index_put_with_sort_kernel(work);
        return std::move(grads);
    }
};
} // namespace generated

struct AccumulateGrad : Node {
    at::Tensor variable, grad;
    AccumulateGrad(at::TensorImpl *v, at::TensorImpl *g) : variable(v), grad(g) {}
    variable_list apply(variable_list &&grads) override
    {
        // The demo's gradients are a small constant pull towards zero: enough for the
        // parameters to change from step to step.
        for (int64_t i = 0; i < grad.numel(); i++)
            grad.data_ptr()[i] += 0.01f * variable.data_ptr()[i];
        at::cuda::launch_kernel(KERNEL(accumulate_grad_kernel), grad.numel());
        return std::move(grads);
    }
};

struct GraphTask {
    std::vector<std::unique_ptr<Node>> nodes;
    bool done = false;
    std::string error;
};

class Engine {
public:
    static Engine &get_default_engine()
    {
        static Engine *engine = new Engine; // never destroyed: its thread outlives main
        return *engine;
    }

    NOINLINE void execute(GraphTask &task)
    {
        std::unique_lock<std::mutex> lk(mu_);
        if (!started_) {
            std::thread(&Engine::thread_main, this).detach();
            started_ = true;
        }
        queue_.push_back(&task);
        ready_.notify_one();
        done_.wait(lk, [&] { return task.done; });
    }

private:
    NOINLINE void thread_main()
    {
        pthread_setname_np(pthread_self(), "pt_autograd_0");
        for (;;) {
            GraphTask *task;
            {
                std::unique_lock<std::mutex> lk(mu_);
                ready_.wait(lk, [&] { return !queue_.empty(); });
                task = queue_.front();
                queue_.pop_front();
            }
            try {
                for (auto &node : task->nodes)
                    evaluate_function(*node);
            } catch (const Error &e) {
                task->error = e.what;
            } catch (const std::exception &e) {
                task->error = e.what();
            }
            std::lock_guard<std::mutex> lk(mu_);
            task->done = true;
            done_.notify_all();
        }
    }

    NOINLINE void evaluate_function(Node &fn) { (void)fn(variable_list{}); }

    std::mutex mu_;
    std::condition_variable ready_, done_;
    std::deque<GraphTask *> queue_;
    bool started_ = false;
};
} // namespace autograd
} // namespace torch

// ---- the flat C API (ctypes) ----------------------------------------------------------------

namespace {
template <typename F>
auto guarded(F f, decltype(f()) on_error) -> decltype(f())
{
    try {
        return f();
    } catch (const Error &e) {
        last_error = e.what;
    } catch (const std::exception &e) {
        last_error = e.what();
    }
    return on_error;
}

at::Tensor T(const mt_tensor *t)
{
    if (!t)
        throw Error{"null tensor"};
    return at::Tensor(const_cast<mt_tensor *>(t));
}

int gil_state()
{
    using check_fn = int (*)(void);
    auto f = (check_fn)dlsym(RTLD_DEFAULT, "PyGILState_Check");
    return f ? f() : -1;
}
} // namespace

MT_API const char *mt_last_error(void) { return last_error.c_str(); }

MT_API int mt_set_kernel_ns(const char *kernel, uint64_t fixed_ns, double ns_per_element)
{
    size_t i = at::cuda::kernel_index(kernel ? kernel : "");
    if (i == at::cuda::kernel_count) {
        last_error = std::string("no kernel named ") + (kernel ? kernel : "(null)");
        return -1;
    }
    at::cuda::kernel_table[i].fixed_ns = fixed_ns;
    at::cuda::kernel_table[i].ns_per_element = ns_per_element;
    return 0;
}

MT_API int mt_device_count(void)
{
    int n = 0;
    return cudaGetDeviceCount(&n) == cudaSuccess ? n : 0;
}

MT_API void mt_free(mt_tensor *t)
{
    if (!t)
        return;
    c10::cuda::CUDACachingAllocator::raw_delete(t->data, t->bytes);
    delete t;
}

MT_API int64_t mt_numel(const mt_tensor *t) { return t ? t->numel : -1; }

MT_API mt_tensor *mt_full(int64_t n, double value)
{
    return guarded([&] { at::Tensor t = at::detail::empty_cuda(n); return at::native::fill_(t, value).release(); }, nullptr);
}

MT_API mt_tensor *mt_randn(int64_t n, uint64_t seed)
{
    return guarded([&] { at::Tensor t = at::detail::empty_cuda(n); return at::native::normal_(t, seed).release(); }, nullptr);
}

MT_API mt_tensor *mt_randint(int64_t n, int64_t low, int64_t high, uint64_t seed)
{
    return guarded([&] {
        at::Tensor t = at::detail::empty_cuda(n);
        return at::native::random_(t, low, high, seed).release();
    }, nullptr);
}

MT_API mt_tensor *mt_randperm(int64_t n, uint64_t seed)
{
    return guarded([&] { return at::native::randperm_cuda(n, seed).release(); }, nullptr);
}

MT_API mt_tensor *mt_clone(const mt_tensor *t)
{
    return guarded([&] { return at::native::clone(T(t)).release(); }, nullptr);
}

MT_API mt_tensor *mt_binary(int op, const mt_tensor *a, const mt_tensor *b, int64_t rows, int64_t cols,
                            int64_t a_rs, int64_t a_cs, int64_t b_rs, int64_t b_cs)
{
    return guarded([&] { return at::native::binary_op(op, T(a), T(b), rows, cols, a_rs, a_cs, b_rs, b_cs).release(); },
                   nullptr);
}

MT_API mt_tensor *mt_scalar_op(int op, const mt_tensor *t, double s, int reverse)
{
    return guarded([&] { return at::native::scalar_op(op, T(t), s, reverse != 0).release(); }, nullptr);
}

MT_API mt_tensor *mt_compare(int op, const mt_tensor *t, double s)
{
    return guarded([&] { return at::native::compare(op, T(t), s).release(); }, nullptr);
}

MT_API mt_tensor *mt_where(const mt_tensor *cond, const mt_tensor *a, const mt_tensor *b, int64_t n)
{
    return guarded([&] { return at::native::where(T(cond), T(a), T(b), n).release(); }, nullptr);
}

MT_API mt_tensor *mt_relu(const mt_tensor *t)
{
    return guarded([&] { return at::native::relu(T(t)).release(); }, nullptr);
}

MT_API mt_tensor *mt_linear(const mt_tensor *x, const mt_tensor *w, const mt_tensor *bias, int64_t n, int64_t in,
                            int64_t out)
{
    return guarded([&] { return at::native::linear(T(x), T(w), T(bias), n, in, out).release(); }, nullptr);
}

MT_API NOINLINE mt_tensor *mt_nonzero(const mt_tensor *t)
{
    return guarded([&] { return at::_ops::nonzero::call(T(t)).release(); }, nullptr);
}

MT_API NOINLINE mt_tensor *mt_unique(const mt_tensor *t)
{
    return guarded([&] { return at::_ops::_unique2::call(T(t), true).release(); }, nullptr);
}

MT_API NOINLINE mt_tensor *mt_index_mask(const mt_tensor *self, const mt_tensor *mask, int64_t row)
{
    return guarded([&] { return at::_ops::index_Tensor::call(T(self), T(mask), true, row).release(); }, nullptr);
}

MT_API mt_tensor *mt_index(const mt_tensor *self, const mt_tensor *index, int64_t row)
{
    return guarded([&] { return at::_ops::index_Tensor::call(T(self), T(index), false, row).release(); }, nullptr);
}

MT_API int mt_index_put(mt_tensor *self, const mt_tensor *index, double value)
{
    return guarded([&] { at::Tensor s = T(self); at::native::index_put_(s, T(index), value); return 0; }, -1);
}

MT_API int mt_masked_fill(mt_tensor *self, const mt_tensor *mask, double value)
{
    return guarded([&] { at::Tensor s = T(self); at::native::masked_fill_(s, T(mask), value); return 0; }, -1);
}

MT_API mt_tensor *mt_gather(const mt_tensor *self, const mt_tensor *index)
{
    return guarded([&] { return at::native::gather(T(self), T(index)).release(); }, nullptr);
}

MT_API mt_tensor *mt_slice(const mt_tensor *self, int64_t start, int64_t stop, int64_t row)
{
    return guarded([&] { return at::native::slice(T(self), start, stop, row).release(); }, nullptr);
}

MT_API mt_tensor *mt_sum(const mt_tensor *t)
{
    return guarded([&] { return at::native::sum(T(t), false).release(); }, nullptr);
}

MT_API mt_tensor *mt_mean(const mt_tensor *t)
{
    return guarded([&] { return at::native::sum(T(t), true).release(); }, nullptr);
}

MT_API mt_tensor *mt_count_nonzero(const mt_tensor *t)
{
    return guarded([&] { return at::native::count_nonzero_cuda(T(t)).release(); }, nullptr);
}

MT_API int mt_sort(const mt_tensor *t, mt_tensor **values, mt_tensor **indices)
{
    return guarded([&] {
        at::Tensor v(nullptr), ix(nullptr);
        at::native::sort(T(t), &v, &ix);
        *values = v.release();
        *indices = ix.release();
        return 0;
    }, -1);
}

MT_API mt_tensor *mt_cross_entropy(const mt_tensor *pred, const mt_tensor *target, int64_t classes,
                                   int64_t ignore_index)
{
    return guarded([&] { return at::native::cross_entropy_loss(T(pred), T(target), classes, ignore_index).release(); },
                   nullptr);
}

MT_API NOINLINE int mt_item(const mt_tensor *t, double *out)
{
    return guarded([&] { *out = at::_ops::_local_scalar_dense::call(T(t)); return 0; }, -1);
}

MT_API NOINLINE int mt_item_holding_gil(const mt_tensor *t, double *out, int *gil_held)
{
    *gil_held = gil_state();
    return guarded([&] { *out = at::_ops::_local_scalar_dense::call(T(t)); return 0; }, -1);
}

MT_API int mt_gil_held(void) { return gil_state(); }

MT_API NOINLINE int mt_copy_to_host(const mt_tensor *t, void *dst)
{
    return guarded([&] { at::native::copy_device_to_host(dst, T(t)); return 0; }, -1);
}

MT_API mt_tensor *mt_copy_from_host(const void *src, int64_t n)
{
    return guarded([&] { return at::native::copy_host_to_device(src, n).release(); }, nullptr);
}

MT_API int mt_sgd_step(mt_tensor *param, const mt_tensor *grad, mt_tensor *momentum_buffer, double lr,
                       double momentum)
{
    return guarded([&] {
        at::Tensor p = T(param), m(momentum_buffer);
        at::native::sgd_update_(p, T(grad), momentum_buffer ? &m : nullptr, lr, momentum);
        return 0;
    }, -1);
}

MT_API NOINLINE int mt_backward(const struct mt_node *nodes, int32_t n, int deterministic)
{
    using namespace torch::autograd;
    (void)deterministic; /* no node syncs because of it on torch 2.15 */
    return guarded([&] {
        GraphTask task;
        for (int32_t i = 0; i < n; i++) {
            const mt_node &nd = nodes[i];
            switch (nd.kind) {
            case MT_NODE_POINTWISE: task.nodes.emplace_back(new generated::PointwiseBackward(nd.work)); break;
            case MT_NODE_MM: task.nodes.emplace_back(new generated::MmBackward0(nd.work)); break;
            case MT_NODE_GATHER: task.nodes.emplace_back(new generated::GatherBackward0(nd.work)); break;
            case MT_NODE_INDEX_MASK: task.nodes.emplace_back(new generated::IndexBackward0(nd.work)); break;
            case MT_NODE_ACCUMULATE_GRAD:
                if (!nd.a || !nd.b || nd.a->numel != nd.b->numel)
                    throw Error{"AccumulateGrad: bad tensors"};
                task.nodes.emplace_back(new AccumulateGrad(nd.a, nd.b));
                break;
            default: throw Error{"unknown autograd node"};
            }
        }
        Engine::get_default_engine().execute(task);
        if (!task.error.empty())
            throw Error{task.error};
        return 0;
    }, -1);
}

MT_API NOINLINE int mt_device_synchronize(void)
{
    return guarded([&] { c10::cuda::device_synchronize(); return 0; }, -1);
}
