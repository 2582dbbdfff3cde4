// The entry-table checks and the registry row's JSON, without loading a plugin
// (runtime/plugin/plugin_table, plugin_info; arbitrary tables: tests/fuzz/fuzz_plugin_table.cpp).
#include "runtime/plugin/plugin_table.hpp"

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include "runtime/plugin/plugin_info.hpp"

namespace fw {
namespace {

int gemv(void*, uint32_t, const void*, size_t, int64_t, int64_t, const float*, int64_t, float*) { return 0; }
void* create(const char*, char*, size_t) { return nullptr; }
void destroy(void*) {}

struct kernel_table {
  std::vector<uint32_t> types{8, 2};
  fw_quant_kernel_v1 q{};
  fw_plugin_v1 t{};
  kernel_table() {
    q.types = types.data(), q.n_types = types.size(), q.gemv = gemv;
    t.abi_version = FW_PLUGIN_ABI_VERSION, t.kind = FW_PLUGIN_QUANT_KERNEL, t.name = "k", t.version = "1";
    t.create = create, t.destroy = destroy, t.kind_table = &q;
  }
};

TEST(plugin_table, a_complete_quant_kernel_table_is_accepted_and_its_types_read) {
  kernel_table k;
  EXPECT_EQ(plugin_table_problem(k.t), "");
  EXPECT_EQ(plugin_table_types(k.t), (std::vector<uint32_t>{8, 2}));
}

TEST(plugin_table, a_type_list_longer_than_any_real_one_is_refused_unread) {
  kernel_table k;
  k.q.n_types = size_t{1} << 60;  // a corrupt table: reading it would run off the array
  EXPECT_NE(plugin_table_problem(k.t).find("weight types (at most 256"), std::string::npos) << plugin_table_problem(k.t);
  k.q.n_types = max_plugin_types + 1;
  EXPECT_NE(plugin_table_problem(k.t), "");
  k.q.n_types = 0;
  EXPECT_NE(plugin_table_problem(k.t).find("no weight types"), std::string::npos);
}

TEST(plugin_table, a_missing_function_or_string_is_named) {
  kernel_table k;
  k.q.gemv = nullptr;
  EXPECT_NE(plugin_table_problem(k.t).find("gemv"), std::string::npos);
  kernel_table n;
  n.t.name = "";
  EXPECT_NE(plugin_table_problem(n.t).find("no name"), std::string::npos);
  kernel_table a;
  a.t.abi_version = 99;
  EXPECT_NE(plugin_table_problem(a.t).find("ABI version 99"), std::string::npos);
}

TEST(plugin_info, the_registry_row_is_valid_json_whatever_bytes_a_plugin_reports) {
  plugin_info p;
  p.name = "draft\"x\\";
  p.version = "1.0-\xff\xfe-caf\xc3\xa9-\xe0\x80\xaf-\xed\xa0\x80";  // bad bytes, an é, an overlong, a surrogate
  p.file = "plugins/lib\x01.so";
  p.error = "cannot be loaded: /tmp/\xe9t\xe9.so: bad ELF";  // Latin-1 file name from dlerror()
  const auto j = nlohmann::json::parse(to_json({p}), nullptr, false);
  ASSERT_FALSE(j.is_discarded()) << to_json({p});
  EXPECT_EQ(j[0]["name"], "draft\"x\\");
  EXPECT_EQ(j[0]["version"], "1.0-\xef\xbf\xbd\xef\xbf\xbd-caf\xc3\xa9-\xef\xbf\xbd\xef\xbf\xbd\xef\xbf\xbd-\xef\xbf\xbd\xef\xbf\xbd\xef\xbf\xbd");
  EXPECT_EQ(j[0]["file"], "plugins/lib\x01.so");
  EXPECT_EQ(j[0]["error"], "cannot be loaded: /tmp/\xef\xbf\xbdt\xef\xbf\xbd.so: bad ELF");
}

}  // namespace
}  // namespace fw
