/**
 * The skeleton of CONTRIBUTING.md's example provider ("Adding a provider"), kept compiling by
 * `pnpm typecheck`: each method says which rule of CONTRIBUTING it follows and throws
 * UpstreamError until you write it with your cloud's SDK (then give it its real return type). A complete provider to start from is
 * packages/provider-testkit/examples/minimal-provider.ts.
 */
import { UpstreamError } from "@credhook/core/errors";
import type { Provider, ProviderContext } from "@credhook/core/provider";

/** The provider of one `mycloud` gateway. */
export class MyCloudProvider implements Provider {
  readonly capabilities = { credentialTypes: ["API_KEY" as const], importsApiKeyValue: false, readsBackSecret: false };

  /**
   * @param region the gateway's region (option `region`)
   * @param timeoutMs time-out of one call to the cloud, ms (option `timeoutMs`)
   * @param context the gateway's name, YAML path, credential type, logger and state
   */
  constructor(
    readonly region: string,
    readonly timeoutMs: number,
    private readonly context: ProviderContext,
  ) {}

  /** The error every method answers until it calls the cloud. */
  private notYet(what: string): UpstreamError {
    return new UpstreamError(`[gateway ${this.context.gateway}] mycloud: ${what} is not written yet`);
  }

  /** Marks what it makes with the gateway and `input.credentialId`; checks usage plans before the first write. */
  async create(_input: Parameters<Provider["create"]>[0]): Promise<never> {
    throw this.notYet("create");
  }

  /** Applies `desired` (add before remove); another gateway's or credential's resource is NotFound. */
  async update(_input: Parameters<Provider["update"]>[0]): Promise<never> {
    throw this.notYet("update");
  }

  /** `"revoked"`, `"gone"` (nothing there) or `"not-owned"` (someone else's: untouched). */
  async revoke(_ref: Parameters<Provider["revoke"]>[0]): Promise<never> {
    throw this.notYet("revoke");
  }

  /** What a create made for `search.credentialId`, found by the mark alone. */
  async findByCredential(_search: Parameters<NonNullable<Provider["findByCredential"]>>[0]): Promise<never> {
    throw this.notYet("findByCredential");
  }

  /** Everything that carries this gateway's mark (reconciliation, `credhook adopt`). */
  async listOwned(): Promise<never> {
    throw this.notYet("listOwned");
  }

  /** One cheap authenticated call; UpstreamUnavailable when it fails. */
  async health(): Promise<never> {
    throw this.notYet("health");
  }
}
