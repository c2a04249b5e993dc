/** `credhook hash-password < file`: reads a password on stdin and prints its scrypt hash, for `server.auth.users[].passwordHash`. */
import type { Command } from "commander";
import { hashPassword, passwordProblem } from "../passwords.js";
import { EXIT, run } from "./output.js";

/** Registers `credhook hash-password` on `program`: exit 1 when the password breaks the policy (passwords.ts). */
export function register(program: Command): void {
  program
    .command("hash-password")
    .description("read a password on stdin and print its scrypt hash, for server.auth.users[].passwordHash")
    .action(() =>
      run(async () => {
        const chunks: Buffer[] = [];
        for await (const c of process.stdin) chunks.push(c as Buffer);
        const password = Buffer.concat(chunks)
          .toString("utf8")
          .replace(/\r?\n$/, "");
        const problem = passwordProblem(password);
        if (problem) throw new Error(problem);
        return { out: `${await hashPassword(password)}\n`, code: EXIT.done };
      }),
    );
}
