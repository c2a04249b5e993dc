/**
 * The `credhook` command line (bin/credhook.mjs runs {@link main}): the commander program, built in commands/index.ts from one module per
 * command under commands/ — each registers its options and action; how every command ends (its output written
 * completely, its exit code from one table, a reader gone) is commands/output.ts's.
 *
 * - `credhook serve`: runs the webhook until SIGTERM/SIGINT; `credhook init`: writes the starter config;
 *   `credhook check-config`: validates it and prints the routing table;
 * - `credhook reconcile`, `credhook adopt`: finishing what a crash left, bringing existing credentials under credhook;
 * - `credhook apply`: bringing the stored credentials to the config (gateway migration);
 * - `credhook audit`: the credential events (the audit trail); `credhook expire`: one expiry pass;
 * - `credhook inspect`, `list`, `revoke`, `disable`, `enable`: where a credential lives, and acting on it everywhere
 *   at once when it leaks;
 * - `credhook demo`: the multi-cloud demo on cloud fakes (repository only); `credhook hash-password`: a password's
 *   scrypt hash.
 */
export { credhookProgram, main } from "./commands/index.js";
