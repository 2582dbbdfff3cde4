#include "runtime/device/cuda/cuda_backend.hpp"

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cmath>
#include <cstring>

#include <cuda_runtime_api.h>

#include "kernels/cpu/ops.hpp"
#include "kernels/cuda/cuda_kernels.hpp"
#include "runtime/device/cuda/cuda_kv_storage.hpp"
#include "runtime/model/arch/llama_layers.hpp"
#include "runtime/model/arch/llama_ops.hpp"

namespace fw {
namespace {

std::string version_text(int v) { return std::to_string(v / 1000) + "." + std::to_string(v % 1000 / 10); }

error cuda_error(const std::string& what, cudaError_t e) {
  return error{errc::internal, what + ": " + cudaGetErrorString(e)};
}

expected<cuda::wfmt> wfmt_of(ggml_type t) {
  switch (t) {
    case ggml_type::f32: return cuda::wfmt::f32;
    case ggml_type::f16: return cuda::wfmt::f16;
    case ggml_type::bf16: return cuda::wfmt::bf16;
    case ggml_type::q4_0: return cuda::wfmt::q4_0;
    case ggml_type::q4_1: return cuda::wfmt::q4_1;
    case ggml_type::q8_0: return cuda::wfmt::q8_0;
    case ggml_type::fw_w8a8: return cuda::wfmt::w8;
    case ggml_type::fw_w4a16_g32: return cuda::wfmt::w4g32;
    case ggml_type::fw_w4a16_g64: return cuda::wfmt::w4g64;
    case ggml_type::fw_w4a16_g128: return cuda::wfmt::w4g128;
  }
  return make_error(errc::unsupported, "the CUDA backend has no kernel for weight type " +
                                           std::string(ggml_type_name(static_cast<uint32_t>(t))));
}

/// Memory of one kind that frees itself and grows by reallocation (contents are not kept):
/// device memory (cudaMalloc) or page-locked host memory (cudaMallocHost, for asynchronous
/// copies).
template <cudaError_t (*Alloc)(void**, size_t), cudaError_t (*Free)(void*)>
struct cuda_buffer {
  void* p = nullptr;
  size_t bytes = 0;
  cuda_buffer() = default;
  cuda_buffer(const cuda_buffer&) = delete;
  cuda_buffer& operator=(const cuda_buffer&) = delete;
  ~cuda_buffer() { Free(p); }
  /// true when it had to grow (addresses changed).
  expected<bool> reserve(size_t n) {
    if (n <= bytes) return false;
    Free(p);
    p = nullptr, bytes = 0;
    if (auto e = Alloc(&p, n); e != cudaSuccess) {
      (void)cudaGetLastError();
      return make_error(errc::out_of_memory, std::string("cannot allocate ") + std::to_string(n >> 20) +
                                                 " MiB of activations: " + cudaGetErrorString(e));
    }
    bytes = n;
    return true;
  }
  template <class T> T* as() const { return static_cast<T*>(p); }
};
cudaError_t device_alloc(void** p, size_t n) { return cudaMalloc(p, n); }
cudaError_t host_alloc(void** p, size_t n) { return cudaMallocHost(p, n); }
using device_buffer = cuda_buffer<device_alloc, cudaFree>;
using pinned_buffer = cuda_buffer<host_alloc, cudaFreeHost>;

size_t grow_to(size_t need, size_t least) {
  size_t c = least;
  while (c < need) c *= 2;
  return c;
}

}  // namespace

expected<int> cuda_device_count() {
  int n = 0;
  if (auto e = cudaGetDeviceCount(&n); e != cudaSuccess) {
    (void)cudaGetLastError();
    return make_error(errc::unsupported, std::string("no CUDA device: ") + cudaGetErrorString(e));
  }
  if (n == 0) return make_error(errc::unsupported, "no CUDA device: the CUDA runtime sees none");
  return n;
}

expected<cuda_device_info> cuda_describe(int ordinal) {
  auto n = cuda_device_count();
  if (!n) return n.err();
  if (ordinal < 0 || ordinal >= *n)
    return make_error(errc::unsupported, "cuda:" + std::to_string(ordinal) + " does not exist (" + std::to_string(*n) +
                                             " CUDA device" + (*n == 1 ? "" : "s") + " found)");
  cudaDeviceProp p{};
  if (auto e = cudaGetDeviceProperties(&p, ordinal); e != cudaSuccess) return cuda_error("cudaGetDeviceProperties", e);
  cuda_device_info d;
  d.ordinal = ordinal;
  d.name = p.name;
  d.cc_major = p.major, d.cc_minor = p.minor;
  d.total_bytes = p.totalGlobalMem;
  d.multiprocessors = p.multiProcessorCount;
  int rt = 0, drv = 0;
  cudaRuntimeGetVersion(&rt);
  cudaDriverGetVersion(&drv);
  d.runtime = version_text(rt), d.driver = version_text(drv);
  if (cudaSetDevice(ordinal) == cudaSuccess) {
    size_t free = 0, total = 0;
    if (cudaMemGetInfo(&free, &total) == cudaSuccess) d.free_bytes = free;
  }
  return d;
}

// -- device state --

struct cuda_backend::impl {
  struct layer {
    cuda::weight_desc qkv[3];  ///< wq, wk, wv; fused: qkv[0] covers all three rows
    bool qkv_fused = false;
    cuda::weight_desc wo;
    cuda::weight_desc gate_up[2];
    bool gate_up_fused = false;
    cuda::weight_desc down;
    const float *attn_norm = nullptr, *ffn_norm = nullptr, *q_norm = nullptr, *k_norm = nullptr;
    const float *qkv_bias = nullptr, *wo_bias = nullptr;
  };

