// Types of scripts/lambda-bundle.mjs (plain JavaScript, run by node) for the tests that import it.

/** The options validators of `packages` compiled ahead of time: `{ key, code }` per package and option set (see lambda-bundle.mjs). */
export function precompiledOptionValidators(packages: string[]): Array<{ key: string; code: string }>;

/** Builds the Lambda zip (see lambda-bundle.mjs). */
export function bundleLambda(options?: {
  config?: string;
  providers?: string[];
  out?: string;
  work?: string;
}): Promise<{
  out: string;
  bytes: number;
  unzippedBytes: number;
  files: number;
  providers: string[];
  /** The config shipped as the zip's webhook.config.yaml: its path and how it was found, or the embedded default. */
  config: string;
  work: string;
}>;
