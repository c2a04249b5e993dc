/**
 * The endpoint GitHub's secret scanning partner program calls when it finds one of credhook's keys in a public
 * repository (`secretScanning.github`, docs/leak-response.md). Facts from GitHub's "Secret scanning partner
 * program" documentation (https://docs.github.com/en/code-security/secret-scanning/secret-scanning-partnership-program/secret-scanning-partner-program):
 * - the alert is a `POST` whose body is a JSON array of matches, `[{ token, type, url, source }]`;
 * - it is signed: `Github-Public-Key-Identifier` names the key, `Github-Public-Key-Signature` is the base64 of a
 *   DER-encoded ECDSA signature (P-256, SHA-256) over the body's bytes; GitHub publishes its keys at
 *   https://api.github.com/meta/public_keys/secret_scanning (the operator copies them into the config);
 * - the answer may carry feedback, `[{ token_hash, token_type, label }]`, `token_hash` the SHA-256 (hex) of the
 *   token and `label` `true_positive` or `false_positive`.
 *
 * The endpoint is authenticated by the signature alone (no Basic auth). Each reported token is known here only by
 * its fingerprint (`secretFingerprint`): it is never logged, stored or answered. A token whose fingerprint matches a
 * credential is acted on by the configured policy, through the orchestrator (as `credhook revoke|disable --reason
 * leaked` does): `notify` writes `credential.leaked` only; `disable` turns the credential off on every gateway,
 * revoking it where a gateway cannot turn it off; `revoke` removes it everywhere.
 */
import { createHash, createPublicKey, verify, type KeyObject } from "node:crypto";
import { readFileSync } from "node:fs";
import { dirname, resolve } from "node:path";
import type { NextFunction, Request, RequestHandler, Response } from "express";
import type { Logger as PinoLogger } from "pino";
import {
  compileSchema,
  type CredentialActionResult,
  type CredhookConfig,
  formatAjvErrors,
  type Orchestrator,
  type SecretScanningConfig,
  secretFingerprint,
} from "@credhook/core";
import {
  CredhookError,
  ConfigError,
  ErrorCodes,
  isCredhookError,
  retryAfterOf,
  Unauthorized,
  ValidationError,
} from "@credhook/core/errors";
import { type CredentialStore, PAGE_LIMIT_MAX, walkPages } from "@credhook/core/store";
import { parseJsonBody, rawBodyOf } from "./body.js";
import { sendJson } from "./http-errors.js";
import type { SecretScanningOutcome } from "./metrics.js";

/** The alert's `secretScanning.github` block, defaults applied. */
export type GithubSecretScanningConfig = NonNullable<SecretScanningConfig["github"]>;

/** The path GitHub's alerts are answered on when `secretScanning.github.path` is not set. */
export const DEFAULT_GITHUB_ALERT_PATH = "/v1/secret-scanning/github";

/** One match of a GitHub alert, as GitHub sends it (fields GitHub adds later are ignored). */
export interface GithubAlertMatch {
  /** The secret found: never logged, stored or answered. */
  token: string;
  /** The token type the operator registered with GitHub (its name for credhook's keys). */
  type: string;
  /** Where GitHub found it (`https://github.com/…`). */
  url?: string;
  /** What GitHub scanned: `content`, `commit`, `pull_request_description`, `issue_comment`, … */
  source?: string;
}

/** GitHub's optional feedback for one match: whether the token is a live credential. */
export interface GithubAlertFeedback {
  /** SHA-256 of the token, lowercase hex. */
  token_hash: string;
  token_type: string;
  label: "true_positive" | "false_positive";
}

/**
 * JSON Schema of an alert's body. Bounded so that a signed but absurd body is refused (400) rather than worked
 * through: a token of at most 1024 characters (credhook's keys have 42 to 62), 1000 matches.
 */
export const GITHUB_ALERT_SCHEMA = {
  type: "array",
  maxItems: 1000,
  items: {
    type: "object",
    required: ["token", "type"],
    properties: {
      token: { type: "string", minLength: 1, maxLength: 1024 },
      type: { type: "string", minLength: 1, maxLength: 200 },
      url: { type: "string", maxLength: 2048 },
      source: { type: "string", maxLength: 200 },
    },
  },
} as const;

/** The YAML path of the block, for messages. */
const AT = "secretScanning.github";

