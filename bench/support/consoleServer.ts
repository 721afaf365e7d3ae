/**
 * The real app over a bench's database, listening on a loopback port, with a console session of a new
 * read token of the project (`token`, for the API beside it): what the console's benches (console.ts, export.ts)
 * measure against.
 */
import { createApp } from "../../packages/server/src/http/app.ts";
import { createMetrics } from "../../packages/server/src/http/metrics.ts";
import { createToken } from "../../packages/server/src/services/tokens.ts";
import type { BenchContext } from "./benchContext.ts";

export async function startConsoleServer(bench: BenchContext, projectId: string): Promise<{ base: string; cookie: string; token: string; close(): Promise<void> }> {
  const { token } = await createToken(bench.ctx, { projectId, permissions: ["read"], mode: "test" });
  const app = createApp(bench.ctx, { metrics: createMetrics({ defaultMetrics: false }) });
  const base = await app.listen({ port: 0, host: "127.0.0.1" });
  const signIn = await fetch(`${base}/console/signin`, { method: "POST", body: new URLSearchParams({ kind: "token", secret: token }), redirect: "manual" });
  const cookie = /aw_console=([^;]+)/.exec(signIn.headers.get("set-cookie") ?? "")?.[1];
  if (!cookie) {
    await app.close();
    throw new Error(`sign-in failed: ${signIn.status}`);
  }
  return { base, cookie, token, close: () => app.close() };
}