  /// One stream and the activations of the forward running on it (llama_ops over them).
  struct lane final : llama_ops {
    impl& im;
    const model_config& cfg;
    cudaStream_t stream = nullptr;
    std::mutex mutex;
    // capacities (the metadata offsets depend on them: a growth drops the captured graphs)
    size_t cap_rows = 0, cap_out = 0, cap_blocks = 0;
    device_buffer x, xn, qkv, att, gu, tmp, scratch, entropy, xo, logits, meta_i, meta_f;
    device_buffer xq;  ///< a product's activations as integers (cuda::act_scratch_bytes), when im.int8_act
    pinned_buffer h_meta_i, h_meta_f, h_logits, h_entropy, h_hidden;
    // the forward in progress
    int64_t rows = 0, n_out = 0;
    cuda::attention_plan plan;
    std::string failure;  ///< a launch that could not be made (set by the ops)
    std::map<std::tuple<int64_t, int64_t, int, int, uint32_t>, cudaGraphExec_t> graphs;

    lane(impl& i, const model_config& c) : im(i), cfg(c) {}
    ~lane() override {
      clear_graphs();
      if (stream) cudaStreamDestroy(stream);
    }

    int64_t qkv_ld() const { return cfg.q_dim() + 2 * static_cast<int64_t>(cfg.kv_dim()); }
    int32_t* tokens() const { return meta_i.as<int32_t>(); }
    int32_t* positions() const { return meta_i.as<int32_t>() + cap_rows; }
    int32_t* row_blocks() const { return meta_i.as<int32_t>() + 2 * cap_rows; }
    int32_t* n_keys() const { return meta_i.as<int32_t>() + 3 * cap_rows; }
    int32_t* out_index() const { return meta_i.as<int32_t>() + 4 * cap_rows; }
    uint32_t* blocks() const { return reinterpret_cast<uint32_t*>(meta_i.as<int32_t>() + 4 * cap_rows + cap_out); }
    cuda::kv_rows kv() const { return {positions(), row_blocks(), blocks()}; }

