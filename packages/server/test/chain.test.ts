/** chain(): several express middlewares as one router layer, with express 5's rules for next(), throws and rejections. */
import type { Server } from "node:http";
import type { AddressInfo } from "node:net";
import express, { type NextFunction, type Request, type Response } from "express";
import { afterEach, expect, it } from "vitest";
import { chain } from "../src/routes.js";

let server: Server | undefined;
afterEach(() => new Promise<void>((r) => (server ? server.close(() => r()) : r())));

/** An app with `mw` mounted, a route that answers what ran, and an error handler that answers the error's message. */
async function serve(mw: express.RequestHandler): Promise<string> {
  const app = express();
  app.use(mw);
  app.get("/x", (_req: Request, res: Response) => void res.json({ ran: res.locals.ran }));
  app.use(
    (err: Error, _req: Request, res: Response, _next: NextFunction) =>
      void res.status(500).json({ error: err.message, ran: res.locals.ran }),
  );
  server = app.listen(0, "127.0.0.1");
  await new Promise((r) => server!.once("listening", r));
  return `http://127.0.0.1:${(server!.address() as AddressInfo).port}/x`;
}
const mark = (name: string) => (_req: Request, res: Response, next: NextFunction) => {
  res.locals.ran = [...((res.locals.ran as string[] | undefined) ?? []), name];
  next();
};

it("runs the handlers in order, then the next layer", async () => {
  const res = await fetch(await serve(chain(mark("a"), mark("b"), mark("c"))));
  expect(await res.json()).toEqual({ ran: ["a", "b", "c"] });
});

it("a handler that answers ends the request: neither the later handlers nor the next layer run", async () => {
  const answers = (_req: Request, res: Response) =>
    void res.status(401).json({ ran: [...(res.locals.ran as string[]), "answered"] });
  const res = await fetch(await serve(chain(mark("a"), answers, mark("never"))));
  expect(res.status).toBe(401);
  expect(await res.json()).toEqual({ ran: ["a", "answered"] });
});

it("next(err), a thrown error and a rejected promise each skip to the error handlers", async () => {
  const cases = [
    (_req: Request, _res: Response, next: NextFunction) => next(new Error("passed")),
    () => {
      throw new Error("thrown");
    },
    async () => {
      await Promise.resolve();
      throw new Error("rejected");
    },
  ];
  for (const [i, failing] of cases.entries()) {
    const url = await serve(chain(mark("a"), failing as express.RequestHandler, mark("never")));
    const res = await fetch(url);
    expect(res.status).toBe(500);
    const body = (await res.json()) as { error: string; ran: string[] };
    expect(body.error).toBe(["passed", "thrown", "rejected"][i]);
    expect(body.ran).toEqual(["a"]);
    await new Promise<void>((r) => server!.close(() => r()));
    server = undefined;
  }
});
