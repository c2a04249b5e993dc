// Load generator of scripts/bench-server.ts: runs autocannon in its own process
// (so that it does not share the measured server's event loop) with the options
// given as JSON in argv[2], and prints a JSON summary: req/s, latency p50/p99 (ms).
import autocannon from "autocannon";

const options = JSON.parse(process.argv[2]);
const result = await autocannon(options);
process.stdout.write(
  JSON.stringify({
    rps: result.requests.average,
    total: result.requests.total,
    p50: result.latency.p50,
    p99: result.latency.p99,
    non2xx: result.non2xx,
    errors: result.errors + result.timeouts,
  }),
);