    expected<void> reserve(size_t rows_need, size_t out_need, size_t blocks_need, size_t scratch_floats) {
      bool moved = false;
      if (rows_need > cap_rows || out_need > cap_out || blocks_need > cap_blocks) {
        cap_rows = grow_to(rows_need, std::max<size_t>(cap_rows, 16));
        cap_out = grow_to(out_need, std::max<size_t>(cap_out, 16));
        cap_blocks = grow_to(blocks_need, std::max<size_t>(cap_blocks, 256));
        moved = true;
      }
      const size_t e = cfg.n_embd, R = cap_rows, O = cap_out, F = 4;
      // Captured graphs hold these addresses: drop them whenever anything moves, errors included.
      struct drop_graphs {
        lane& l;
        bool& moved;
        ~drop_graphs() {
          if (moved) l.clear_graphs();
        }
      } guard{*this, moved};
      auto grow = [&](device_buffer& b, size_t n) -> expected<void> {
        auto r = b.reserve(n);
        if (!r) return moved = true, r.err();
        moved = moved || *r;
        return {};
      };
      for (auto [buf, n] : {std::pair{&x, R * e}, {&xn, R * e}, {&qkv, R * qkv_ld()}, {&att, R * cfg.q_dim()},
                            {&gu, R * 2 * size_t{cfg.n_ff}}, {&tmp, R * e}, {&entropy, R * cfg.n_head}, {&xo, O * e},
                            {&logits, O * size_t{cfg.n_vocab}}, {&meta_f, R * std::max<size_t>(cfg.n_rot, 1)},
                            {&scratch, std::max<size_t>(scratch_floats, 1)}})
        if (auto ok = grow(*buf, n * F); !ok) return ok;
      if (auto ok = grow(meta_i, (4 * R + O + cap_blocks) * sizeof(int32_t)); !ok) return ok;
      if (im.int8_act) {  // the widest product input: n_embd, q_dim (o) or n_ff (down)
        const int64_t k = std::max<int64_t>({cfg.n_embd, cfg.q_dim(), cfg.n_ff});
        const auto rows = static_cast<int64_t>(R);
        const int64_t bytes =
            std::max({cuda::q8_act_bytes(rows, k), cuda::w8_act_bytes(rows, k), cuda::q16_act_bytes(rows, k)});
        if (auto ok = grow(xq, static_cast<size_t>(bytes)); !ok) return ok;
      }
      for (auto [buf, n] : {std::pair{&h_meta_i, (4 * R + O + cap_blocks) * sizeof(int32_t)},
                            {&h_meta_f, R * std::max<size_t>(cfg.n_rot, 1) * F}, {&h_logits, O * size_t{cfg.n_vocab} * F},
                            {&h_entropy, R * cfg.n_head * F}, {&h_hidden, O * e * F}})
        if (auto ok = buf->reserve(n); !ok) return ok.err();
      return {};
    }

    void clear_graphs() {
      for (auto& [k, g] : graphs) cudaGraphExecDestroy(g);
      graphs.clear();
    }

    void mm(const cuda::weight_desc& w, const float* in, int64_t ldx, int64_t m, float* y, int64_t ldy) {
      if (!cuda::matmul(w, in, ldx, m, y, ldy, stream, im.int8_act ? xq.p : nullptr) && failure.empty())
        failure = "matrix product of k = " + std::to_string(w.k) + " cannot run (k must be a multiple of 32)";
    }

