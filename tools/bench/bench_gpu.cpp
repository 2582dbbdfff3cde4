#include "tools/bench/bench_gpu.hpp"

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <random>
#include <vector>

#include "runtime/device/prefill.hpp"

#ifdef FW_HAVE_CUDA
#include <cuda_runtime_api.h>

#include "kernels/cuda/cuda_kernels.hpp"
#include "runtime/device/cuda/cuda_backend.hpp"
#endif

namespace fw::cli {

#ifndef FW_HAVE_CUDA

expected<nlohmann::json> run_gpu_bench(runtime_parts&, const gpu_bench_options&) {
  return make_error(errc::unsupported, "this build has no CUDA backend (nvcc was not found when it was built)");
}

#else

namespace {

struct gpu_timer {
  cudaEvent_t a = nullptr, b = nullptr;
  gpu_timer() { cudaEventCreate(&a), cudaEventCreate(&b); }
  ~gpu_timer() { cudaEventDestroy(a), cudaEventDestroy(b); }
  void start() { cudaEventRecord(a); }
  double stop_s() {
    cudaEventRecord(b);
    cudaEventSynchronize(b);
    float ms = 0;
    cudaEventElapsedTime(&ms, a, b);
    return ms / 1e3;
  }
};

struct device_mem {
  void* p = nullptr;
  explicit device_mem(size_t n) {
    if (cudaMalloc(&p, n) != cudaSuccess) p = nullptr;
  }
  ~device_mem() { cudaFree(p); }
};

}  // namespace

expected<nlohmann::json> run_gpu_bench(runtime_parts& parts, const gpu_bench_options& o) {
  auto info = cuda_describe(o.device);
  if (!info) return info.err();
  cudaSetDevice(o.device);
  nlohmann::json out;
  out["device"] = info->name + " (sm_" + std::to_string(info->cc_major) + std::to_string(info->cc_minor) + ", " +
                  std::to_string(info->multiprocessors) + " SMs, CUDA " + info->runtime + ", driver " + info->driver + ")";
  // Copy bandwidth: 2 GiB each way, bytes read plus bytes written.
  const size_t copy_bytes = size_t{2} << 30;
  double copy_gbs = 0;
  {
    device_mem a(copy_bytes), b(copy_bytes);
    if (!a.p || !b.p) return make_error(errc::out_of_memory, "the copy test needs 4 GiB of GPU memory");
    cudaMemset(a.p, 1, copy_bytes);
    gpu_timer t;
    cudaMemcpy(b.p, a.p, copy_bytes, cudaMemcpyDeviceToDevice);
    t.start();
    for (int i = 0; i < 5; ++i) cudaMemcpyAsync(b.p, a.p, copy_bytes, cudaMemcpyDeviceToDevice);
    copy_gbs = 2.0 * copy_bytes * 5 / t.stop_s() / 1e9;
  }
  out["copy_gbs"] = copy_gbs;
  // Matrix-vector products at Llama-3-8B shapes.
  struct shape {
    const char* name;
    int64_t n, k;
  };
  const shape shapes[] = {{"qkv", 6144, 4096}, {"o", 4096, 4096}, {"gate_up", 28672, 4096}, {"down", 4096, 14336},
                          {"head", 128256, 4096}};
  const std::pair<const char*, cuda::wfmt> formats[] = {{"q4_0", cuda::wfmt::q4_0}, {"w4a16", cuda::wfmt::w4g128},
                                                        {"q4_1", cuda::wfmt::q4_1}, {"q8_0", cuda::wfmt::q8_0},
                                                        {"w8a8", cuda::wfmt::w8},   {"f16", cuda::wfmt::f16}};
  std::mt19937 rng(1);
  nlohmann::json gemv = nlohmann::json::array();
  for (const auto& [fname, f] : formats)
    for (const auto& s : shapes) {
      const int64_t rb = cuda::row_bytes_of(f, s.k);
      const size_t bytes = static_cast<size_t>(rb) * s.n;
      std::vector<uint8_t> host(bytes);
      // Scales must be finite: small random bytes everywhere (an fp16 of exponent <= 0x0f is tiny).
      for (auto& x : host) x = static_cast<uint8_t>(rng() & 0x3f);
      // Up to a 512-token prefill's activations (the integer products' tensor-core / long path).
      constexpr int64_t prefill_rows = 512;
      device_mem w(bytes), x(prefill_rows * s.k * 4), y(prefill_rows * s.n * 4),
          xq(static_cast<size_t>(std::max<int64_t>(cuda::act_scratch_bytes(f, prefill_rows, s.k), 16)));
      if (!w.p || !x.p || !y.p || !xq.p) return make_error(errc::out_of_memory, "GPU memory for the product test");
      cudaMemcpy(w.p, host.data(), bytes, cudaMemcpyHostToDevice);
      cudaMemset(x.p, 0, prefill_rows * s.k * 4);
      const cuda::weight_desc d{f, static_cast<const uint8_t*>(w.p), rb, s.n, s.k};
      nlohmann::json row = {{"format", fname}, {"matrix", s.name}, {"n", s.n}, {"k", s.k}, {"mib", bytes / 1048576.0}};
      // Both activation paths where the format has the integer one (keys with "_int8": the
      // activations quantized to int8 / int16, then dp4a / dp2a; the time includes the quantization).
      for (const bool int8 : {false, true}) {
        if (int8 && !cuda::integer_act_format(f)) continue;
        const std::string tag = int8 ? "_int8" : "";
        for (const int64_t m : {int64_t{1}, int64_t{16}, prefill_rows}) {
          if (m == prefill_rows && !int8) continue;  // the f32 path reruns its 8-row kernel 64 times
          auto run = [&] {
            cuda::matmul(d, static_cast<float*>(x.p), s.k, m, static_cast<float*>(y.p), s.n, nullptr, int8 ? xq.p : nullptr);
          };
          for (int i = 0; i < 3; ++i) run();
          gpu_timer t;
          t.start();
          for (int i = 0; i < o.reps; ++i) run();
          const double sec = t.stop_s() / o.reps;
          if (m == 1) {
            row["us_b1" + tag] = sec * 1e6;
            row["gbs_b1" + tag] = bytes / sec / 1e9;
            row["share_of_copy" + tag] = bytes / sec / 1e9 / copy_gbs;
          } else if (m == 16) {
            row["us_b16" + tag] = sec * 1e6;
          } else {
            row["us_b512" + tag] = sec * 1e6;
            row["tops_b512" + tag] = 2.0 * m * s.n * s.k / sec / 1e12;  // multiply-adds x 2 per second
          }
        }
      }
      gemv.push_back(row);
    }
  if (auto e = cudaGetLastError(); e != cudaSuccess) return make_error(errc::internal, std::string("CUDA: ") + cudaGetErrorString(e));
  out["gemv"] = gemv;
  // The session's model on its device, when that is a CUDA device: decode steps at batch 1.
  if (auto* gpu = dynamic_cast<cuda_backend*>(parts.device())) {
    const auto& mc = parts.m->config();
    std::vector<int32_t> prompt(128);
    for (size_t i = 0; i < prompt.size(); ++i) prompt[i] = static_cast<int32_t>((i * 7919) % mc.n_vocab);
    auto kv = gpu->kv_pool().allocate(0);
    forward_result r;
    if (auto ok = prefill_tokens(*gpu, *kv, prompt.data(), prompt.size(), 0, 128, r); !ok) return ok.err();
    std::vector<double> steps;
    int32_t pos = static_cast<int32_t>(prompt.size());
    for (int i = 0; i < 64; ++i) {
      forward_batch fb;
      fb.urgent = true;
      fb.kv.push_back(&*kv);
      fb.add(static_cast<int32_t>(i % mc.n_vocab), pos++, 0, true);
      const auto t0 = std::chrono::steady_clock::now();
      if (auto ok = gpu->forward(fb, r); !ok) return ok.err();
      steps.push_back(std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count());
    }
    (void)gpu->kv_pool().release(*kv);
    std::sort(steps.begin() + 8, steps.end());  // the first steps capture graphs
    const double median = steps[8 + (steps.size() - 8) / 2];
    const double weight_bytes = static_cast<double>(parts.m->weights().matrix_bytes());
    const double floor_s = weight_bytes / (copy_gbs * 1e9);  // the weights read at the copy's memory traffic rate
    out["decode"] = {{"model", mc.name.empty() ? mc.architecture : mc.name}, {"weight_gb", weight_bytes / 1e9},
                     {"step_ms_b1", median * 1e3}, {"tokens_per_s_b1", 1.0 / median},
                     {"floor_ms", floor_s * 1e3}, {"step_vs_floor", median / floor_s},
                     {"graph_replays", gpu->graph_replays()}};
  }
  return out;
}

#endif

void print_gpu_bench(const nlohmann::json& r) {
  std::printf("device: %s\n", r.value("device", std::string("?")).c_str());
  std::printf("copy bandwidth (bytes read + written per second): %.0f GB/s\n", r.value("copy_gbs", 0.0));
  std::printf("\n%-7s %-8s %8s %10s %10s %12s %10s   integer activations: %7s %12s %10s %11s %8s\n", "format", "matrix",
              "MiB", "us (b=1)", "GB/s", "of copy", "us (b=16)", "us (b=1)", "of copy", "us (b=16)", "us (b=512)", "TOPS");
  for (const auto& g : r["gemv"]) {
    std::printf("%-7s %-8s %8.1f %10.1f %10.0f %11.0f%% %10.1f", g["format"].get<std::string>().c_str(),
                g["matrix"].get<std::string>().c_str(), g["mib"].get<double>(), g["us_b1"].get<double>(),
                g["gbs_b1"].get<double>(), 100 * g["share_of_copy"].get<double>(), g["us_b16"].get<double>());
    if (g.contains("us_b1_int8"))
      std::printf("   %28.1f %11.0f%% %10.1f %11.1f %8.1f", g["us_b1_int8"].get<double>(),
                  100 * g["share_of_copy_int8"].get<double>(), g["us_b16_int8"].get<double>(),
                  g["us_b512_int8"].get<double>(), g["tops_b512_int8"].get<double>());
    std::printf("\n");
  }
  if (r.contains("decode")) {
    const auto& d = r["decode"];
    std::printf("\ndecode (%s, %.2f GB of weights): %.3f ms per step at batch 1 (%.0f tokens/s); weights / bandwidth = "
                "%.3f ms: %.2fx of that floor\n",
                d["model"].get<std::string>().c_str(), d["weight_gb"].get<double>(), d["step_ms_b1"].get<double>(),
                d["tokens_per_s_b1"].get<double>(), d["floor_ms"].get<double>(), d["step_vs_floor"].get<double>());
  }
}

}  // namespace fw::cli
