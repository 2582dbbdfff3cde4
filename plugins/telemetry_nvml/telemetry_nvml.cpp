// telemetry_nvml: a telemetry_source plugin that reads NVIDIA GPUs through NVML, loaded at run
// time with dlopen("libnvidia-ml.so.1") (no build-time dependency on the driver). Per GPU, as
// device "cuda:N" (or the names of the "devices" param, comma-separated, e.g. "prefill,decode"):
//   temperature_c   the GPU core temperature
//   link_errors     NVLink replay + recovery + CRC counters of every link, the PCIe replay
//                   counter and uncorrected volatile ECC errors, summed: cumulative, so the
//                   degradation policy reads a rise as trouble
//   nvlink_active   NVLink links up (a drop means a link went down; shown, not acted on)
//   pcie_tx_gbps, pcie_rx_gbps   PCIe traffic now (utilization, not capacity: shown only)
// Counters a GPU does not support are skipped. On a machine without the NVIDIA driver probe()
// fails with the reason, so the host refuses the plugin with one log line and serving goes on.
// Thread-safety: one caller at a time per object (the supervisor).
#include <flywheel/plugin_sdk.h>

#include <dlfcn.h>

#include <cstdio>
#include <string>
#include <vector>

#include "plugin_params.hpp"

#ifndef FW_PLUGIN_VERSION
#define FW_PLUGIN_VERSION "0.0.0"
#endif

namespace {

// The NVML ABI this plugin uses (nvml.h is not needed to build it): return codes are ints,
// 0 success; enums are ints; a device is an opaque pointer.
using nvml_device = void*;
using fn_void = int (*)();
using fn_count = int (*)(unsigned*);
using fn_handle = int (*)(unsigned, nvml_device*);
using fn_temp = int (*)(nvml_device, int, unsigned*);
using fn_link_state = int (*)(nvml_device, unsigned, int*);
using fn_link_errors = int (*)(nvml_device, unsigned, int, unsigned long long*);
using fn_uint = int (*)(nvml_device, unsigned*);
using fn_ecc = int (*)(nvml_device, int, int, unsigned long long*);
using fn_pcie = int (*)(nvml_device, int, unsigned*);
using fn_text = int (*)(char*, unsigned);
using fn_error = const char* (*)(int);

constexpr unsigned max_links = 18;  // NVML_NVLINK_MAX_LINKS on Hopper

struct nvml {
  void* lib = nullptr;
  fn_void init = nullptr, shutdown = nullptr;
  fn_count count = nullptr;
  fn_handle handle = nullptr;
  fn_temp temperature = nullptr;
  fn_link_state link_state = nullptr;
  fn_link_errors link_errors = nullptr;
  fn_uint pcie_replays = nullptr;
  fn_ecc ecc = nullptr;
  fn_pcie pcie_throughput = nullptr;
  fn_text driver_version = nullptr;
  fn_error error_string = nullptr;

  template <class F>
  void bind(F& f, const char* name) {
    f = reinterpret_cast<F>(dlsym(lib, name));
  }

  /// Loads and initializes NVML; "" on success, else why not.
  std::string open() {
    lib = dlopen("libnvidia-ml.so.1", RTLD_NOW | RTLD_LOCAL);
    if (!lib) {
      const char* e = dlerror();
      return std::string("libnvidia-ml.so.1 cannot be loaded (") + (e ? e : "?") +
             "): no NVIDIA driver on this machine, GPU telemetry is off";
    }
    bind(init, "nvmlInit_v2");
    bind(shutdown, "nvmlShutdown");
    bind(count, "nvmlDeviceGetCount_v2");
    bind(handle, "nvmlDeviceGetHandleByIndex_v2");
    bind(temperature, "nvmlDeviceGetTemperature");
    bind(link_state, "nvmlDeviceGetNvLinkState");
    bind(link_errors, "nvmlDeviceGetNvLinkErrorCounter");
    bind(pcie_replays, "nvmlDeviceGetPcieReplayCounter");
    bind(ecc, "nvmlDeviceGetTotalEccErrors");
    bind(pcie_throughput, "nvmlDeviceGetPcieThroughput");
    bind(driver_version, "nvmlSystemGetDriverVersion");
    bind(error_string, "nvmlErrorString");
    if (!init || !shutdown || !count || !handle) {
      close();
      return "libnvidia-ml.so.1 lacks nvmlInit_v2, nvmlDeviceGetCount_v2 or nvmlDeviceGetHandleByIndex_v2";
    }
    if (const int rc = init(); rc != 0) {
      std::string why = "nvmlInit failed: " + std::string(error_string ? error_string(rc) : "error " + std::to_string(rc));
      dlclose(lib);
      lib = nullptr;
      return why;
    }
    return {};
  }

