import { defineProvider, type OptionsOf } from "@credhook/core/provider";
// your Provider class: create, update, revoke, findByCredential, listOwned, health (the rules below)
import { MyCloudProvider } from "./provider.js";

// JSON Schema (2020-12) of `gateways.<name>.options`: the options' one source
export const optionsSchema = {
  type: "object",
  additionalProperties: false,
  required: ["region"],
  properties: {
    region: { type: "string", description: "Region of the gateway, e.g. `eu-west-1`." },
    timeoutMs: {
      type: "integer",
      minimum: 100,
      default: 10000,
      description: "Time-out of one call (ms). Default 10000.",
    },
    // a secret: `writeOnly: true` masks it wherever credhook prints or logs options
    apiToken: { type: "string", writeOnly: true, description: "Token of the gateway's admin API." },
  },
} as const;
// { region: string; timeoutMs?: number; apiToken?: string }
export type MyOptions = OptionsOf<typeof optionsSchema>;

export default defineProvider({
  type: "mycloud", // short name, in messages and logs
  optionsSchema, // ajv checks the YAML with it; `pnpm schema` puts it in the editors' schema
  credentialTypes: ["API_KEY"], // a gateway with another `credentialType` is refused, naming its YAML path
  // what the schema cannot check, one message per problem naming its YAML path (check-config and serve)
  problems: (options, context) =>
    options.region !== "local" && !options.apiToken
      ? [`${context.configPath}.apiToken: required outside the local emulator (region local)`]
      : [],
  // once per gateway at start-up; options.timeoutMs: number (defaults applied, once)
  create: (options, context) => new MyCloudProvider(options.region, options.timeoutMs, context),
});
