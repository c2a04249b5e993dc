/**
 * Several express middlewares run as one: each handler of a webhook request
 * passes through express's router once per mounted layer (a path match, a
 * `next` closure, parameter processing), which cost more than most of
 * credhook's own middlewares do. Measured with `pnpm bench`: see the README's
 * "Benchmark".
 */
import type { NextFunction, Request, RequestHandler, Response } from "express";

/**
 * One middleware that runs `handlers` in order, as `app.use(h1, h2, …)` would:
 * a handler calls `next()` to pass on, `next(err)` to skip to the error
 * handlers (as do a thrown error and a rejected promise, express 5's rule),
 * or answers and calls nothing. After the last handler the outer `next()` runs.
 * express's `next("route")` and `next("router")` are passed on as they are.
 */
export function chain(...handlers: RequestHandler[]): RequestHandler {
  return (req: Request, res: Response, next: NextFunction) => {
    let i = 0;
    const step = (err?: unknown): void => {
      if (err !== undefined && err !== null) return next(err);
      const handler = handlers[i++];
      if (!handler) return next();
      try {
        const ret = handler(req, res, step) as unknown;
        if (ret instanceof Promise)
          ret.catch((e: unknown) => next(e ?? new Error("a middleware's promise was rejected without a reason")));
      } catch (e) {
        next(e);
      }
    };
    step();
  };
}
