// `node --import scripts/bench-max-rss.mjs …`: writes the process's peak resident memory (bytes: `VmHWM` of
// /proc/self/status, the high-water mark of this process image's RSS) into the file CREDHOOK_BENCH_MAXRSS names, as
// the process exits (also through process.exit). Used by `pnpm bench --scale` (scripts/bench-scale.ts) for a command's
// peak RSS. Not `process.resourceUsage().maxRSS`: Linux carries getrusage's maxrss across fork and exec (the
// kernel's exec keeps the larger of the old image's high-water mark and the new one's), so a command spawned by a
// large parent reported the parent's size — the bench's own process, about 300 MiB at 100,000 credentials, which an
// earlier version of this figure showed as the command's "1.98×" growth. VmHWM belongs to the new image alone.
import { readFileSync, writeFileSync } from "node:fs";

const file = process.env.CREDHOOK_BENCH_MAXRSS;
if (file)
  process.on("exit", () => {
    const kib = /VmHWM:\s+(\d+) kB/.exec(readFileSync("/proc/self/status", "utf8"))?.[1];
    writeFileSync(file, kib === undefined ? "NaN" : String(Number(kib) * 1024));
  });
