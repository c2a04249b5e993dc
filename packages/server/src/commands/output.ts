/**
 * How every `credhook` command ends, in one place: its exit code (one table for all commands, {@link EXIT_CODES};
 * docs/operations.md#exit-codes has it per command), its output written completely before the process exits
 * (a pipe takes 64 KiB at once: the rest waits in the process until the reader reads it, and `process.exit`
 * would drop it — https://nodejs.org/api/process.html#processexitcode, "A note on process I/O" on the same page),
 * and a reader that went away (`| head`) ending the command quietly, as it ends a Unix tool.
 */
import { constants } from "node:os";
import { ConfigError, isCredhookError } from "@credhook/core/errors";
import { operatorMessage } from "../logging.js";

/** The exit codes a command chooses from ({@link EXIT_CODES} says what each means). */
export const EXIT = {
  /** Done: what was asked is so now. */
  done: 0,
  /** Error: not done, or not all of it. */
  error: 1,
  /** Changes found: done, and found differences a person should look at (or, with `--dry-run`, would change). */
  changes: 2,
} as const;

/** One of {@link EXIT}'s codes. */
export type ExitCode = (typeof EXIT)[keyof typeof EXIT];

/**
 * The exit code of a command whose output's reader went away (EPIPE: `credhook audit | head -n 1`): 128 + SIGPIPE's
 * number (13 on Linux and macOS), the status a shell reports for a Unix tool that SIGPIPE ended
 * (https://www.gnu.org/software/bash/manual/html_node/Exit-Status.html). Node ignores SIGPIPE, so credhook exits
 * with it itself.
 */
export const EXIT_READER_GONE = 128 + constants.signals.SIGPIPE;

/**
 * Every exit code of every command, with what it means: the table `--help` prints and the docs show
 * (packages/server/README.md, docs/operations.md#exit-codes), in the spirit of `diff` and `terraform plan
 * -detailed-exitcode` (https://developer.hashicorp.com/terraform/cli/commands/plan#detailed-exitcode) — done,
 * changes found, error.
 */
export const EXIT_CODES: ReadonlyArray<{ code: number; name: string; meaning: string }> = [
  {
    code: EXIT.done,
    name: "done",
    meaning:
      "what was asked is so: also a filter that matched nothing (list, audit), a credential already so (revoke, disable, enable, adopt run again; the output says so)",
  },
  {
    code: EXIT.error,
    name: "error",
    meaning:
      "not done, or not all of it: usage, config, the store or a gateway failing (reconcile: a gateway not listed), an action that failed (run it again), a credential named that does not exist",
  },
  {
    code: EXIT.changes,
    name: "changes found",
    meaning:
      "done, with what a person should look at: drift (reconcile; with --dry-run also what it would do), entries to adopt (adopt --dry-run), dead events (audit --undelivered)",
  },
  {
    code: EXIT_READER_GONE,
    name: "reader gone",
    meaning: "the output's reader closed it early (| head): the command ended quietly, as a Unix tool does",
  },
];

/** {@link EXIT_CODES} as the text `credhook --help` and every command's `--help` end with, wrapped at 80 columns. */
export function exitCodesHelp(): string {
  const width = Math.max(...EXIT_CODES.map((e) => String(e.code).length)) + 4;
  const wrap = (text: string) => {
    const lines = [""];
    for (const word of text.split(" ")) {
      const line = lines.at(-1)!;
      if (line && width + line.length + 1 + word.length > 80) lines.push(word);
      else lines[lines.length - 1] = line ? `${line} ${word}` : word;
    }
    return lines.join(`\n${" ".repeat(width)}`);
  };
  const rows = EXIT_CODES.map((e) => `  ${String(e.code).padEnd(width - 2)}${wrap(`${e.name}: ${e.meaning}`)}`);
  return `\nExit codes (every command; each one's in docs/operations.md#exit-codes):\n${rows.join("\n")}\n`;
}

