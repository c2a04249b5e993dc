// `node --import scripts/bench-max-rss.mjs …`: writes the process's peak resident memory (bytes, from
// process.resourceUsage().maxRSS, which is in KiB) into the file CREDHOOK_BENCH_MAXRSS names, as the process exits
// (also through process.exit). Used by `pnpm bench --scale` (scripts/bench-scale.ts) for a command's peak RSS.
import { writeFileSync } from "node:fs";

const file = process.env.CREDHOOK_BENCH_MAXRSS;
if (file) process.on("exit", () => writeFileSync(file, String(process.resourceUsage().maxRSS * 1024)));
