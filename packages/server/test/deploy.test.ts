// The deployment examples stay true to the code: the Kubernetes example's config
// loads (its secret read from a file), its probes are the server's, and the
// Dockerfile ships the packed install the packed-install test exercises.
// The example's store is PostgreSQL: the tests' real server stands in for it.
import { describe, expect, inject, it } from "vitest";
import { randomBytes } from "node:crypto";
import { mkdtempSync, readdirSync, readFileSync, writeFileSync } from "node:fs";
import { connect } from "node:net";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { parseAllDocuments } from "yaml";
import { createLogger, loadConfigFile, startServer } from "../src/index.js";

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
    expect(created).toEqual(["database-url", "portal-password"]);
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

  it("its ConfigMap's config reads the portal password and the database URL from the mounted Secret; two replicas on it serve the Deployment's probes on their ports", async () => {
    const dir = mkdtempSync(join(tmpdir(), "credhook-k8s-"));
    // the test's PostgreSQL in a schema of its own stands in for the Secret's database URL
    const schema = `k8s_${randomBytes(4).toString("hex")}`;
    writeFileSync(join(dir, "portal-password"), "k8s-secret-password\n");
    writeFileSync(join(dir, "database-url"), `${inject("databaseUrl")}\n`);
    const container = kind("Deployment").spec.template.spec.containers[0];
    const portOf = (name: string) => container.ports.find((p: any) => p.name === name).containerPort as number;
    const yaml = (kind("ConfigMap").data["webhook.config.yaml"] as string)
      .replaceAll("/run/secrets/credhook/", `${dir}/`)
      .replace(/^(\s+)postgres: ("[^"]*")/m, `$1postgres: { url: $2, schema: ${schema} }`)
      .replaceAll("/var/lib/credhook", dir);
    writeFileSync(join(dir, "webhook.config.yaml"), yaml);
    const config = await loadConfigFile(join(dir, "webhook.config.yaml"), { env: {} });
    expect(config.server.auth.users[0]!.password).toBe("k8s-secret-password");
    expect(config.store).toEqual({ postgres: { url: inject("databaseUrl"), schema } });
    expect(container.livenessProbe.httpGet.path).toBe("/livez");
    expect(container.readinessProbe.httpGet.path).toBe("/readyz");
    expect(container.startupProbe.tcpSocket.port).toBe("gateway");
    expect(config.server.port).toBe(portOf("http"));
    const gatewayConfig = config.embeddedGateway as { listen: { port: number } };
    expect(gatewayConfig.listen.port).toBe(portOf("gateway"));
    // two replicas on one machine: each its own free ports
    const replicas = [];
    for (let i = 0; i < (kind("Deployment").spec.replicas as number); i++) {
      replicas.push(
        await startServer(
          {
            ...config,
            embeddedGateway: { ...gatewayConfig, listen: { ...gatewayConfig.listen, port: 0 } },
          } as typeof config,
          { port: 0, host: "127.0.0.1", logger: createLogger("silent") },
        ),
      );
    }
    try {
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
    } finally {
      await Promise.all(replicas.map((r) => r.close()));
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
