#include "runtime/setup/feature_map_fit.hpp"

#include "runtime/model/user_prompt.hpp"
#include "runtime/quant/calibration_set.hpp"

namespace fw {

expected<std::vector<std::string>> read_prompt_file(const std::string& path) {
  calibration_options o;
  o.max_queries = UINT32_MAX;
  o.min_queries = 1;
  o.longest_first = false;
  return read_calibration_file(path, o);
}

expected<feature_map> fit_feature_map_file(const model& m, backend& target, cpu::thread_pool& threads,
                                           const std::string& prompts_path, const std::string& out,
                                           feature_fit_options options, feature_fit_report* report) {
  auto texts = read_prompt_file(prompts_path);
  if (!texts) return texts.err();
  std::vector<std::vector<int32_t>> prompts;
  for (const auto& t : *texts) prompts.push_back(user_prompt(m, t));
  auto map = fit_feature_map(m, target, threads, prompts, options, report);
  if (!map) return map.err();
  if (auto ok = save_feature_map(*map, out); !ok) return ok.err();
  return map;
}

}  // namespace fw
