// The deployment examples stay true to the code: the Kubernetes example's config
// loads (its secrets read from files), its probes are the server's, its replicas —
// each with a data directory of its own, as each pod has its emptyDir — share the
// OAuth signing keys through the Secret's encryption key (and without it, check-config,
// serve and the second replica say what docs/deploy.md says), and the Dockerfile
// ships the packed install the packed-install test exercises.
// The example's store is PostgreSQL: the tests' real server stands in for it.
import { describe, expect, inject, it } from "vitest";
import { randomBytes } from "node:crypto";
import { existsSync, mkdirSync, mkdtempSync, readdirSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { connect } from "node:net";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { Writable } from "node:stream";
import { createLocalJWKSet, jwtVerify } from "jose";
import pg from "pg";
import { parseAllDocuments } from "yaml";
import { createLogger, loadConfigFile, type RunningServer, startServer } from "../src/index.js";
import { runCredhook } from "./helpers.js";

const repo = (p: string) => new URL(`../../../${p}`, import.meta.url);

describe("deploy/kubernetes/credhook.yaml", () => {
  const docs = parseAllDocuments(readFileSync(repo("deploy/kubernetes/credhook.yaml"), "utf8")).map(
    (d) => d.toJS() as Record<string, any>,
  );
  const kind = (k: string) => docs.find((d) => d.kind === k)!;

  const text = readFileSync(repo("deploy/kubernetes/credhook.yaml"), "utf8");

  it("holds no Secret (applying it never overwrites the real one): the header's `kubectl create secret` makes exactly the keys the config reads", () => {
    expect(docs.map((d) => d.kind)).not.toContain("Secret");
    const created = [...text.matchAll(/--from-literal=([a-z-]+)=/g)].map((m) => m[1]).sort();
    const read = [
      ...(kind("ConfigMap").data["webhook.config.yaml"] as string).matchAll(
        /\$\{file:\/run\/secrets\/credhook\/([a-z-]+)\}/g,
      ),
    ]
      .map((m) => m[1])
      .sort();
    expect(created).toEqual(["database-url", "portal-password", "signing-key-encryption-key"]);
    expect(read).toEqual(created);
    expect(kind("Deployment").spec.template.spec.volumes.find((v: any) => v.secret).secret.secretName).toBe("credhook");
  });

  it("validates against the Kubernetes API schemas (kubernetes-models: types, required fields, enums)", async () => {
    for (const doc of docs) {
      const { [doc.kind]: Model } = (await import(`kubernetes-models/${doc.apiVersion}/${doc.kind}`)) as Record<
        string,
        new (
          d: unknown,
        ) => { validate(): void }
      >;
      expect(() => new Model!(doc).validate(), `${doc.kind} ${doc.metadata.name}`).not.toThrow();
    }
    // the check is real: a wrong type or enum value fails it
    const { Deployment } = await import("kubernetes-models/apps/v1/Deployment");
    const broken = structuredClone(kind("Deployment"));
    broken.spec.template.spec.topologySpreadConstraints[0].whenUnsatisfiable = "Sometimes";
    broken.spec.template.spec.containers[0].ports[0].containerPort = "8080";
    expect(() => new Deployment(broken).validate()).toThrow(/whenUnsatisfiable|containerPort/);
  });

  it("pins the image to the server's version, spreads replicas across nodes and zones, exposes the embedded gateway's port", () => {
    const version = (JSON.parse(readFileSync(repo("packages/server/package.json"), "utf8")) as { version: string })
      .version;
    const pod = kind("Deployment").spec.template.spec;
    expect(pod.containers[0].image).toMatch(new RegExp(`:${version.replaceAll(".", "\\.")}$`));
    expect(pod.containers[0].image).not.toMatch(/:latest$/);
    const selector = { matchLabels: kind("Deployment").spec.selector.matchLabels };
    expect(pod.topologySpreadConstraints).toEqual([
      expect.objectContaining({
        topologyKey: "kubernetes.io/hostname",
        maxSkew: 1,
        whenUnsatisfiable: "DoNotSchedule",
        labelSelector: selector,
      }),
      expect.objectContaining({ topologyKey: "topology.kubernetes.io/zone", maxSkew: 1, labelSelector: selector }),
    ]);
    expect(
      kind("Service")
        .spec.ports.map((p: any) => p.targetPort)
        .sort(),
    ).toEqual(["gateway", "http"]);
  });

  const container = kind("Deployment").spec.template.spec.containers[0];
  const portOf = (name: string) => container.ports.find((p: any) => p.name === name).containerPort as number;
  /** The ConfigMap's `webhook.config.yaml`, with `edit` applied (an operator's change). */
  const configMapYaml = (edit: (yaml: string) => string = (y) => y) =>
    edit(kind("ConfigMap").data["webhook.config.yaml"] as string);

  /**
   * A namespace's stand-in: the Secret's files in a folder of their own (the pods' /run/secrets/credhook), the
   * test's PostgreSQL in a schema of its own for the Secret's database URL, and a data directory per pod (each
   * pod's own emptyDir at /var/lib/credhook); every server it starts is closed after the test.
   */
  async function namespace() {
    const dir = mkdtempSync(join(tmpdir(), "credhook-k8s-"));
    const secrets = join(dir, "secrets");
    mkdirSync(secrets);
    const schema = `k8s_${randomBytes(4).toString("hex")}`;
    const secret = (key: string, value: string) => writeFileSync(join(secrets, key), `${value}\n`);
    secret("portal-password", "k8s-secret-password");
    secret("database-url", inject("databaseUrl"));
    const pods: RunningServer[] = [];
    /** The config file the pods read: the ConfigMap's `yaml` with the Secret's files and the schema put in. */
    const configFile = (yaml: string) => {
      const file = join(dir, "webhook.config.yaml");
      writeFileSync(
        file,
        yaml
          .replaceAll("/run/secrets/credhook/", `${secrets}/`)
          .replace(/^(\s+)postgres: ("[^"]*")/m, `$1postgres: { url: $2, schema: ${schema} }`),
      );
      return file;
    };
    return {
      dir,
      schema,
      secret,
      configFile,
      /** Starts a pod on the config `yaml` (its ports free ones, its data dir `<dir>/<name>`); its log lines at warn and above go to `logs`. */
      async pod(name: string, yaml: string, logs: string[] = []) {
        const config = await loadConfigFile(configFile(yaml), { env: {} });
        const gateway = config.embeddedGateway as { listen: { port: number } };
        const sink = new Writable({
          write(chunk, _enc, cb) {
            logs.push(...String(chunk).split("\n").filter(Boolean));
            cb();
          },
        });
        const running = await startServer(
          {
            ...config,
            dataDir: join(dir, name),
            embeddedGateway: { ...gateway, listen: { ...gateway.listen, port: 0 } },
          } as typeof config,
          { port: 0, host: "127.0.0.1", logger: createLogger("warn", sink) },
        );
        pods.push(running);
        return running;
      },
      async close() {
        await Promise.all(pods.splice(0).map((p) => p.close()));
      },
    };
  }

  const portal = `Basic ${Buffer.from("portal:k8s-secret-password").toString("base64")}`;
  /** A client of the `m2m` gateway (client credentials), created through `pod`'s webhook. */
  const client = async (pod: RunningServer) => {
    const res = await fetch(`${pod.url}/v1/createCredentials`, {
      method: "POST",
      headers: { authorization: portal, "content-type": "application/json" },
      body: JSON.stringify({
        appName: `K8s ${randomBytes(3).toString("hex")}`,
        developer: "d@example.com",
        apis: [{ id: "m2m-orders" }],
      }),
    });
    expect(res.status).toBe(200);
    return (await res.json()) as { clientId: string; clientSecret: string };
  };
  /** An access token `pod`'s embedded gateway issues to `c`. */
  const tokenFrom = async (pod: RunningServer, c: { clientId: string; clientSecret: string }) => {
    const res = await fetch(`${pod.gatewayUrl}/oauth2/token`, {
      method: "POST",
      headers: { "content-type": "application/x-www-form-urlencoded" },
      body: new URLSearchParams({
        grant_type: "client_credentials",
        client_id: c.clientId,
        client_secret: c.clientSecret,
      }),
    });
    expect(res.status).toBe(200);
    return ((await res.json()) as { access_token: string }).access_token;
  };
  /** Verifies `token` with the JWKS `pod` publishes and the one issuer of the ConfigMap, as a resource server does. */
  const verifiesOn = async (pod: RunningServer, token: string) => {
    const jwks = createLocalJWKSet(await (await fetch(`${pod.gatewayUrl}/.well-known/jwks.json`)).json());
    const { payload } = await jwtVerify(token, jwks, { issuer: "http://credhook.credhook.svc:8081" });
    return payload.client_id;
  };
  const deployDoc = readFileSync(repo("docs/deploy.md"), "utf8").replace(/\s+/g, " ");

  it("its ConfigMap's config reads the Secret's files; two replicas on it, each with its own data directory (emptyDir), serve the Deployment's probes on their ports, and a token from one verifies with the other's keys", async () => {
    const ns = await namespace();
    ns.secret("signing-key-encryption-key", randomBytes(32).toString("base64"));
    try {
      const config = await loadConfigFile(ns.configFile(configMapYaml()), { env: {} });
      expect(config.server.auth.users[0]!.password).toBe("k8s-secret-password");
      expect(config.store).toEqual({ postgres: { url: inject("databaseUrl"), schema: ns.schema } });
      expect(container.livenessProbe.httpGet.path).toBe("/livez");
      expect(container.readinessProbe.httpGet.path).toBe("/readyz");
      expect(container.startupProbe.tcpSocket.port).toBe("gateway");
      expect(config.server.port).toBe(portOf("http"));
      const gatewayConfig = config.embeddedGateway as { listen: { port: number } };
      expect(gatewayConfig.listen.port).toBe(portOf("gateway"));
      const logs: string[] = [];
      const replicas = [];
      for (let i = 0; i < (kind("Deployment").spec.replicas as number); i++)
        replicas.push(await ns.pod(`pod-${i}`, configMapYaml(), logs));
      expect(replicas).toHaveLength(2);
      for (const running of replicas) {
        for (const probe of [container.livenessProbe, container.readinessProbe]) {
          expect((await fetch(running.url + probe.httpGet.path)).status).toBe(204);
        }
        const gateway = new URL(running.gatewayUrl!);
        await new Promise<void>((resolve, reject) => {
          const socket = connect(Number(gateway.port), gateway.hostname, () => {
            socket.end();
            resolve();
          });
          socket.once("error", reject);
        });
      }
      const [a, b] = replicas as [RunningServer, RunningServer];
      const c = await client(a);
      expect(await verifiesOn(b, await tokenFrom(a, c))).toBe(c.clientId);
      expect(await verifiesOn(a, await tokenFrom(b, c))).toBe(c.clientId);
      expect(logs.join("\n")).not.toContain("encryptionKey");
      expect(existsSync(join(ns.dir, "pod-0", "oauth-signing.kek"))).toBe(false);
    } finally {
      await ns.close();
      rmSync(ns.dir, { recursive: true, force: true });
    }
  });

  it("without the Secret's signing-key-encryption-key: check-config and serve warn, the second pod exits saying what to do, and docs/deploy.md's ways out (the running pod's key in the Secret; a lost key's signing keys deleted) start it", async () => {
    const ns = await namespace();
    const withoutKey = configMapYaml((y) => y.replace(/^ +oauth:\n +signing:.*\n +encryptionKey: .*\n/m, ""));
    expect(withoutKey).not.toContain("encryptionKey");
    try {
      // check-config, as a process: valid, with the warning docs/deploy.md quotes
      const checked = await runCredhook(["check-config"], ns.configFile(withoutKey), {
        ...process.env,
        CREDHOOK_FROM_SOURCE: "1",
      });
      expect(checked.code, checked.stderr).toBe(0);
      const warning = /\nwarnings:\n {2}- (.*)\n\nconfiguration is valid\n$/.exec(checked.stdout)?.[1];
      expect(warning, checked.stdout).toMatch(/^embeddedGateway\.oauth\.signing\.encryptionKey is not set/);
      expect(deployDoc).toContain(warning);

      // the first pod starts (and says the same at warn); the second, with its own data directory, cannot decrypt what it stored
      const logs: string[] = [];
      const a = await ns.pod("pod-0", withoutKey, logs);
      expect(logs.map((l) => JSON.parse(l) as { level: string; msg: string })).toContainEqual(
        expect.objectContaining({ level: "warn", msg: warning }),
      );
      const [{ kid }] = (
        (await (await fetch(`${a.gatewayUrl}/.well-known/jwks.json`)).json()) as { keys: [{ kid: string }] }
      ).keys;
      const refused = async (yaml: string) => {
        const err = (await ns.pod("pod-1", yaml).then(
          () => expect.unreachable("pod-1 started"),
          (e: unknown) => e,
        )) as { code: string; messages: string[] };
        expect(err.code).toBe("CONFIG_INVALID");
        expect(err.messages).toHaveLength(1);
        return err.messages[0]!.replace(kid, "<kid>").replace(join(ns.dir, "pod-1"), "/var/lib/credhook");
      };
      const generated = await refused(withoutKey);
      expect(generated).toMatch(
        /^signing key <kid> in the store cannot be decrypted with \/var\/lib\/credhook\/oauth-signing\.kek/,
      );
      expect(deployDoc).toContain(generated);

      // a new key in the Secret stops it too; the running pod's generated key (docs/deploy.md's kubectl exec … cat) starts it
      ns.secret("signing-key-encryption-key", randomBytes(32).toString("base64"));
      const configured = await refused(configMapYaml());
      expect(configured).toMatch(/^embeddedGateway\.oauth\.signing\.encryptionKey does not decrypt signing key <kid>/);
      expect(deployDoc).toContain(configured);
      ns.secret("signing-key-encryption-key", readFileSync(join(ns.dir, "pod-0", "oauth-signing.kek"), "utf8").trim());
      const b = await ns.pod("pod-1", configMapYaml());
      const c = await client(b);
      expect(await verifiesOn(b, await tokenFrom(a, c))).toBe(c.clientId);
      expect(await verifiesOn(a, await tokenFrom(b, c))).toBe(c.clientId);

      // every pod gone with its emptyDir, the key lost: docs/deploy.md's DELETE lets a new key start
      await ns.close();
      const sql = /```sql\n(DELETE FROM credhook\.provider_state [^\n]*)\n```/.exec(
        readFileSync(repo("docs/deploy.md"), "utf8"),
      )?.[1];
      expect(sql).toBeDefined();
      const pool = new pg.Pool({ connectionString: inject("databaseUrl"), max: 1 });
      try {
        expect((await pool.query(sql!.replace("credhook.", `${ns.schema}.`))).rowCount).toBeGreaterThan(0);
      } finally {
        await pool.end();
      }
      ns.secret("signing-key-encryption-key", randomBytes(32).toString("base64"));
      const fresh = await ns.pod("pod-2", configMapYaml());
      expect(await verifiesOn(fresh, await tokenFrom(fresh, c))).toBe(c.clientId);
    } finally {
      await ns.close();
      rmSync(ns.dir, { recursive: true, force: true });
    }
  });

  it("runs non-root on a read-only root filesystem, rolls without losing capacity, the Secret readable by its group", () => {
    const deployment = kind("Deployment");
    expect(deployment.spec.strategy).toEqual({
      type: "RollingUpdate",
      rollingUpdate: { maxUnavailable: 0, maxSurge: 1 },
    });
    const pod = deployment.spec.template.spec;
    expect(pod.securityContext).toMatchObject({ runAsNonRoot: true, runAsUser: 1000, fsGroup: 1000 });
    expect(pod.containers[0].securityContext).toMatchObject({
      readOnlyRootFilesystem: true,
      allowPrivilegeEscalation: false,
    });
    expect(pod.volumes.find((v: any) => v.secret).secret.defaultMode & 0o040).toBe(0o040);
    expect(pod.containers[0].volumeMounts.map((m: any) => m.mountPath).sort()).toEqual([
      "/etc/credhook",
      "/run/secrets/credhook",
      "/tmp",
      "/var/lib/credhook",
    ]);
    expect(kind("PodDisruptionBudget").spec.minAvailable).toBe(1);
  });
});

describe("Dockerfile", () => {
  const dockerfile = readFileSync(repo("Dockerfile"), "utf8");
  it("builds its payload with scripts/pack.mjs, runs as the unprivileged node user, and checks /livez", () => {
    expect(dockerfile).toMatch(/^FROM \$\{BASE_IMAGE\} AS build$/m);
    expect(dockerfile).toContain("node scripts/pack.mjs pack /packs");
    expect(dockerfile).toContain("node scripts/pack.mjs install /packs /opt/credhook");
    expect(dockerfile).toMatch(/^USER node$/m);
    expect(dockerfile).toMatch(/HEALTHCHECK [^\n]*\\\n[^\n]*\/livez/);
    expect(dockerfile).toContain('ENTRYPOINT ["/opt/credhook/node_modules/.bin/credhook"]');
  });

  it("pins its base by digest and the repository's pnpm, and labels the image (OCI)", () => {
    expect(dockerfile).toMatch(/^ARG BASE_IMAGE=node:\d+-bookworm-slim@sha256:[0-9a-f]{64}$/m);
    expect(dockerfile.match(/^FROM .*/gm)).toEqual(["FROM ${BASE_IMAGE} AS build", "FROM ${BASE_IMAGE}"]);
    const pnpm = (JSON.parse(readFileSync(repo("package.json"), "utf8")) as { packageManager: string }).packageManager;
    expect(dockerfile).toContain(`npm install --global --no-audit --no-fund ${pnpm}`);
    expect(dockerfile).not.toMatch(/pnpm@10\s/);
    const version = (JSON.parse(readFileSync(repo("packages/server/package.json"), "utf8")) as { version: string })
      .version;
    expect(dockerfile).toContain(`ARG VERSION=${version}`);
    for (const label of ["title", "description", "version", "licenses", "base.name"])
      expect(dockerfile).toContain(`org.opencontainers.image.${label}=`);
  });

  it("installs the dependencies from the manifests of every package before it copies the sources (a cached layer)", () => {
    const lines = dockerfile.split("\n");
    const install = lines.findIndex((l) => l.startsWith("RUN pnpm install --frozen-lockfile"));
    const sources = lines.indexOf("COPY . .");
    expect(install).toBeGreaterThan(0);
    expect(sources).toBeGreaterThan(install);
    const copied = lines
      .slice(0, install)
      .filter((l) => l.startsWith("COPY "))
      .flatMap((l) => l.slice(5).split(/\s+/).slice(0, -1));
    const manifests = readdirSync(repo("packages")).map((p) => `packages/${p}/package.json`);
    expect(copied.sort()).toEqual(
      ["package.json", "pnpm-lock.yaml", "pnpm-workspace.yaml", ".npmrc", ".pnpmfile.cjs", ...manifests].sort(),
    );
  });

  it("the ignore files leave out what the README's steps leave behind (packs/, lambda/, the Lambda zip)", () => {
    const gitignore = readFileSync(repo(".gitignore"), "utf8").split("\n");
    const dockerignore = readFileSync(repo(".dockerignore"), "utf8").split("\n");
    for (const left of ["packs", "lambda", "credhook-lambda.zip"]) {
      expect(
        gitignore.some((l) => l.replace(/^\/|\/$/g, "") === left),
        `.gitignore ${left}`,
      ).toBe(true);
      expect(dockerignore, `.dockerignore ${left}`).toContain(left);
    }
    const deployDoc = readFileSync(repo("docs/deploy.md"), "utf8");
    expect(deployDoc).toContain("node scripts/pack.mjs pack ./packs");
    expect(deployDoc).toContain("lambda:bundle");
  });
});