/**
 * GitHub's public keys of `config`, by key identifier: each an ECDSA P-256 public key, from its `pem` or its `file`.
 * @param baseDir the directory a relative `file` is read from (the config file's)
 * @throws ConfigError naming each key's YAML path that is not exactly one of `pem`/`file`, cannot be read, is not
 * a P-256 public key, or repeats an id
 */
export function loadGithubKeys(config: GithubSecretScanningConfig, baseDir: string): Map<string, KeyObject> {
  const keys = new Map<string, KeyObject>();
  const problems: string[] = [];
  config.publicKeys.forEach((k, i) => {
    const at = `${AT}.publicKeys[${i}]`;
    if ((k.pem === undefined) === (k.file === undefined)) {
      problems.push(`${at} must have exactly one of pem and file`);
      return;
    }
    if (keys.has(k.id)) {
      problems.push(`${at}.id '${k.id}' is given twice`);
      return;
    }
    let pem = k.pem;
    if (k.file !== undefined) {
      try {
        pem = readFileSync(resolve(baseDir, k.file), "utf8");
      } catch (err) {
        problems.push(`${at}.file: cannot read ${k.file} (${(err as NodeJS.ErrnoException).code ?? "error"})`);
        return;
      }
    }
    let key: KeyObject;
    try {
      key = createPublicKey(pem!);
    } catch {
      problems.push(`${at}: not a PEM public key (GitHub's 'key', -----BEGIN PUBLIC KEY-----…)`);
      return;
    }
    if (key.asymmetricKeyType !== "ec" || key.asymmetricKeyDetails?.namedCurve !== "prime256v1") {
      problems.push(`${at}: not an ECDSA P-256 public key, which GitHub signs its alerts with`);
      return;
    }
    keys.set(k.id, key);
  });
  if (problems.length > 0) throw new ConfigError(problems);
  return keys;
}

/**
 * GitHub's public keys of the `secretScanning.github` block ({@link loadGithubKeys}), a relative `file` read from the
 * config file's directory (the working directory's for a config without a file); undefined when the block is absent.
 * `credhook check-config` and `credhook serve` make this check alike.
 * @param github the config's `secretScanning.github` block
 * @param configFile the config file's path (`LoadedConfig.configFile`); undefined for a config built in code
 * @throws ConfigError as {@link loadGithubKeys}
 */
export function githubKeysOf(
  github: GithubSecretScanningConfig | undefined,
  configFile: string | undefined,
): Map<string, KeyObject> | undefined {
  if (!github) return undefined;
  return loadGithubKeys(github, configFile ? dirname(configFile) : process.cwd());
}

/** What `credhook check-config` prints about the alert endpoint. */
export function describeSecretScanning(config: CredhookConfig): string {
  const github = config.secretScanning?.github;
  return github
    ? `secretScanning.github: POST ${github.path} (signed by GitHub, no Basic auth), policy ${github.policy}, keys ${github.publicKeys.map((k) => k.id).join(", ")}`
    : "secretScanning: off (no secretScanning: block)";
}

/**
 * Whether `signature` (base64 of a DER-encoded ECDSA signature) signs `body` with `key` (SHA-256). A malformed
 * signature is false, never an error.
 */
export function verifyGithubSignature(body: Buffer, key: KeyObject, signature: string): boolean {
  try {
    return verify("sha256", body, { key, dsaEncoding: "der" }, Buffer.from(signature, "base64"));
  } catch {
    return false;
  }
}

/** What the endpoint needs of the app. */
export interface GithubAlertDeps {
  config: GithubSecretScanningConfig;
  /** GitHub's keys by identifier ({@link loadGithubKeys}). */
  keys: ReadonlyMap<string, KeyObject>;
  orchestrator: Pick<Orchestrator, "findCredentials" | "actOnCredentials" | "reportLeaked">;
  store: CredentialStore;
  logger: PinoLogger;
  /** Counts each outcome (`credhook_secret_scanning_reports_total`). */
  observe(outcome: SecretScanningOutcome): void;
}

/** What was done about one distinct reported token. */
interface TokenReport {
  fingerprint: string;
  label: GithubAlertFeedback["label"];
  /** Each matching credential with what was done to it. */
  credentials: Array<{
    credentialId: string;
    outcome: SecretScanningOutcome;
    gateways: string[];
    error?: string;
    failure?: Pick<CredentialActionResult, "status" | "code" | "retryAfterS">;
  }>;
}

