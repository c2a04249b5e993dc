/**
 * TCP ports for the servers the tests, benchmarks and `pnpm postgres` start on 127.0.0.1.
 *
 * Two kinds, because a port the kernel hands out can be handed out again:
 * - {@link freePort}: one the kernel picks (`listen(0)`), for a server that keeps it until the end.
 * - {@link restartablePort}: one below the kernel's ephemeral range, for a server that is
 *   stopped and started again on the same port (a database restarted or kept away for 60 s while
 *   clients keep its URL). The kernel picks ports for `listen(0)` and for every outgoing
 *   connection from the ephemeral range (Linux: `/proc/sys/net/ipv4/ip_local_port_range`, by
 *   default 32768–60999, see https://www.kernel.org/doc/html/latest/networking/ip-sysctl.html),
 *   so while such a server is down, any other test's connection could take its port from that
 *   range and the restart would fail with EADDRINUSE. Below the range, only an explicit bind can.
 */
import { readFileSync } from "node:fs";
import { createServer } from "node:net";

/** Listens on `port` (0: the kernel picks) on 127.0.0.1 and closes again; resolves the port, rejects on EADDRINUSE and the like. */
function probe(port: number): Promise<number> {
  return new Promise((resolve, reject) => {
    const srv = createServer();
    srv.once("error", reject);
    srv.listen(port, "127.0.0.1", () => {
      const bound = (srv.address() as { port: number }).port;
      srv.close(() => resolve(bound));
    });
  });
}

/** A free TCP port on 127.0.0.1 that the kernel picks (from its ephemeral range). */
export function freePort(): Promise<number> {
  return probe(0);
}

/** The first port of the kernel's ephemeral range (Linux's default, 32768, where it cannot be read). */
export function ephemeralRangeStart(): number {
  try {
    const first = Number(readFileSync("/proc/sys/net/ipv4/ip_local_port_range", "utf8").trim().split(/\s+/)[0]);
    return Number.isInteger(first) && first > 1024 ? first : 32768;
  } catch {
    return 32768;
  }
}

/**
 * A free TCP port on 127.0.0.1 below the kernel's ephemeral range (from 10000 up to the range's
 * start), tried at random until one binds: for a server that is stopped and started again on it.
 * @throws Error when 200 tries found none free.
 */
export async function restartablePort(): Promise<number> {
  const low = 10_000;
  const high = ephemeralRangeStart();
  for (let i = 0; i < 200; i++) {
    const port = low + Math.floor(Math.random() * (high - low));
    try {
      return await probe(port);
    } catch {
      // taken: try another
    }
  }
  throw new Error(`no free port on 127.0.0.1 between ${low} and ${high} after 200 tries`);
}
