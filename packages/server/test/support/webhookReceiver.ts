/**
 * A webhook receiver on loopback for tests: records every request (raw body and headers) and answers
 * with the status `answer` picks for it (by how many times its `webhook-id` came before), or holds it
 * open when `answer` says "hang"; with `delayMs`, every answer comes that long after the request. Counts the
 * requests open at once (`maxOpen`). Verifies Standard Webhooks signatures with the `standardwebhooks`
 * package as at the time each was sent.
 */
import { type IncomingMessage, createServer } from "node:http";
import type { AddressInfo } from "node:net";
import { Webhook } from "standardwebhooks";
import { vi } from "vitest";

export type Received = { id: string; timestamp: number; signature: string; body: string; type: string; data: any; answered: number | "hang" };

export async function startReceiver(answer: (id: string, seen: number) => number | "hang" = () => 200, opts: { delayMs?: number } = {}) {
  const received: Received[] = [];
  let open = 0;
  let maxOpen = 0;
  const seen = new Map<string, number>();
  const hung: IncomingMessage[] = [];
  const server = createServer((req, res) => {
    open++;
    maxOpen = Math.max(maxOpen, open);
    res.on("close", () => open--);
    const chunks: Buffer[] = [];
    req.on("data", (c) => chunks.push(c));
    req.on("end", () => {
      const body = Buffer.concat(chunks).toString("utf8");
      const id = String(req.headers["webhook-id"]);
      const n = seen.get(id) ?? 0;
      seen.set(id, n + 1);
      const parsed = JSON.parse(body);
      const status = answer(id, n);
      received.push({ id, timestamp: Number(req.headers["webhook-timestamp"]), signature: String(req.headers["webhook-signature"]), body, type: parsed.type, data: parsed.data, answered: status });
      if (status === "hang") return void hung.push(req);
      const reply = () => res.writeHead(status, { "content-type": "text/plain" }).end(status < 300 ? "ok" : "not now");
      if (opts.delayMs) setTimeout(reply, opts.delayMs);
      else reply();
    });
  });
  await new Promise<void>((r) => server.listen(0, "127.0.0.1", r));
  const url = `http://127.0.0.1:${(server.address() as AddressInfo).port}/hooks`;
  return {
    url,
    received,
    /** The most requests that were open at once. */
    maxOpen: () => maxOpen,
    /** Ids answered 2xx at least once. */
    delivered: () => new Set(received.filter((r) => r.answered !== "hang" && r.answered < 300).map((r) => r.id)),
    /** Throws unless every request verifies with `secret` at the time it was sent. */
    verifyAll(secret: string) {
      const wh = new Webhook(secret.slice("whsec_".length));
      vi.useFakeTimers({ toFake: ["Date"] });
      try {
        for (const r of received) {
          vi.setSystemTime(r.timestamp * 1000);
          wh.verify(r.body, { "webhook-id": r.id, "webhook-timestamp": String(r.timestamp), "webhook-signature": r.signature });
        }
      } finally {
        vi.useRealTimers();
      }
    },
    close: () =>
      new Promise<void>((r) => {
        server.closeAllConnections();
        server.close(() => r());
      }),
  };
}