/** A short, printable, bounded text of something GitHub sent (an URL, a source), for a reason or a log line. */
const printable = (v: string | undefined, max: number) => (v ?? "").replace(/[^\x20-\x7e]/g, "").slice(0, max);

/** The typed errors after which acting again cannot help a disable: the credential is revoked instead. */
const REVOKE_INSTEAD = new Set<string>([ErrorCodes.POLICY_VIOLATION, ErrorCodes.CONFLICT]);

/**
 * The handler of `POST secretScanning.github.path`, after a `jsonBody` with `raw`: verifies the signature
 * over the body's bytes, then parses and validates the body, acts on each reported key by the policy and answers GitHub's
 * feedback. Errors passed on (the app's error handler answers them as ErrorResponses):
 * 401 no, an unknown or a wrong signature (nothing is read or changed); 400 a signed body that is not an alert;
 * the 5xx of the first typed error that kept a credential from being acted on (502 a cloud call failed, 503 + Retry-After a
 * gateway throttled or unavailable, a store away, 504 a time-out): what was done stays done, and GitHub's retry of the
 * alert completes the rest (every action is idempotent, the leak is announced once).
 */
export function githubAlertHandler(deps: GithubAlertDeps): RequestHandler {
  const validate = compileSchema<GithubAlertMatch[]>(GITHUB_ALERT_SCHEMA);
  const { config, keys, logger } = deps;
  const refuse = (next: NextFunction, keyId: string | undefined, message: string, logged: string) => {
    deps.observe("unauthorized");
    logger.warn({ secretScanning: "github", ...(keyId !== undefined ? { keyId } : {}) }, logged);
    next(new Unauthorized(message));
  };
  return async (req: Request, res: Response, next: NextFunction) => {
    const header = (name: string) => {
      const v = req.headers[name];
      return typeof v === "string" && v.length > 0 ? v : undefined;
    };
    const keyId = header("github-public-key-identifier");
    const signature = header("github-public-key-signature");
    if (keyId === undefined || signature === undefined) {
      return refuse(
        next,
        undefined,
        "a secret-scanning alert must be signed: Github-Public-Key-Identifier and Github-Public-Key-Signature are required",
        "secret-scanning alert refused: not signed",
      );
    }
    const key = keys.get(keyId);
    const shownId = printable(keyId, 80);
    if (!key) {
      return refuse(
        next,
        shownId,
        "Github-Public-Key-Identifier names no key this endpoint accepts",
        `secret-scanning alert refused: key id not configured (add GitHub's current keys from https://api.github.com/meta/public_keys/secret_scanning to ${AT}.publicKeys)`,
      );
    }
    const raw = rawBodyOf(req) ?? Buffer.alloc(0);
    if (!verifyGithubSignature(raw, key, signature)) {
      return refuse(
        next,
        shownId,
        "Github-Public-Key-Signature does not verify the body",
        "secret-scanning alert refused: bad signature",
      );
    }
    let body: unknown;
    try {
      body = parseJsonBody(raw);
    } catch (err) {
      deps.observe("invalid");
      return next(err);
    }
    if (!validate(body)) {
      deps.observe("invalid");
      return next(new ValidationError(formatAjvErrors(validate.errors, (p) => `body${p}`)));
    }
    const matches = body;
    const reports = await handleAlert(deps, matches);
    const all = [...reports.values()];
    const gateways = [...new Set(all.flatMap((r) => r.credentials.flatMap((c) => c.gateways)))];
    if (gateways.length > 0) res.locals.gateways = gateways;
    for (const r of all) {
      if (r.credentials.length === 0) deps.observe("false_positive");
      for (const c of r.credentials) deps.observe(c.outcome);
    }
    const failures = all.flatMap((r) => r.credentials.filter((c) => c.outcome === "failed"));
    const line = {
      secretScanning: "github",
      keyId: shownId,
      policy: config.policy,
      matches: matches.map((m) => {
        const r = reports.get(m.token)!;
        return {
          fingerprint: r.fingerprint,
          type: printable(m.type, 200),
          ...(m.url !== undefined ? { url: printable(m.url, 2048) } : {}),
          ...(m.source !== undefined ? { source: printable(m.source, 200) } : {}),
          label: r.label,
          credentials: r.credentials.map(({ failure: _f, ...c }) => c),
        };
      }),
    };
    if (failures.length > 0) logger.error(line, "secret-scanning alert: a reported credential could not be acted on");
    else logger.info(line, "secret-scanning alert");
    // A failure a retry can fix (a cloud or the store away) makes GitHub retry the alert; one it cannot (a 4xx) is
    // left to the operator (the error line above, the `failed` count), and GitHub gets its feedback.
    const retryable = failures.find((f) => (f.failure?.status ?? 500) >= 500);
    if (retryable) {
      const status = retryable.failure?.status ?? 502;
      const error = new CredhookError(
        status,
        retryable.failure?.code ?? ErrorCodes.UPSTREAM_FAILED,
        `the alert was received, but ${failures.length} reported credential${failures.length > 1 ? "s" : ""} could not be acted on yet; retry the alert`,
      );
      return next(
        Object.assign(
          error,
          retryable.failure?.retryAfterS !== undefined ? { retryAfterS: retryable.failure.retryAfterS } : {},
        ),
      );
    }
    res.setHeader("Cache-Control", "no-store");
    const feedback: GithubAlertFeedback[] = matches.map((m) => ({
      token_hash: createHash("sha256").update(m.token, "utf8").digest("hex"),
      token_type: m.type,
      label: reports.get(m.token)!.label,
    }));
    sendJson(res, 200, feedback);
  };
}

