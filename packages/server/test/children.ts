/**
 * Every process a test starts, tracked so that none outlives its test file: {@link spawnTracked}
 * (and {@link execFileTracked}) start each one as the leader of a process group of its own
 * (`detached`), and {@link endAll} — run after every test file by `children-setup.ts`, which the
 * vitest configuration loads for every project, whether the file's tests passed or failed —
 * sends SIGTERM to each group still alive, then SIGKILL to those still there after
 * {@link END_GRACE_MS}. When the test process itself exits (a crashed or timed-out worker), the
 * groups left are killed at once (SIGKILL). Test code spawns only through these (a conventions
 * test holds it: `test-tiers.test.ts`).
 */
import { execFile, spawn, type ChildProcess, type ExecFileOptions, type SpawnOptions } from "node:child_process";

/** How long a group gets between SIGTERM and SIGKILL in {@link endAll}, ms. */
export const END_GRACE_MS = 5000;

/** The children started in this test process and not yet seen to exit. */
const live = new Set<ChildProcess>();

/** Sends `signal` to the process group led by `child` (its whole tree); false when it is gone. */
function signalGroup(child: ChildProcess, signal: NodeJS.Signals): boolean {
  if (child.pid === undefined) return false;
  try {
    process.kill(-child.pid, signal);
    return true;
  } catch {
    return false; // ESRCH: the group has no process left
  }
}

/** Records `child` until it exits. */
function track(child: ChildProcess): ChildProcess {
  live.add(child);
  child.once("exit", () => live.delete(child));
  child.once("error", () => live.delete(child));
  return child;
}

/**
 * `child_process.spawn`, with the child leading a process group of its own (`detached: true`;
 * still a child of this process, waited for and piped as usual) and tracked for {@link endAll}.
 * @param command the executable; @param args its arguments; @param options as for `spawn`
 */
export function spawnTracked(command: string, args: readonly string[], options: SpawnOptions = {}): ChildProcess {
  return track(spawn(command, args, { ...options, detached: true }));
}

/**
 * `child_process.execFile` as a promise, tracked and in its own process group like {@link spawnTracked}.
 * @returns its stdout and stderr (strings)
 * @throws the execFile error (its `code`, `stdout`, `stderr`) when it exits non-zero or fails to start
 */
export function execFileTracked(
  command: string,
  args: readonly string[],
  options: ExecFileOptions = {},
): Promise<{ stdout: string; stderr: string }> {
  return new Promise((resolve, reject) => {
    track(
      execFile(
        command,
        args,
        { maxBuffer: 64 * 1024 * 1024, ...options, encoding: "utf8", detached: true } as ExecFileOptions & {
          encoding: "utf8";
        },
        (err, stdout, stderr) => {
          if (err) reject(Object.assign(err, { stdout: String(stdout), stderr: String(stderr) }));
          else resolve({ stdout: String(stdout), stderr: String(stderr) });
        },
      ),
    );
  });
}

/** The process ids of the tracked children still running (for tests of this module). */
export function livePids(): number[] {
  return [...live].flatMap((c) => (c.pid === undefined ? [] : [c.pid]));
}

/**
 * Ends every tracked child's process group: SIGTERM, then SIGKILL after {@link END_GRACE_MS} ms
 * for those whose leader has not exited, and waits for each leader's exit.
 */
export async function endAll(): Promise<void> {
  const children = [...live];
  await Promise.all(
    children.map(async (child) => {
      const exited = new Promise<void>((resolve) => {
        if (child.exitCode !== null || child.signalCode !== null) resolve();
        else child.once("exit", () => resolve());
      });
      if (!signalGroup(child, "SIGTERM")) return;
      const timer = setTimeout(() => signalGroup(child, "SIGKILL"), END_GRACE_MS);
      await exited;
      clearTimeout(timer);
      signalGroup(child, "SIGKILL"); // what the leader left behind in its group
      live.delete(child);
    }),
  );
}

// A worker that exits (crashed, or ended by vitest on a timeout) takes its groups with it.
process.once("exit", () => {
  for (const child of live) signalGroup(child, "SIGKILL");
});
