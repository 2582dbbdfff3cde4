// telemetry_fake: a telemetry_source plugin for tests. Each sample() reads the file named by the
// "file" param: lines "DEVICE METRIC VALUE" become readings (so a test changes the readings while
// the runtime runs); a file holding "fail" makes sample() fail; a missing file gives no readings.
#include <flywheel/plugin_sdk.h>

#include <cstdio>
#include <fstream>
#include <sstream>
#include <string>

#include "plugin_params.hpp"

#ifndef FW_PLUGIN_VERSION
#define FW_PLUGIN_VERSION "0.0.0"
#endif

namespace {

struct fake {
  std::string file;
};

int describe(void* self, char* buf, size_t len) {
  fw_plugin_message(buf, len, ("readings from " + static_cast<fake*>(self)->file).c_str());
  return FW_PLUGIN_OK;
}

int sample(void* self, fw_telemetry_sample_v1* out, size_t cap) {
  std::ifstream in(static_cast<fake*>(self)->file);
  std::string line;
  size_t n = 0;
  while (std::getline(in, line) && n < cap) {
    if (line == "fail") return FW_PLUGIN_E_INTERNAL;
    std::istringstream ls(line);
    std::string device, metric;
    double v = 0;
    if (!(ls >> device >> metric >> v)) continue;
    std::snprintf(out[n].device, sizeof out[n].device, "%s", device.c_str());
    std::snprintf(out[n].metric, sizeof out[n].metric, "%s", metric.c_str());
    out[n].value = v;
    ++n;
  }
  return static_cast<int>(n);
}

void* create(const char* params_json, char* err, size_t err_len) {
  auto file = fw_plugin::param(params_json ? params_json : "{}", "file");
  if (!file) {
    fw_plugin_message(err, err_len, "param file is required");
    return nullptr;
  }
  return new fake{*file};
}

void destroy(void* self) { delete static_cast<fake*>(self); }

const fw_telemetry_source_v1 table = {describe, sample};
const fw_plugin_v1 plugin = {FW_PLUGIN_ABI_VERSION, FW_PLUGIN_TELEMETRY_SOURCE, "telemetry_fake", FW_PLUGIN_VERSION,
                             nullptr, create, destroy, &table};

}  // namespace

extern "C" FW_PLUGIN_EXPORT const fw_plugin_v1* fw_plugin_entry(void) { return &plugin; }