/**
 * The key fingerprints of every record of a store without a fingerprint index, read a page at a time (only the
 * fingerprints are kept, never the records).
 */
async function knownFingerprints(store: CredentialStore): Promise<Set<string | undefined>> {
  const known = new Set<string | undefined>();
  for await (const r of walkPages((after) => store.listPage({ limit: PAGE_LIMIT_MAX, ...(after ? { after } : {}) })))
    known.add(r.keyFingerprint);
  return known;
}

/**
 * Acts on each distinct token of an alert, one after another: a token reported at several places in one alert
 * is acted on once, with a reason naming the first place. Each token is looked up by its fingerprint in the store's
 * index (`CredentialStore.findByFingerprint`); a store without one is walked once, in pages, for the fingerprints it
 * knows (an alert may hold hundreds of strings that only look like keys), then read once per token that is a credential's.
 * @returns what was done, by token (the map is the only place the tokens are kept, for the answer)
 * @throws the store's errors (StoreUnavailable) from looking a fingerprint up
 */
async function handleAlert(deps: GithubAlertDeps, matches: GithubAlertMatch[]): Promise<Map<string, TokenReport>> {
  const reports = new Map<string, TokenReport>();
  const known = deps.store.findByFingerprint ? undefined : await knownFingerprints(deps.store);
  for (const m of matches) {
    if (reports.has(m.token)) continue;
    const fingerprint = secretFingerprint(m.token);
    const places = matches.filter((x) => x.token === m.token).length;
    const reason = `GitHub secret scanning: found in ${printable(m.url, 300) || "a public repository"}${m.source ? ` (${printable(m.source, 60)})` : ""}${places > 1 ? ` and ${places - 1} more place${places > 2 ? "s" : ""}` : ""}`;
    const records = !known || known.has(fingerprint) ? await deps.orchestrator.findCredentials({ fingerprint }) : [];
    const report: TokenReport = {
      fingerprint,
      label: records.length > 0 ? "true_positive" : "false_positive",
      credentials: [],
    };
    if (records.length > 0) report.credentials = await applyPolicy(deps, fingerprint, reason);
    reports.set(m.token, report);
  }
  return reports;
}

/** Applies the configured policy to the credentials whose key has `fingerprint`. */
async function applyPolicy(
  deps: GithubAlertDeps,
  fingerprint: string,
  reason: string,
): Promise<TokenReport["credentials"]> {
  const { orchestrator } = deps;
  const how = { leaked: true, reason };
  const policy = deps.config.policy;
  if (policy === "notify") {
    const out: TokenReport["credentials"] = [];
    for (const rec of await orchestrator.findCredentials({ fingerprint })) {
      try {
        await orchestrator.reportLeaked(rec.id, { reason });
        out.push({ credentialId: rec.id, outcome: "notified", gateways: [] });
      } catch (err) {
        out.push(failed(rec.id, err));
      }
    }
    return out;
  }
  const results = await orchestrator.actOnCredentials(policy, { fingerprint }, how);
  const out: TokenReport["credentials"] = [];
  for (const r of results) {
    if (policy === "disable" && r.outcome === "failed" && r.code !== undefined && REVOKE_INSTEAD.has(r.code)) {
      // A gateway cannot turn the key off (or the credential is not active: a revoke is unfinished): a leaked key
      // must stop working, so it is revoked.
      deps.logger.warn(
        { credentialId: r.credentialId, appKey: r.appKey, why: r.error },
        "secret-scanning alert: the credential cannot be disabled, so it is revoked instead",
      );
      const [revoked] = await orchestrator.actOnCredentials(
        "revoke",
        { fingerprint, credentialId: r.credentialId },
        how,
      );
      out.push(
        revoked
          ? { ...toReport(revoked), ...(revoked.outcome === "revoked" ? { outcome: "revoked_instead" } : {}) }
          : gone(r.credentialId),
      );
      continue;
    }
    out.push(r.code === ErrorCodes.NOT_FOUND ? gone(r.credentialId) : toReport(r));
  }
  return out;
}