  void close() {
    if (!lib) return;
    if (shutdown) shutdown();
    dlclose(lib);
    lib = nullptr;
  }
};

struct source {
  nvml api;
  std::vector<nvml_device> gpus;
  std::vector<std::string> names;
};

void put(fw_telemetry_sample_v1* out, size_t cap, size_t& n, const std::string& device, const char* metric, double v) {
  if (n >= cap) return;
  std::snprintf(out[n].device, sizeof out[n].device, "%s", device.c_str());
  std::snprintf(out[n].metric, sizeof out[n].metric, "%s", metric);
  out[n].value = v;
  ++n;
}

int describe(void* self, char* buf, size_t len) {
  auto* s = static_cast<source*>(self);
  if (!s) return FW_PLUGIN_E_INVALID;
  char version[96] = "?";
  if (s->api.driver_version) s->api.driver_version(version, sizeof version);
  const std::string text = "NVML, driver " + std::string(version) + ", " + std::to_string(s->gpus.size()) + " GPU" +
                           (s->gpus.size() == 1 ? "" : "s");
  fw_plugin_message(buf, len, text.c_str());
  return FW_PLUGIN_OK;
}

int sample(void* self, fw_telemetry_sample_v1* out, size_t cap) {
  auto* s = static_cast<source*>(self);
  if (!s || (!out && cap)) return FW_PLUGIN_E_INVALID;
  size_t n = 0;
  const nvml& a = s->api;
  for (size_t g = 0; g < s->gpus.size(); ++g) {
    nvml_device d = s->gpus[g];
    const std::string& name = s->names[g];
    unsigned t = 0;
    if (a.temperature && a.temperature(d, 0 /* NVML_TEMPERATURE_GPU */, &t) == 0) put(out, cap, n, name, "temperature_c", t);
    double errors = 0;
    bool any = false;
    unsigned active = 0;
    for (unsigned link = 0; a.link_state && link < max_links; ++link) {
      int up = 0;
      if (a.link_state(d, link, &up) != 0) continue;
      any = true;
      if (!up) continue;
      ++active;
      for (int counter = 0; counter < 4 && a.link_errors; ++counter) {  // replay, recovery, CRC flit, CRC data
        unsigned long long v = 0;
        if (a.link_errors(d, link, counter, &v) == 0) errors += static_cast<double>(v);
      }
    }
    if (any) put(out, cap, n, name, "nvlink_active", active);
    unsigned replays = 0;
    if (a.pcie_replays && a.pcie_replays(d, &replays) == 0) {
      errors += replays;
      any = true;
    }
    unsigned long long ecc = 0;
    if (a.ecc && a.ecc(d, 1 /* uncorrected */, 0 /* volatile */, &ecc) == 0) {
      errors += static_cast<double>(ecc);
      any = true;
    }
    if (any) put(out, cap, n, name, "link_errors", errors);
    unsigned kbps = 0;
    if (a.pcie_throughput && a.pcie_throughput(d, 0 /* TX */, &kbps) == 0) put(out, cap, n, name, "pcie_tx_gbps", kbps / 1e6);
    if (a.pcie_throughput && a.pcie_throughput(d, 1 /* RX */, &kbps) == 0) put(out, cap, n, name, "pcie_rx_gbps", kbps / 1e6);
  }
  return static_cast<int>(n);
}

int probe(char* why, size_t len) {
  nvml api;
  const std::string e = api.open();
  if (!e.empty()) {
    fw_plugin_message(why, len, e.c_str());
    return 1;
  }
  api.close();
  return 0;
}

void* create(const char* params_json, char* err, size_t err_len) {
  try {
    auto* s = new source;
    if (std::string e = s->api.open(); !e.empty()) {
      fw_plugin_message(err, err_len, e.c_str());
      delete s;
      return nullptr;
    }
    unsigned count = 0;
    if (const int rc = s->api.count(&count); rc != 0) count = 0;
    std::vector<std::string> given;
    if (auto names = fw_plugin::param(params_json ? params_json : "{}", "devices")) {
      std::string cur;
      for (char c : *names + ",") {
        if (c == ',') {
          if (!cur.empty()) given.push_back(cur);
          cur.clear();
        } else if (c != ' ') {
          cur += c;
        }
      }
    }
    for (unsigned i = 0; i < count; ++i) {
      nvml_device d = nullptr;
      if (s->api.handle(i, &d) != 0) continue;
      s->gpus.push_back(d);
      s->names.push_back(i < given.size() ? given[i] : "cuda:" + std::to_string(i));
    }
    return s;
  } catch (...) {
    fw_plugin_message(err, err_len, "out of memory");
    return nullptr;
  }
}

void destroy(void* self) {
  auto* s = static_cast<source*>(self);
  if (!s) return;
  s->api.close();
  delete s;
}

const fw_telemetry_source_v1 table = {describe, sample};
const fw_plugin_v1 plugin = {FW_PLUGIN_ABI_VERSION, FW_PLUGIN_TELEMETRY_SOURCE, "telemetry_nvml", FW_PLUGIN_VERSION,
                             probe, create, destroy, &table};

}  // namespace

extern "C" FW_PLUGIN_EXPORT const fw_plugin_v1* fw_plugin_entry(void) { return &plugin; }
