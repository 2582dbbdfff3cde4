// The flywheel subcommands. Each takes the arguments after its name and returns an exit code.
#pragma once

namespace fw::cli {

int cmd_generate(int argc, char** argv);
int cmd_tokenize(int argc, char** argv);
int cmd_info(int argc, char** argv);
int cmd_bench(int argc, char** argv);
/// `flywheel bench ablation ...` (cmd_bench hands its arguments on).
int cmd_bench_ablation(int argc, char** argv);
/// `flywheel bench soak ...`: the chaos soak.
int cmd_bench_soak(int argc, char** argv);
int cmd_console(int argc, char** argv);
int cmd_plugins(int argc, char** argv);
int cmd_bench_spec(int argc, char** argv);
int cmd_fit_draft(int argc, char** argv);
int cmd_serve(int argc, char** argv);
int cmd_quantize(int argc, char** argv);
int cmd_eval(int argc, char** argv);
int cmd_config_reference(int argc, char** argv);

/// The model used when --model is not given.
inline constexpr const char* default_model_path = "models/SmolLM2-135M-Instruct.Q4_1.gguf";

}  // namespace fw::cli