/** A credential revoked meanwhile (its record is gone): nothing left to act on. */
const gone = (credentialId: string): TokenReport["credentials"][number] => ({
  credentialId,
  outcome: "skipped",
  gateways: [],
  error: "revoked meanwhile",
});

/** One `Orchestrator.actOnCredentials` result as the alert reports it. */
function toReport(r: CredentialActionResult): TokenReport["credentials"][number] {
  const outcome: SecretScanningOutcome =
    r.outcome === "disabled" || r.outcome === "revoked" ? r.outcome : r.outcome === "skipped" ? "skipped" : "failed";
  return {
    credentialId: r.credentialId,
    outcome,
    gateways: r.gateways,
    ...(r.error ? { error: r.error } : {}),
    ...(outcome === "failed"
      ? {
          failure: {
            ...(r.status !== undefined ? { status: r.status } : {}),
            ...(r.code !== undefined ? { code: r.code } : {}),
            ...(r.retryAfterS !== undefined ? { retryAfterS: r.retryAfterS } : {}),
          },
        }
      : {}),
  };
}

/** A failure of `reportLeaked` as the alert reports it. */
function failed(credentialId: string, err: unknown): TokenReport["credentials"][number] {
  if (isCredhookError(err) && err.code === ErrorCodes.NOT_FOUND) return gone(credentialId);
  const retryAfterS = retryAfterOf(err);
  return {
    credentialId,
    outcome: "failed",
    gateways: [],
    error: (err as Error).message,
    failure: {
      ...(isCredhookError(err) ? { status: err.status, code: err.code } : {}),
      ...(retryAfterS !== undefined ? { retryAfterS } : {}),
    },
  };
}

/** The secret-scanning alert endpoint (`secretScanning.github`): its path and its handler (`githubAlertHandler`). */
export interface SecretScanningEndpoint {
  path: string;
  /** Answers `POST path` after a `jsonBody` with `raw` (it checks GitHub's signature over the body's bytes). */
  handler: RequestHandler;
}

/**
 * The alert endpoint of `secretScanning.github`: its path and its handler (GitHub's keys loaded), undefined when
 * the block is absent.
 * @param configFile the config file's path, whose folder a relative key `file` is read from
 * @param deps what the handler acts through (the orchestrator, the store, the logger, the metrics' callback)
 * @param reserved credhook's own endpoints' paths on the same port, which the alert's path may not be
 * @throws ConfigError its path is one of credhook's own endpoints, or a key cannot be used
 */
export function scanningEndpoint(
  github: GithubSecretScanningConfig | undefined,
  configFile: string | undefined,
  deps: Omit<GithubAlertDeps, "config" | "keys">,
  reserved: readonly string[],
): SecretScanningEndpoint | undefined {
  if (!github) return undefined;
  if (reserved.includes(github.path))
    throw new ConfigError([`secretScanning.github.path ${github.path} is one of credhook's own endpoints`]);
  const keys = githubKeysOf(github, configFile)!;
  return { path: github.path, handler: githubAlertHandler({ config: github, keys, ...deps }) };
}

/**
 * Refuses an alert path the embedded gateway would answer.
 * @param gatewayPath where the embedded gateway answers on the webhook's port (`pathPrefix`), when it does
 * @throws ConfigError the alert endpoint's path is under it
 */
export function checkScanningPath(scanning: SecretScanningEndpoint | undefined, gatewayPath: string | undefined): void {
  const path = scanning?.path;
  const under = gatewayPath;
  if (path && under && (path === under || path.startsWith(`${under}/`)))
    throw new ConfigError([`secretScanning.github.path ${path} is under ${under}, where the embedded gateway answers`]);
}