    // -- llama_ops --
    void embed_tokens() override { cuda::embed(im.embd, tokens(), rows, x.as<float>(), stream); }
    void rms_norm(uint32_t l, llama_norm which) override {
      const int64_t e = cfg.n_embd;
      const float* w = which == llama_norm::attention ? im.layers[l].attn_norm : im.layers[l].ffn_norm;
      cuda::rms_norm(x.as<float>(), e, w, xn.as<float>(), e, e, rows, 1, cfg.rms_eps, stream);
    }
    void project_qkv(uint32_t l) override {
      const auto& L = im.layers[l];
      const int64_t e = cfg.n_embd, ld = qkv_ld();
      if (L.qkv_fused) {
        mm(L.qkv[0], xn.as<float>(), e, rows, qkv.as<float>(), ld);
      } else {
        int64_t col = 0;
        for (const auto& w : L.qkv) mm(w, xn.as<float>(), e, rows, qkv.as<float>() + col, ld), col += w.n;
      }
      if (L.qkv_bias) cuda::add_bias(qkv.as<float>(), ld, L.qkv_bias, ld, rows, stream);
    }
    void rope_and_store_kv(uint32_t l) override {
      const auto& L = im.layers[l];
      const int64_t ld = qkv_ld(), qd = cfg.q_dim(), kvd = cfg.kv_dim();
      const int hd = static_cast<int>(cfg.head_dim);
      float* q = qkv.as<float>();
      if (L.q_norm) {
        cuda::rms_norm(q, ld, L.q_norm, q, ld, hd, rows, cfg.n_head, cfg.rms_eps, stream);
        cuda::rms_norm(q + qd, ld, L.k_norm, q + qd, ld, hd, rows, cfg.n_head_kv, cfg.rms_eps, stream);
      }
      cuda::rope(q, ld, rows, static_cast<int>(cfg.n_head), static_cast<int>(cfg.n_head_kv), hd,
                 static_cast<int>(cfg.n_rot), meta_f.as<float>(), cfg.rope == rope_style::neox, stream);
      cuda::store_kv(q, ld, qd, qd + kvd, rows, kv(), im.pool, l, stream);
    }
    void attention(uint32_t l, bool last) override {
      cuda::attention(qkv.as<float>(), qkv_ld(), att.as<float>(), cfg.q_dim(), rows, static_cast<int>(cfg.n_head),
                      static_cast<int>(cfg.n_head_kv), n_keys(), kv(), im.pool, l,
                      1.0f / std::sqrt(static_cast<float>(cfg.head_dim)), plan, scratch.as<float>(),
                      last ? entropy.as<float>() : nullptr, stream);
    }
    void project_out_add(uint32_t l) override {
      const auto& L = im.layers[l];
      const int64_t e = cfg.n_embd;
      mm(L.wo, att.as<float>(), cfg.q_dim(), rows, tmp.as<float>(), e);
      if (L.wo_bias) cuda::add_bias(tmp.as<float>(), e, L.wo_bias, e, rows, stream);
      cuda::add(x.as<float>(), tmp.as<float>(), rows * e, stream);
    }
    void ffn_gate_up(uint32_t l) override {
      const auto& L = im.layers[l];
      const int64_t e = cfg.n_embd, ff = cfg.n_ff;
      if (L.gate_up_fused) {
        mm(L.gate_up[0], xn.as<float>(), e, rows, gu.as<float>(), 2 * ff);
      } else {
        mm(L.gate_up[0], xn.as<float>(), e, rows, gu.as<float>(), 2 * ff);
        mm(L.gate_up[1], xn.as<float>(), e, rows, gu.as<float>() + ff, 2 * ff);
      }
      cuda::silu_mul(gu.as<float>(), 2 * ff, ff, rows, stream);
    }
    void ffn_down_add(uint32_t l) override {
      const int64_t e = cfg.n_embd;
      mm(im.layers[l].down, gu.as<float>(), 2 * static_cast<int64_t>(cfg.n_ff), rows, tmp.as<float>(), e);
      cuda::add(x.as<float>(), tmp.as<float>(), rows * e, stream);
    }
    void output_head() override {
      if (n_out == 0) return;
      const int64_t e = cfg.n_embd;
      cuda::gather_rows(x.as<float>(), e, out_index(), n_out, e, xo.as<float>(), stream);
      cuda::rms_norm(xo.as<float>(), e, im.output_norm, xo.as<float>(), e, e, n_out, 1, cfg.rms_eps, stream);
      mm(im.output, xo.as<float>(), e, n_out, logits.as<float>(), cfg.n_vocab);
      if (im.output_bias) cuda::add_bias(logits.as<float>(), cfg.n_vocab, im.output_bias, cfg.n_vocab, n_out, stream);
    }
  };

  std::vector<void*> allocations;  ///< weights and vectors, freed at destruction
  std::vector<layer> layers;
  cuda::weight_desc embd, output;
  const float* output_norm = nullptr;
  const float* output_bias = nullptr;
  cuda::kv_pool_desc pool;
  std::unique_ptr<lane> urgent, background;  ///< background null: one stream for everything
  std::vector<std::string> formats;          ///< weight types uploaded, for kernel_paths
  const float* rope_freqs = nullptr;         ///< host copy (the model's): rope angles are made on the host
  std::atomic<bool> graphs_ok{true};         ///< false after capture_failures_max failures: eager from then on
  bool int8_act = true;                      ///< cuda_backend_options::int8_activations
  int capture_failures = 0;                  ///< (the urgent lane's; under its mutex)
  static constexpr int capture_failures_max = 3;
  static constexpr size_t graphs_max = 64;   ///< captured shapes kept per lane; more: the cache starts over

  ~impl() {
    urgent.reset(), background.reset();
    for (void* p : allocations) cudaFree(p);
  }

