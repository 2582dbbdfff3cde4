#include "runtime/plugin/kinds/live_draft.hpp"

#include <map>

#include "runtime/base/log.hpp"

namespace fw {
namespace {

class live_draft final : public drafter {
 public:
  live_draft(std::shared_ptr<plugin_host> host, std::string name, draft_options options,
             std::shared_ptr<draft_plugin> first, uint64_t version)
      : host_(std::move(host)), name_(std::move(name)), options_(std::move(options)),
        current_(std::move(first)), version_(version) {}

  std::string name() const override { return current_ ? current_->name() : name_; }

  expected<void> begin(uint64_t seq, std::span<const int32_t> prompt, const sampling_params& p) override {
    refresh();
    if (!current_) return make_error(errc::unsupported, "draft plugin " + name_ + " is not loaded");
    if (auto ok = current_->begin(seq, prompt, p); !ok) return ok;
    seqs_[seq] = current_;
    return {};
  }
  expected<draft_proposal> propose(uint64_t seq, std::span<const int32_t> history, int k) override {
    auto it = seqs_.find(seq);
    if (it == seqs_.end()) return make_error(errc::invalid_argument, "draft plugin " + name_ + ": unknown sequence");
    return it->second->propose(seq, history, k);
  }
  void accept(uint64_t seq, std::span<const int32_t> history) override {
    if (auto it = seqs_.find(seq); it != seqs_.end()) it->second->accept(seq, history);
  }
  void end(uint64_t seq) override {
    auto it = seqs_.find(seq);
    if (it == seqs_.end()) return;
    it->second->end(seq);
    seqs_.erase(it);  // the last sequence on an old version releases it (and its library)
  }

 private:
  /// Moves new sequences to the host's current version when it changed.
  void refresh() {
    const uint64_t v = host_->version_id(name_);
    if (v == version_) return;
    version_ = v;
    if (v == 0) {  // unloaded: sequences in flight keep their object
      current_.reset();
      return;
    }
    auto next = host_->create_draft(name_, options_);
    if (!next) {
      log_warn("draft plugin " + name_ + ": the reloaded version cannot serve (" + next.err().message + ")");
      current_.reset();
      return;
    }
    log_info("draft plugin " + name_ + ": version " + (*next)->version() + " drafts for new requests");
    current_ = std::move(*next);
  }

  std::shared_ptr<plugin_host> host_;
  std::string name_;
  draft_options options_;
  std::shared_ptr<draft_plugin> current_;  ///< for sequences that begin now; null: none loaded
  uint64_t version_;
  std::map<uint64_t, std::shared_ptr<draft_plugin>> seqs_;  ///< the object each sequence began on
};

}  // namespace

expected<std::unique_ptr<drafter>> make_live_draft(std::shared_ptr<plugin_host> host, const std::string& name,
                                                   const draft_options& options) {
  const uint64_t version = host->version_id(name);
  auto first = host->create_draft(name, options);
  if (!first) return first.err();
  return std::unique_ptr<drafter>(std::make_unique<live_draft>(std::move(host), name, options, std::move(*first), version));
}

}  // namespace fw