/**
 * Ends the process after a write to `stream` failed: quietly with {@link EXIT_READER_GONE} when its reader went away
 * (EPIPE), else with 1 and, for stdout, a line on stderr saying so (a full disk under `> file`).
 */
function outputFailed(stream: NodeJS.WriteStream, err: unknown): never {
  const e = err as { code?: string; message?: string } | undefined;
  if (e?.code === "EPIPE") process.exit(EXIT_READER_GONE);
  if (stream === process.stdout) {
    try {
      process.stderr.write(`credhook: cannot write its output: ${e?.message ?? String(err)}\n`);
    } catch {
      // stderr is gone too: the exit code says it
    }
  }
  process.exit(EXIT.error);
}

/**
 * Makes a failing stdout or stderr end the process as {@link outputFailed} says — a reader gone (EPIPE: `credhook …
 * | head`) quietly with {@link EXIT_READER_GONE} — instead of an uncaught error with a stack trace. Call once, before
 * a command runs.
 */
export function endQuietlyWhenReaderGoes(): void {
  for (const stream of [process.stdout, process.stderr]) stream.on("error", (err) => outputFailed(stream, err));
}

/**
 * Writes `text` on `stream` and resolves once it and everything written before it was handed to the operating
 * system (an empty `text` waits for what was written before). A failed write ends the process ({@link outputFailed}).
 */
export function written(stream: NodeJS.WriteStream, text: string): Promise<void> {
  return new Promise((resolve) => {
    try {
      stream.write(text, (err) => (err ? outputFailed(stream, err) : resolve()));
    } catch (err) {
      outputFailed(stream, err); // a file's synchronous write throws
    }
  });
}

/** Writes `out` on stdout and exits with `code` once all of it is written, whatever reads it. */
export async function finish(out: string, code: ExitCode): Promise<never> {
  await written(process.stdout, out);
  process.exit(code);
}

/**
 * Says why the command failed on stderr and exits 1 ({@link EXIT}.error) once that is written: credhook's typed
 * errors with each message (`credhook: invalid configuration:` and a line per problem), anything else its message
 * alone — never a stack trace.
 * @param options.json a line for a log pipeline when stdout is not a terminal (`credhook serve`; see operatorMessage)
 */
export async function fail(err: unknown, options: { json?: boolean } = {}): Promise<never> {
  const messages = isCredhookError(err) ? err.messages : [(err as Error)?.message ?? String(err)];
  const what = isCredhookError(err) ? (err instanceof ConfigError ? "invalid configuration" : "error") : undefined;
  const text = what ? `credhook: ${what}:\n${messages.map((m) => `  - ${m}`).join("\n")}` : `credhook: ${messages[0]}`;
  if (options.json) {
    operatorMessage("fatal", `credhook could not start${what ? `: ${what}` : ""}`, { messages }, text);
    await written(process.stderr, "");
  } else await written(process.stderr, `${text}\n`);
  process.exit(EXIT.error);
}

/** What a command's body answers: its output (stdout) and exit code. */
export interface CommandResult {
  out: string;
  code: ExitCode;
}

/**
 * Runs a command's body and ends the process with its answer ({@link finish}), or with {@link fail} when it throws.
 * Every command but `serve` and `demo` (which keep running) ends this way.
 */
export async function run(body: () => Promise<CommandResult>): Promise<never> {
  let result: CommandResult;
  try {
    result = await body();
  } catch (err) {
    return fail(err);
  }
  return finish(result.out, result.code);
}

/** `value` as the JSON a command's `--json` prints: indented two spaces, and a newline. */
export function jsonOut(value: unknown): string {
  return `${JSON.stringify(value, null, 2)}\n`;
}

/** `lines` as a command's text output: one per line, and a final newline. */
export function linesOut(lines: readonly string[]): string {
  return `${lines.join("\n")}\n`;
}
