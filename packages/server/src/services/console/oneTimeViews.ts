/**
 * One-time views: what a form created (a new token, an endpoint's signing secret) kept for the page its
 * redirect leads to (post, redirect, get), shown once to the session that created it, never stored in the
 * clear (decisions.md, "One-time views").
 */
import { createHmac, randomBytes } from "node:crypto";
import type { OneTimeViewKind, Session } from "@agentwallet/console";
import type { ServiceDeps } from "../serviceDeps.ts";
import { openSecret, sealSecret } from "../webhooks/secrets.ts";
import type { ConsoleDeps } from "./viewers.ts";

/**
 * A one-time view waits this long for its page: the browser follows the form's redirect at once; an unopened
 * view is of no use later and is pruned.
 */
export const ONE_TIME_VIEW_MS = 5 * 60_000;

/**
 * The key views are sealed with, derived from the deployment's (`deploymentKey`, else the one webhook secrets
 * are sealed with), so any process of the deployment opens them; without either (a bare test app), a key of this
 * process's lifetime, so a view is shown only by the process that made it. Derived once, when first needed.
 */
export function oneTimeViewKey(deps: Pick<ServiceDeps, "webhookSecretKey">, deploymentKey?: () => Uint8Array): () => Uint8Array {
  const given = deploymentKey ?? (deps.webhookSecretKey ? () => deps.webhookSecretKey! : undefined);
  let key: Uint8Array | undefined;
  return () => (key ??= given ? createHmac("sha256", given()).update("agentwallet console one-time view v1").digest() : randomBytes(32));
}

/** Keeps `shown` sealed for this session and returns the view's id for the page's address. */
export async function keepOneTimeView(deps: ConsoleDeps, key: () => Uint8Array, session: Session, projectId: string, kind: OneTimeViewKind, shown: Record<string, unknown>): Promise<string> {
  const viewId = randomBytes(24).toString("base64url");
  const sealed = sealSecret(key(), `console-view:${kind}:${projectId}`, JSON.stringify(shown));
  await deps.ledger.consoleSessions.putView({ viewId, sessionId: session.id, projectId, kind, sealed, expiresAt: new Date(deps.clock().getTime() + ONE_TIME_VIEW_MS).toISOString() });
  return viewId;
}

/** What was kept, once, to the session that kept it; null after that, elsewhere, or once expired. */
export async function takeOneTimeView(deps: ConsoleDeps, key: () => Uint8Array, session: Session, projectId: string, kind: OneTimeViewKind, viewId: string): Promise<Record<string, unknown> | null> {
  if (!/^[A-Za-z0-9_-]{1,100}$/.test(viewId)) return null;
  const sealed = await deps.ledger.consoleSessions.takeView({ viewId, sessionId: session.id, projectId, kind }, deps.clock().toISOString());
  return sealed === undefined ? null : (JSON.parse(openSecret(key(), `console-view:${kind}:${projectId}`, sealed)) as Record<string, unknown>);
}
