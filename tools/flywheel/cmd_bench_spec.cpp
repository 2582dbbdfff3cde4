// flywheel bench-spec: speculative decoding against plain decoding of the same target on the
// same prompts in one run: per draft kind and k, acceptance rate, mean accepted length and
// decode speedup, on a chat-style and an extraction-style prompt set, with what a drafting pass
// cost in situ (its verification and its drafting, each over a plain token's time); plus the
// cost of a verification forward over k + 1 rows relative to one row. A benchmark, not a test.
#include <algorithm>
#include <chrono>
#include <cstdio>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "runtime/model/user_prompt.hpp"
#include "runtime/text/chat_encoding.hpp"
#include "runtime/setup/runtime_parts.hpp"
#include "runtime/step/generator.hpp"
#include "runtime/device/verify_cost.hpp"
#include "tools/flywheel/arg_parser.hpp"
#include "tools/flywheel/bench_spec_engine.hpp"
#include "tools/flywheel/commands.hpp"
#include "tools/flywheel/model_session.hpp"

namespace fw::cli {
namespace {

const std::vector<std::string> chat_set = {
    "What are three tips for staying productive when working from home?",
    "Explain in simple terms why the sky is blue.",
    "Write a short, friendly reply to a customer asking when their order will arrive.",
    "What is the difference between a virus and a bacterium?",
    "Give me a recipe idea for a quick vegetarian dinner.",
    "How do I start learning to play the guitar?",
    "What should I pack for a weekend camping trip?",
    "How can I improve my sleep?",
};

const std::vector<std::string> extraction_set = {
    "Here is a support ticket:\n\"My order #48213 arrived on March 3rd but the blue ceramic mug was cracked. I would "
    "like a replacement sent to 12 Baker Street, London.\"\nCopy the sentence that says what was damaged, word for word.",
    "Contract clause: \"The Supplier shall deliver the goods no later than thirty (30) days after the Purchase Order "
    "date, and any delay shall entitle the Buyer to a discount of two percent (2%) per week.\"\nQuote the clause "
    "exactly and then say what happens if delivery is late.",
    "Meeting notes: Alice will send the budget draft by Friday. Bob will book the venue for the offsite. Carol will "
    "review the hiring plan with Dave.\nList each person's task, quoting the notes.",
    "def add(a, b):\n    return a + b\n\ndef sub(a, b):\n    return a - b\n\nRewrite the two functions above with "
    "type hints for integers, keeping everything else the same.",
    "Email: \"Hi team, the server migration is scheduled for Saturday at 10 pm. Please save your work and log out "
    "before 9:30 pm. The new address will be files.example.com.\"\nWhat time should people log out? Quote the email.",
    "Recipe: Mix two cups of flour with one teaspoon of salt. Add one cup of warm water and knead for ten minutes. Let "
    "the dough rest for an hour.\nRepeat the recipe steps as a numbered list.",
    "Address list:\nJohn Smith, 45 Oak Road, Leeds\nMary Jones, 7 Hill Street, York\nPeter Brown, 120 Station Avenue, "
    "Bath\nWho lives in York? Answer with the full line from the list.",
    "Error log: \"2024-05-02 14:03:11 ERROR disk /dev/sda1 is 98% full; write to /var/log/app.log failed\"\nCopy the "
    "error message and explain it.",
};

/// Generated tokens per decode forward pass, plain steps included (what the speedup follows):
/// every prompt's first token comes from its prefill, every other pass gives one token plus the
/// drafted tokens it accepted. "tokens/step" counts the speculative steps only.
double tokens_per_pass(double tokens, double accepted, size_t prompts) {
  const double passes = tokens - static_cast<double>(prompts) - accepted;
  return passes > 0 ? (tokens - static_cast<double>(prompts)) / passes : 1;
}

struct set_result {
  double plain_ms = 0, spec_ms = 0;  ///< decode time, summed over the set's prompts (fastest rep each)
  uint64_t tokens = 0, drafted = 0, accepted = 0, steps = 0, gated = 0;
  uint64_t plain_tokens = 0;  ///< the plain runs' (last rep; the same as `tokens` when greedy)
  // The last rep's time split: drafting and verification of the drafting passes, plain decoding.
  double draft_ms = 0, verify_ms = 0, last_plain_ms = 0;
  bool identical = true;
};

}  // namespace

int cmd_bench_spec(int argc, char** argv) {
  arg_parser args("bench-spec");
  model_session::declare_flags(args);
  args.option("drafts", "draft kinds to measure", "ngram,hybrid,feature,layer-skip,self-quant")
      .option("k", "draft lengths to measure (numbers and/or auto)", "1,2,3,4,5,6,7,8,auto")
      .option("max-tokens", "tokens generated per prompt at most (answers end at end-of-sequence)", "128")
      .option("reps", "runs of every prompt per configuration; the fastest counts (a shared machine's noise)", "3")
      .option("json-out", "also write the results as JSON to this file")
      .option("draft-threads", "--engine: the draft actor's own threads to measure (comma list; 0 = it shares the "
              "target's)", "0")
      .flag("engine", "decode through the actor runtime as the console and server do: the draft actor proposes, "
            "the decode worker verifies; shows the overlap (draft time the target did not wait for)")
      .option("temperature", "sampling temperature of the requests (0 = greedy; above 0 the target samples with "
              "[sampling]'s top-k / top-p / min-p, every prompt seeded, and drafts are accepted by rejection sampling: "
              "speedup compares tokens per second, outputs differ by design)", "0")
      .flag("ignore-eos", "generate max-tokens per prompt, past end-of-sequence")
      .flag("json", "print one JSON object instead of a table");
  if (auto done = args.parse_or_exit_code(argc, argv)) return *done;
  auto max_tokens = args.integer("max-tokens", 1);
  auto reps = args.integer("reps", 1);
  for (const auto* v : {&max_tokens, &reps}) {
    if (!*v) {
      std::fprintf(stderr, "%s\n", v->err().message.c_str());
      return 2;
    }
  }
  auto session = model_session::open(args, false);
  if (!session) {
    std::fprintf(stderr, "bench-spec: %s\n", session.err().what().c_str());
    return 1;
  }
  const model& m = *session->m;
  if (!m.chat()) {
    std::fprintf(stderr, "bench-spec: the model has no usable chat template\n");
    return 1;
  }
  sampling_params params = sampling_params::from_section(session->cfg.sampling);
  const auto temperature = args.number("temperature");
  if (!temperature || *temperature < 0 || *temperature > 10) {
    std::fprintf(stderr, "bench-spec: --temperature must be a number in [0, 10]\n");
    return 2;
  }
  params.temperature = static_cast<float>(*temperature);
  const bool sampled = params.temperature > 0;
  params.max_tokens = static_cast<int32_t>(*max_tokens);
  params.ignore_eos = args.on("ignore-eos");
  if (sampled && args.on("engine")) {
    std::fprintf(stderr, "bench-spec: --temperature above 0 is measured in-process only (without --engine)\n");
    return 2;
  }
  auto encode = [&](const std::string& text) { return user_prompt(m, text); };
  const std::vector<std::pair<std::string, const std::vector<std::string>*>> sets = {{"chat", &chat_set},
                                                                                     {"extraction", &extraction_set}};
  generator_options base;
  base.n_ctx = session->n_ctx;

  // Verification cost: one forward over k + 1 rows vs one row, after a 128-token context; the
  // same calibration k = auto's cost-aware choice uses.
  std::vector<double> calibrated;
  if (auto cc = calibrate_verify_cost(*session->device(), 8, 128, 5)) calibrated = std::move(*cc);
  nlohmann::json verify = nlohmann::json::array();
  for (size_t k = 0; k < calibrated.size(); ++k) verify.push_back({{"rows", k + 1}, {"cost_vs_one_row", calibrated[k]}});

  nlohmann::json results = nlohmann::json::array();
  const bool json = args.on("json");
  const bool engine = args.on("engine");
  if (!json) {
    std::printf("verification cost (forward over k+1 rows / one row):");
    for (const auto& v : verify) std::printf("  %d rows %.2fx", v["rows"].get<int>(), v["cost_vs_one_row"].get<double>());
    if (engine)
      std::printf("\n\nthrough the actor runtime (draft actor + decode worker); thr: the draft's own threads, taken "
                  "from the target's (equal total cores; plain decoding has them all); draft ms: waited for / drafted "
                  "ahead (during verification or at the verdict) / of it used\n"
                  "%-11s %-10s %-5s %-4s %9s %12s %11s %9s %10s %26s %s\n",
                  "set", "draft", "k", "thr", "accept%", "tokens/step", "tokens/pass", "speedup", "plain t/s", "draft ms",
                  "identical");
    else
      std::printf("\n\npass: a drafting pass's verification in situ / a plain token's decode time; draft: its "
                  "drafting, the same way\n%-11s %-10s %-5s %10s %12s %11s %9s %10s %8s %6s %9s %s\n",
                  "set", "draft", "k", "accept%", "tokens/step", "tokens/pass", "speedup", "plain t/s", "pass", "draft",
                  "gated", "identical");
  }
  for (const auto& kind : args.list("drafts")) {
    config c = session->cfg;
    if (auto ok = c.set("speculative.draft", kind); !ok) {
      std::fprintf(stderr, "bench-spec: --drafts: %s\n", ok.err().message.c_str());
      return 2;
    }
    auto d = session->make_draft(c.speculative);
    if (!d) {
      std::fprintf(stderr, "bench-spec: draft %s: %s\n", kind.c_str(), d.err().what().c_str());
      return 1;
    }
    for (const auto& k : args.list("k")) {
      if (auto ok = c.set("speculative.k", k); !ok) {
        std::fprintf(stderr, "bench-spec: --k: %s\n", ok.err().message.c_str());
        return 2;
      }
      if (engine) {
        for (const auto& threads : args.list("draft-threads")) {
          if (auto ok = c.set("speculative.draft_threads", threads); !ok) {
            std::fprintf(stderr, "bench-spec: --draft-threads: %s\n", ok.err().message.c_str());
            return 2;
          }
          for (const auto& [set_name, texts] : sets) {
            std::vector<std::vector<int32_t>> prompts;
            for (const auto& t : *texts) prompts.push_back(encode(t));
            auto r = bench_spec_engine_set(*session, c, prompts, params, *reps, calibrated);
            if (!r) {
              std::fprintf(stderr, "bench-spec: %s\n", r.err().what().c_str());
              return 1;
            }
            const double accept = r->drafted > 0 ? r->accepted / r->drafted : 0;
            const double per_step = r->steps > 0 ? (r->accepted + r->steps) / r->steps : 1;
            const double per_pass = tokens_per_pass(static_cast<double>(r->tokens), r->accepted, prompts.size());
            const double speedup = r->plain_ms / r->spec_ms;
            const double plain_tok_s = r->tokens * 1000.0 / r->plain_ms;
            results.push_back({{"set", set_name}, {"draft", kind}, {"k", k}, {"engine", true},
                               {"draft_threads", std::stoi(threads)}, {"target_threads", r->target_threads},
                               {"acceptance_rate", accept},
                               {"mean_accepted_length", per_step}, {"tokens_per_pass", per_pass}, {"speedup", speedup},
                               {"plain_tok_s", plain_tok_s}, {"spec_tok_s", r->tokens * 1000.0 / r->spec_ms},
                               {"tokens", r->tokens}, {"identical_to_plain", r->identical}, {"draft_waited_ms", r->draft_s * 1000},
                               {"draft_ahead_ms", r->ahead_s * 1000}, {"draft_hidden_ms", r->hidden_s * 1000},
                               {"ahead_hits", r->ahead_hits}});
            if (!json) {
              char ms[64];
              std::snprintf(ms, sizeof ms, "%.0f / %.0f / %.0f", r->draft_s * 1000, r->ahead_s * 1000, r->hidden_s * 1000);
              std::printf("%-11s %-10s %-5s %-4s %8.1f%% %12.2f %11.2f %8.2fx %10.1f %26s %s\n", set_name.c_str(),
                          kind.c_str(), k.c_str(), threads.c_str(), 100 * accept, per_step, per_pass, speedup, plain_tok_s, ms,
                          r->identical ? "yes" : "NO");
            }
          }
        }
        continue;
      }
      generator_options go = base;
      go.draft = d->get();
      go.policy = make_k_policy(c.speculative, 0, calibrated);
      for (size_t si = 0; si < sets.size(); ++si) {
        // Plain and speculative runs of each prompt alternate, so both see the same machine load
        // (a shared machine drifts over minutes); the fastest rep of each counts.
        generator plain_gen(m, *session->device(), base);
        generator spec_gen(m, *session->device(), go);
        set_result sr;
        uint64_t prompt_no = 0;
        for (const auto& text : *sets[si].second) {
          const auto prompt = encode(text);
          double best_plain = 1e300, best_spec = 1e300;
          sampling_params sp = params;
          if (sampled) sp.seed = 1 + prompt_no++;  // the same draws for every rep and configuration
          for (int64_t rep = 0; rep < *reps; ++rep) {
            auto p = plain_gen.run(prompt, sp);
            auto r = p ? spec_gen.run(prompt, sp) : p;
            if (!r) {
              std::fprintf(stderr, "bench-spec: %s\n", r.err().what().c_str());
              return 1;
            }
            best_plain = std::min(best_plain, p->decode_ms);
            best_spec = std::min(best_spec, r->decode_ms);
            sr.identical = sr.identical && r->tokens == p->tokens;
            if (rep + 1 < *reps) continue;
            sr.tokens += r->tokens.size();  // counts from the last rep
            sr.drafted += r->spec.draft_tokens;
            sr.accepted += r->spec.accepted_tokens;
            sr.steps += r->spec.steps;
            sr.gated += r->spec.gated_steps;
            sr.draft_ms += r->spec.draft_ms;
            sr.verify_ms += r->spec.verify_ms;
            sr.last_plain_ms += p->decode_ms;
            sr.plain_tokens += p->tokens.size();
          }
          sr.plain_ms += best_plain;
          sr.spec_ms += best_spec;
        }
        const double accept = sr.drafted ? double(sr.accepted) / sr.drafted : 0;
        const double per_step = sr.steps ? double(sr.accepted + sr.steps) / sr.steps : 1;
        const double per_pass = tokens_per_pass(static_cast<double>(sr.tokens), static_cast<double>(sr.accepted),
                                                sets[si].second->size());
        // Greedy: the same tokens, so the times compare; sampled: tokens per second (the last rep's
        // token counts over the fastest reps' times, which only differ by the machine's noise).
        const double plain_tok_s = (sampled ? sr.plain_tokens : sr.tokens) * 1000.0 / sr.plain_ms;
        const double speedup = sampled ? (sr.tokens * 1000.0 / sr.spec_ms) / plain_tok_s : sr.plain_ms / sr.spec_ms;
        // In situ: a drafting pass's verification (its forward over k + 1 rows and the acceptance)
        // against a plain token's decode time, and its drafting, both per pass.
        const double plain_token_ms = sr.plain_tokens ? sr.last_plain_ms / static_cast<double>(sr.plain_tokens) : 0;
        const double pass_cost = sr.steps && plain_token_ms > 0 ? sr.verify_ms / sr.steps / plain_token_ms : 0;
        const double draft_share = sr.steps && plain_token_ms > 0 ? sr.draft_ms / sr.steps / plain_token_ms : 0;
        results.push_back({{"set", sets[si].first}, {"draft", kind}, {"k", k}, {"acceptance_rate", accept},
                           {"mean_accepted_length", per_step}, {"tokens_per_pass", per_pass}, {"speedup", speedup},
                           {"plain_tok_s", plain_tok_s}, {"spec_tok_s", sr.tokens * 1000.0 / sr.spec_ms},
                           {"tokens", sr.tokens}, {"temperature", params.temperature},
                           {"identical_to_plain", sampled ? nlohmann::json() : nlohmann::json(sr.identical)},
                           {"gated_steps", sr.gated}, {"verify_pass_vs_plain_token", pass_cost},
                           {"draft_per_pass_vs_plain_token", draft_share}});
        if (!json)
          std::printf("%-11s %-10s %-5s %9.1f%% %12.2f %11.2f %8.2fx %10.1f %7.2fx %5.2fx %9llu %s\n",
                      sets[si].first.c_str(), kind.c_str(), k.c_str(), 100 * accept, per_step, per_pass, speedup, plain_tok_s, pass_cost,
                      draft_share, static_cast<unsigned long long>(sr.gated),
                      sampled ? "- (sampled)" : sr.identical ? "yes" : "NO");
      }
    }
  }
  nlohmann::json out = {{"model", m.file().path()}, {"threads", session->threads()->size()},
                        {"max_tokens", *max_tokens}, {"reps", *reps}, {"verify_cost", verify}, {"results", results}};
  if (json) std::printf("%s\n", out.dump(1).c_str());
  if (args.has("json-out")) {
    if (FILE* f = std::fopen(args.str("json-out").c_str(), "w")) {
      std::fprintf(f, "%s\n", out.dump(1).c_str());
      std::fclose(f);
    }
  }
  return 0;
}

}  // namespace fw::cli
