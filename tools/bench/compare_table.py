#!/usr/bin/env python3
"""Side-by-side table of llama-bench and `flywheel bench --json` results (called by
compare_llama_cpp.sh). Reads RAW/llama-<type>-<threads>.json (llama-bench -o json) and
RAW/flywheel-<type>-<threads>.json, prints a markdown table with the ratio flywheel / llama.cpp
per (type, threads, test, depth), the flywheel-only batched rows, and the decode bound; writes all
of it, raw results included, to --out as JSON.
"""
import argparse, json, os, platform, sys


def llama_tests(rows):
    out = {}
    for r in rows:
        if r.get("n_gen", 0) == 0:
            name = "pp%d" % r["n_prompt"]
        elif r.get("n_prompt", 0) == 0:
            name = "tg%d" % r["n_gen"]
        else:
            name = "pp%d+tg%d" % (r["n_prompt"], r["n_gen"])
        out[(name, r.get("n_depth", 0))] = (r["avg_ts"], r["stddev_ts"])
    return out


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--raw", required=True)
    ap.add_argument("--types", required=True)
    ap.add_argument("--threads", required=True)
    ap.add_argument("--peer-version", default="")
    ap.add_argument("--out", required=True)
    a = ap.parse_args()

    rows, extra, bounds, raw = [], [], [], {}
    for t in a.types.split(","):
        for th in a.threads.split(","):
            with open(os.path.join(a.raw, "llama-%s-%s.json" % (t, th))) as f:
                ll = json.load(f)
            with open(os.path.join(a.raw, "flywheel-%s-%s.json" % (t, th))) as f:
                fw = json.load(f)
            raw["%s/%s" % (t, th)] = {"llama.cpp": ll, "flywheel": fw}
            peer = llama_tests(ll)
            for r in fw["results"]:
                key = (r["test"], r["depth"])
                if r.get("rows", 1) > 1:
                    extra.append({"type": t, "threads": int(th), "test": r["test"], "depth": r["depth"],
                                  "flywheel_tok_s": r["tok_s"], "flywheel_std": r["std"],
                                  "step_cost_vs_1row": r.get("step_cost_vs_1row")})
                    continue
                p = peer.get(key)
                rows.append({"type": t, "threads": int(th), "test": r["test"], "depth": r["depth"],
                             "llama_tok_s": p[0] if p else None, "llama_std": p[1] if p else None,
                             "flywheel_tok_s": r["tok_s"], "flywheel_std": r["std"],
                             "ratio": r["tok_s"] / p[0] if p and p[0] else None})
            b = dict(fw["decode_bound"])
            b.update({"type": t, "threads": int(th)})
            bounds.append(b)

    def fmt(v, s):
        return "%8.1f ± %5.1f" % (v, s) if v is not None else "%16s" % "-"

    print("| type | threads | test | depth |   llama.cpp t/s |    flywheel t/s | flywheel/llama.cpp |")
    print("|------|---------|------|-------|-----------------|-----------------|--------------------|")
    for r in rows:
        ratio = "%.2fx" % r["ratio"] if r["ratio"] else "-"
        print("| %s | %d | %s | %d | %s | %s | %s |" % (r["type"], r["threads"], r["test"], r["depth"],
              fmt(r["llama_tok_s"], r["llama_std"]), fmt(r["flywheel_tok_s"], r["flywheel_std"]), ratio))
    if extra:
        print("\nBatched decode (flywheel; aggregate t/s over all rows; step cost relative to a 1-row step):")
        for r in extra:
            print("  %s %d threads %s depth %d: %.1f ± %.1f t/s, step cost %.2fx" % (
                r["type"], r["threads"], r["test"], r["depth"], r["flywheel_tok_s"], r["flywheel_std"],
                r["step_cost_vs_1row"] or 0))
    print("\nDecode bound (weights read per token / measured read bandwidth):")
    for b in bounds:
        print("  %s %d threads: %.1f MiB/token, %.1f GB/s -> %.0f t/s" % (
            b["type"], b["threads"], b["model_bytes_per_token"] / 1048576, b["read_gb_s"], b["bound_tok_s"]))

    with open(a.out, "w") as f:
        json.dump({"llama_cpp_python": a.peer_version, "host": platform.node(), "comparison": rows,
                   "batched": extra, "decode_bound": bounds, "raw": raw}, f, indent=1)
    print("\nwrote %s" % a.out, file=sys.stderr)


if __name__ == "__main__":
    main()
