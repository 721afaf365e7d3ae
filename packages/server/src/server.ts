/**
 * Starts the service: context, app, background loops, and (in sandbox mode) the local chain.
 * The only module that listens on a port.
 */
import type { FastifyInstance } from "fastify";
import type { Logger } from "pino";
import type { Config } from "./config.ts";
import type { AppContext } from "./context.ts";
import { buildContext } from "./deps.ts";
import { createApp } from "./http/app.ts";
import { createMetrics } from "./http/metrics.ts";

export type RunningServer = {
  app: FastifyInstance;
  ctx: AppContext;
  baseUrl: string;
  stop(): Promise<void>;
};

export async function startServer(config: Config, logger: Logger, opts: { defaultMetrics?: boolean } = {}): Promise<RunningServer> {
  const built = await buildContext(config, logger);
  const ctx = built.ctx;
  const app = createApp(ctx, { metrics: createMetrics({ defaultMetrics: opts.defaultMetrics ?? true }) });
  const address = await app.listen({ port: config.port, host: config.host });
  const baseUrl = config.publicBaseUrl ?? address.replace("[::1]", "localhost");
  let stopped = false;
  return {
    app,
    ctx,
    baseUrl,
    async stop() {
      if (stopped) return;
      stopped = true;
      await app.close();
      await built.close();
    },
  };
}