  /// Device memory for weights (freed with the backend).
  expected<uint8_t*> allocate(size_t bytes) {
    void* p = nullptr;
    if (auto e = cudaMalloc(&p, bytes); e != cudaSuccess) {
      (void)cudaGetLastError();
      return make_error(errc::out_of_memory, "GPU memory: the model's weights do not fit (" + std::to_string(bytes >> 20) +
                                                 " MiB more)");
    }
    allocations.push_back(p);
    return static_cast<uint8_t*>(p);
  }
  expected<void*> put(const void* src, size_t bytes) {
    auto p = allocate(bytes);
    if (!p) return p.err();
    if (auto e = cudaMemcpy(*p, src, bytes, cudaMemcpyHostToDevice); e != cudaSuccess) return cuda_error("weight upload", e);
    return static_cast<void*>(*p);
  }
  expected<const float*> put_floats(const float* v, size_t n) {
    if (!v) return static_cast<const float*>(nullptr);
    auto p = put(v, n * sizeof(float));
    if (!p) return p.err();
    return static_cast<const float*>(*p);
  }
  /// Matrices uploaded into one allocation, rows after rows (one product computes them all);
  /// they must share type and row length.
  expected<cuda::weight_desc> put_matrices(std::initializer_list<const cpu::weight_view*> parts) {
    const cpu::weight_view& first = **parts.begin();
    auto f = wfmt_of(first.type);
    if (!f) return f.err();
    size_t bytes = 0;
    int64_t n = 0;
    for (const auto* v : parts) bytes += v->row_bytes * static_cast<size_t>(v->n), n += v->n;
    auto mem = allocate(bytes);
    if (!mem) return mem.err();
    uint8_t* p = *mem;
    size_t off = 0;
    for (const auto* v : parts) {
      const size_t b = v->row_bytes * static_cast<size_t>(v->n);
      if (auto e = cudaMemcpy(p + off, v->data, b, cudaMemcpyHostToDevice); e != cudaSuccess)
        return cuda_error("weight upload", e);
      off += b;
    }
    const std::string name(type_traits(first.type).name);
    if (std::find(formats.begin(), formats.end(), name) == formats.end()) formats.push_back(name);
    cuda::weight_desc d;
    d.fmt = *f, d.data = p, d.row_bytes = static_cast<int64_t>(first.row_bytes);
    d.n = n, d.k = first.k, d.act_scale = first.act_scale;
    return d;
  }
};

namespace {
bool fusable(std::initializer_list<const cpu::weight_view*> parts) {
  const auto& a = **parts.begin();
  return std::all_of(parts.begin(), parts.end(),
                     [&](const cpu::weight_view* v) {
                       return v->type == a.type && v->row_bytes == a.row_bytes && v->k == a.k &&
                              v->act_scale == a.act_scale;  // W8A8: one static activation scale per product
                     });
}
}  // namespace

cuda_backend::cuda_backend(const model_config& config, cuda_backend_options opts)
    : cfg_(config), opts_(opts), impl_(std::make_unique<impl>()) {
  impl_->int8_act = opts.int8_activations;
}

cuda_backend::~cuda_backend() {
  cudaSetDevice(opts_.device);
  if (impl_) {
    if (impl_->urgent) cudaStreamSynchronize(impl_->urgent->stream);
    if (impl_->background) cudaStreamSynchronize(impl_->background->stream);
  }
  impl_.reset();
  pool_.reset();
}

expected<std::unique_ptr<cuda_backend>> cuda_backend::create(const model_config& config, const llama_weights& weights,
                                                             cuda_backend_options opts) {
  auto info = cuda_describe(opts.device);
  if (!info) return info.err();
  if (config.head_dim % 32 != 0 || config.head_dim > 256)
    return make_error(errc::unsupported, "the CUDA backend's attention handles head sizes that are multiples of 32 up to "
                                         "256; this model's is " + std::to_string(config.head_dim));
  if (config.n_rot % 2 != 0) return make_error(errc::unsupported, "the CUDA backend needs an even rotary dimension");
  if (opts.kv_type == kv_dtype::q8)
    return make_error(errc::unsupported, "kv_cache.type = \"q8_0\" is a CPU cache for now: the CUDA backend's attention "
                                         "reads f16 or f32 KV (set type = \"f16\" for a CUDA device)");
  if (config.n_embd % 32 != 0 || config.n_ff % 32 != 0 || config.q_dim() % 32 != 0)
    return make_error(errc::unsupported, "the CUDA backend's products need widths that are multiples of 32 (n_embd " +
                                             std::to_string(config.n_embd) + ", n_ff " + std::to_string(config.n_ff) +
                                             ", q " + std::to_string(config.q_dim()) + ")");
  std::unique_ptr<cuda_backend> b(new cuda_backend(config, opts));
  b->info_ = *info;
  if (auto e = cudaSetDevice(opts.device); e != cudaSuccess) return cuda_error("cudaSetDevice", e);
  kv_layout layout;
  layout.dtype = opts.kv_type;
  layout.n_layer = config.n_layer, layout.n_head_kv = config.n_head_kv, layout.head_dim = config.head_dim;
  layout.block_tokens = opts.kv_block_tokens;
  const uint32_t n_blocks = (opts.kv_tokens + opts.kv_block_tokens - 1) / opts.kv_block_tokens;
  auto storage = cuda_kv_storage::create(opts.device, n_blocks, layout.block_bytes());
  if (!storage) return storage.err();
  auto& im = *b->impl_;
  im.pool.base = (*storage)->base();
  im.pool.layout = {layout.n_layer, layout.n_head_kv, layout.head_dim, layout.block_tokens};
  im.pool.f16 = layout.dtype == kv_dtype::f16;
  b->pool_ = std::make_unique<kv_block_pool>(kv_block_pool::next_pool_id(), layout, std::move(*storage));
  if (auto ok = b->upload(weights); !ok) return ok.err();
  int lo = 0, hi = 0;
  cudaDeviceGetStreamPriorityRange(&lo, &hi);  // hi is the numerically smaller, more urgent one
  im.urgent = std::make_unique<impl::lane>(im, config);
  if (auto e = cudaStreamCreateWithPriority(&im.urgent->stream, cudaStreamNonBlocking, hi); e != cudaSuccess)
    return cuda_error("stream", e);
  if (opts.decode_priority) {
    im.background = std::make_unique<impl::lane>(im, config);
    if (auto e = cudaStreamCreateWithPriority(&im.background->stream, cudaStreamNonBlocking, lo); e != cudaSuccess)
      return cuda_error("stream", e);
  }
  // The pool's clearing and the uploads ran on the default stream, which the lanes' non-blocking
  // streams do not wait for: finish them before the first forward.
  if (auto e = cudaDeviceSynchronize(); e != cudaSuccess) return cuda_error("weight upload", e);
  return b;
}

expected<void> cuda_backend::upload(const llama_weights& w) {
  auto& im = *impl_;
  im.rope_freqs = w.rope_freqs;
  const size_t e = cfg_.n_embd, hd = cfg_.head_dim;
  auto embd = im.put_matrices({&w.tok_embd});
  if (!embd) return embd.err();
  im.embd = *embd;
  if (w.tied_output || w.output.data == w.tok_embd.data) {
    im.output = im.embd;
  } else {
    auto o = im.put_matrices({&w.output});
    if (!o) return o.err();
    im.output = *o;
  }
  auto on = im.put_floats(w.output_norm, e);
  auto ob = im.put_floats(w.output_bias, cfg_.n_vocab);
  if (!on) return on.err();
  if (!ob) return ob.err();
  im.output_norm = *on, im.output_bias = *ob;
  for (const auto& L : w.layers) {
    impl::layer d;
    if (fusable({&L.wq, &L.wk, &L.wv})) {
      auto q = im.put_matrices({&L.wq, &L.wk, &L.wv});
      if (!q) return q.err();
      d.qkv[0] = *q, d.qkv_fused = true;
    } else {
      int i = 0;
      for (const auto* v : {&L.wq, &L.wk, &L.wv}) {
        auto m = im.put_matrices({v});
        if (!m) return m.err();
        d.qkv[i++] = *m;
      }
    }
    if (fusable({&L.w_gate, &L.w_up})) {
      auto g = im.put_matrices({&L.w_gate, &L.w_up});
      if (!g) return g.err();
      d.gate_up[0] = *g, d.gate_up_fused = true;
    } else {
      auto g = im.put_matrices({&L.w_gate});
      auto u = im.put_matrices({&L.w_up});
      if (!g) return g.err();
      if (!u) return u.err();
      d.gate_up[0] = *g, d.gate_up[1] = *u;
    }
    auto wo = im.put_matrices({&L.wo});
    auto down = im.put_matrices({&L.w_down});
    if (!wo) return wo.err();
    if (!down) return down.err();
    d.wo = *wo, d.down = *down;
    for (auto [dst, src, n] : {std::tuple{&d.attn_norm, L.attn_norm, e}, {&d.ffn_norm, L.ffn_norm, e},
                               {&d.q_norm, L.q_norm, hd}, {&d.k_norm, L.k_norm, hd},
                               {&d.qkv_bias, L.qkv_bias, size_t{cfg_.q_dim()} + 2 * cfg_.kv_dim()}, {&d.wo_bias, L.wo_bias, e}}) {
      auto p = im.put_floats(src, n);
      if (!p) return p.err();
      *dst = *p;
    }
    im.layers.push_back(d);
  }
  return {};
}

expected<void> cuda_backend::forward(const forward_batch& b, forward_result& out) {
  out.clear();
  const int64_t m = static_cast<int64_t>(b.rows());
  if (m == 0) return {};
  auto end_pos = reserve_batch(b, *pool_, cfg_.n_vocab);
  if (!end_pos) return end_pos.err();

  auto& im = *impl_;
  impl::lane& L = (b.urgent || !im.background) ? *im.urgent : *im.background;
  std::lock_guard lock(L.mutex);
  const auto t0 = std::chrono::steady_clock::now();
  if (auto e = cudaSetDevice(opts_.device); e != cudaSuccess) return cuda_error("cudaSetDevice", e);

  // Per-forward data: block lists, row tables, rope angles (the CPU's own table, bit for bit).
  std::vector<int32_t> seq_off(b.kv.size());
  size_t n_blocks = 0;
  for (size_t s = 0; s < b.kv.size(); ++s) seq_off[s] = static_cast<int32_t>(n_blocks), n_blocks += b.kv[s]->blocks.size();
  std::vector<int32_t> out_rows;
  int32_t max_keys = 1;
  for (int64_t r = 0; r < m; ++r) {
    if (b.want_logits[r]) out_rows.push_back(static_cast<int32_t>(r));
    max_keys = std::max(max_keys, b.positions[r] + 1);
  }
  const bool graph = opts_.graphs && im.graphs_ok && b.urgent && m <= 64;
  // A graph replays one launch configuration: round the key count up so that many steps share it.
  const int32_t plan_keys = graph ? static_cast<int32_t>(grow_to(static_cast<size_t>(max_keys), 256)) : max_keys;
  L.plan = cuda::plan_attention(m, static_cast<int>(cfg_.n_head), plan_keys);
  L.rows = m, L.n_out = static_cast<int64_t>(out_rows.size()), L.failure.clear();
  const size_t n_rot = std::max<uint32_t>(cfg_.n_rot, 1);
  if (auto ok = L.reserve(static_cast<size_t>(m), out_rows.size(), n_blocks,
                          cuda::attention_scratch_floats(m, static_cast<int>(cfg_.n_head), static_cast<int>(cfg_.head_dim), L.plan));
      !ok)
    return ok;
  int32_t* hi = L.h_meta_i.as<int32_t>();
  const size_t R = L.cap_rows;
  for (int64_t r = 0; r < m; ++r) {
    hi[r] = b.tokens[r];
    hi[R + r] = b.positions[r];
    hi[2 * R + r] = seq_off[b.seq[r]];
    hi[3 * R + r] = b.positions[r] + 1;
    if (cfg_.n_rot > 0)
      cpu::rope_cos_sin(static_cast<int>(cfg_.n_rot), b.positions[r], cfg_.rope_freq_base, cfg_.rope_freq_scale,
                        L.h_meta_f.as<float>() + r * n_rot, im.rope_freqs);
  }
  std::copy(out_rows.begin(), out_rows.end(), hi + 4 * R);
  auto* hb = reinterpret_cast<uint32_t*>(hi + 4 * R + L.cap_out);
  for (size_t s = 0; s < b.kv.size(); ++s) std::copy(b.kv[s]->blocks.begin(), b.kv[s]->blocks.end(), hb + seq_off[s]);
  const size_t meta_ints = 4 * R + L.cap_out + n_blocks;
  if (auto e = cudaMemcpyAsync(L.meta_i.p, hi, meta_ints * 4, cudaMemcpyHostToDevice, L.stream); e != cudaSuccess)
    return cuda_error("metadata upload", e);
  if (auto e = cudaMemcpyAsync(L.meta_f.p, L.h_meta_f.p, m * n_rot * 4, cudaMemcpyHostToDevice, L.stream); e != cudaSuccess)
    return cuda_error("metadata upload", e);

  const uint32_t layers = b.n_layers > 0 ? std::min(b.n_layers, cfg_.n_layer) : cfg_.n_layer;
  bool ran = false;
  if (graph) {
    const auto key = std::make_tuple(m, L.n_out, L.plan.chunks, L.plan.chunk_keys, layers);
    auto it = L.graphs.find(key);
    if (it == L.graphs.end()) {
      cudaGraph_t g = nullptr;
      cudaGraphExec_t exec = nullptr;
      if (cudaStreamBeginCapture(L.stream, cudaStreamCaptureModeThreadLocal) == cudaSuccess) {
        run_llama_layers(L, cfg_.n_layer, b.n_layers);
        const bool captured = cudaStreamEndCapture(L.stream, &g) == cudaSuccess && L.failure.empty() &&
                              cudaGraphInstantiate(&exec, g, 0) == cudaSuccess;
        if (g) cudaGraphDestroy(g);
        if (captured) {
          if (L.graphs.size() >= impl::graphs_max) L.clear_graphs();  // e.g. verification of many k
          it = L.graphs.emplace(key, exec).first;
          ++graph_captures_;
        } else {
          (void)cudaGetLastError();
          if (++im.capture_failures >= impl::capture_failures_max) im.graphs_ok = false;  // run eagerly from now on
        }
      }
    }
    if (it != L.graphs.end()) {
      if (auto e = cudaGraphLaunch(it->second, L.stream); e != cudaSuccess) return cuda_error("graph launch", e);
      ++graph_replays_;
      ran = true;
    }
  }
  if (!ran) run_llama_layers(L, cfg_.n_layer, b.n_layers);
  if (!L.failure.empty()) {
    cudaStreamSynchronize(L.stream);
    return make_error(errc::unsupported, "cuda: " + L.failure);
  }
  const size_t nv = cfg_.n_vocab, e = cfg_.n_embd;
  if (L.n_out > 0) {
    cudaMemcpyAsync(L.h_logits.p, L.logits.p, L.n_out * nv * 4, cudaMemcpyDeviceToHost, L.stream);
    cudaMemcpyAsync(L.h_entropy.p, L.entropy.p, m * cfg_.n_head * 4, cudaMemcpyDeviceToHost, L.stream);
    if (b.want_hidden) cudaMemcpyAsync(L.h_hidden.p, L.xo.p, L.n_out * e * 4, cudaMemcpyDeviceToHost, L.stream);
  }
  if (auto err = cudaStreamSynchronize(L.stream); err != cudaSuccess) return cuda_error(std::string("forward on ") + pool_->where(), err);
  if (auto err = cudaGetLastError(); err != cudaSuccess) return cuda_error("forward", err);
  out.logits.assign(L.h_logits.as<float>(), L.h_logits.as<float>() + L.n_out * nv);
  for (int32_t r : out_rows) {
    float s = 0;
    for (uint32_t h = 0; h < cfg_.n_head; ++h) s += L.h_entropy.as<float>()[r * cfg_.n_head + h];
    out.entropy.push_back(s / cfg_.n_head);
  }
  if (b.want_hidden) out.hidden.assign(L.h_hidden.as<float>(), L.h_hidden.as<float>() + L.n_out * e);
  out.compute_s = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  return commit_batch(b, *pool_, *end_pos);
}

std::vector<kernel_report> cuda_backend::kernel_paths() const {
  std::vector<kernel_report> out;
  const std::string sm = "cuda sm_" + std::to_string(info_.cc_major) + std::to_string(info_.cc_minor);
  for (const auto& f : impl_->formats) {
    kernel_report r;
    r.weight_type = f;
    const bool int8 = impl_->int8_act && (f == "q4_0" || f == "q4_1" || f == "q8_0" || f == "fw_w8a8");
    const bool int16 = impl_->int8_act && f.rfind("fw_w4a16", 0) == 0;
    r.path = sm + (int8    ? " (int8 activations: dp4a up to 8 rows, int8 tensor cores from 9)"
                   : int16 ? " (decoded in registers, int16 activations, dp2a)"
                           : " (decoded in registers, f32 activations)");
    if (f == "fw_w8a8" && !impl_->int8_act) r.note = "int8 weights with f32 activations (int8_activations off)";
    out.push_back(std::move(r));
  }
  kernel_report a;
  a.weight_type = "attention";
  a.path = sm + " split-K" + (impl_->pool.f16 ? " (f16 KV)" : " (f32 KV)");
  out.push_back(std::move(a));
  return out;
}

std::string cuda_backend::summary() const {
  char mem[64];
  std::snprintf(mem, sizeof mem, "%.1f GiB", static_cast<double>(info_.total_bytes) / (1u << 30));
  return "cuda backend, cuda:" + std::to_string(info_.ordinal) + " " + info_.name + " (sm_" + std::to_string(info_.cc_major) +
         std::to_string(info_.cc_minor) + ", " + mem + ", CUDA " + info_.runtime + ")" +
         (impl_->background ? ", decode on a high-priority stream" : "") +
         (opts_.graphs && impl_->graphs_ok ? ", decode graphs" : "");
}

}  // namespace fw
