/**
 * A loopback JSON-RPC proxy in front of the chain. Everything that talks to the chain in a fault
 * scenario (the server, the facilitator, the CLI) talks to this address, so the chain behind it can
 * be killed and restarted on another port, and chosen calls can fail:
 *
 *   eth_sendRawTransaction: `swallow` (answer the hash, never forward: the transaction is lost as from
 *   a mempool), `hangup` (close the connection, not forwarded), `error` (a JSON-RPC error, not
 *   forwarded), `landed_error` (forwarded, then answered with an error: it is on the chain but the
 *   sender is told otherwise), `delay` (forwarded late).
 *   eth_getTransactionReceipt: `null` (not mined yet), `hangup`, `error`, `delay`.
 *
 * Choices come from the scenario's seeded generator, so a failing run can be replayed with its seed.
 * While the chain is down the proxy closes every connection, as a dead node's address would.
 */
import { createServer, type IncomingMessage, type Server, type ServerResponse } from "node:http";
import type { AddressInfo } from "node:net";
import { keccak256, type Hex } from "viem";
import type { Rng } from "./rng.ts";

export type SendFault = "swallow" | "hangup" | "error" | "landed_error" | "delay";
export type ReceiptFault = "null" | "hangup" | "error" | "delay";
export type FaultPlan = {
  /** Probability (0..1) that one eth_sendRawTransaction call is faulted, and the kinds to pick from. */
  send?: { p: number; kinds: SendFault[] };
  receipt?: { p: number; kinds: ReceiptFault[] };
  delayMs?: number;
};

type RpcRequest = { jsonrpc: "2.0"; id: unknown; method: string; params?: unknown[] };
type RpcAnswer = { jsonrpc: "2.0"; id: unknown; result?: unknown; error?: { code: number; message: string } };

export type RpcProxy = {
  url: string;
  setUpstream(url: string | undefined): void;
  setFaults(plan: FaultPlan | undefined): void;
  /** How many calls of each fault kind were injected, e.g. { "eth_sendRawTransaction:swallow": 3 }. */
  injected(): Record<string, number>;
  /** Raw transactions that were swallowed (never reached the chain). */
  swallowed(): Hex[];
  stop(): Promise<void>;
};

class HangUp extends Error {}

/** An upstream call that took this long (or failed) is reported to `onSlow`: what the server's RPC timeouts met. */
const SLOW_UPSTREAM_MS = 2_000;

export async function startRpcProxy(rng: Rng, upstream?: string, o: { onSlow?: (line: string) => void } = {}): Promise<RpcProxy> {
  let target = upstream;
  let plan: FaultPlan | undefined;
  const counts: Record<string, number> = {};
  const lost: Hex[] = [];
  const count = (k: string) => (counts[k] = (counts[k] ?? 0) + 1);
  const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

  async function forward(body: RpcRequest): Promise<RpcAnswer> {
    if (!target) throw new HangUp("chain is down");
    const started = performance.now();
    const slow = (what: string) => {
      const ms = performance.now() - started;
      if (ms >= SLOW_UPSTREAM_MS || what !== "answered") o.onSlow?.(`proxy: ${body.method} ${what} after ${ms.toFixed(0)} ms`);
    };
    let res: Response;
    try {
      res = await fetch(target, { method: "POST", headers: { "content-type": "application/json" }, body: JSON.stringify(body), signal: AbortSignal.timeout(15_000) });
    } catch (e) {
      slow(`failed (${(e as Error).name})`);
      throw new HangUp("upstream unreachable");
    }
    const text = await res.text().catch(() => "");
    slow("answered");
    try {
      return JSON.parse(text) as RpcAnswer;
    } catch {
      throw new HangUp(`upstream answered ${res.status} without JSON`);
    }
  }

  async function handle(req: RpcRequest): Promise<RpcAnswer> {
    const error = (message: string): RpcAnswer => ({ jsonrpc: "2.0", id: req.id, error: { code: -32000, message } });
    if (req.method === "eth_sendRawTransaction" && plan?.send && rng.chance(plan.send.p)) {
      const kind = rng.pick(plan.send.kinds);
      count(`${req.method}:${kind}`);
      const raw = (req.params?.[0] ?? "0x") as Hex;
      if (kind === "swallow") {
        lost.push(raw);
        return { jsonrpc: "2.0", id: req.id, result: keccak256(raw) };
      }
      if (kind === "hangup") throw new HangUp("injected");
      if (kind === "error") return error("injected: upstream temporarily unavailable");
      if (kind === "landed_error") {
        await forward(req);
        return error("injected: connection reset after the transaction was sent");
      }
      await sleep(plan.delayMs ?? 1_500);
      return forward(req);
    }
    if (req.method === "eth_getTransactionReceipt" && plan?.receipt && rng.chance(plan.receipt.p)) {
      const kind = rng.pick(plan.receipt.kinds);
      count(`${req.method}:${kind}`);
      if (kind === "null") return { jsonrpc: "2.0", id: req.id, result: null };
      if (kind === "hangup") throw new HangUp("injected");
      if (kind === "error") return error("injected: header not found");
      await sleep(plan.delayMs ?? 1_500);
      return forward(req);
    }
    return forward(req);
  }

  const server: Server = createServer((req: IncomingMessage, res: ServerResponse) => {
    const chunks: Buffer[] = [];
    req.on("data", (c: Buffer) => chunks.push(c));
    req.on("end", () => {
      void (async () => {
        let parsed: RpcRequest | RpcRequest[];
        try {
          parsed = JSON.parse(Buffer.concat(chunks).toString("utf8")) as RpcRequest | RpcRequest[];
        } catch {
          res.writeHead(400).end();
          return;
        }
        try {
          // Elements of a batch one by one, so a fault hits one call, not its neighbours.
          const answer = Array.isArray(parsed) ? await Promise.all(parsed.map(handle)) : await handle(parsed);
          const text = JSON.stringify(answer);
          res.writeHead(200, { "content-type": "application/json", "content-length": Buffer.byteLength(text) }).end(text);
        } catch {
          res.socket?.destroy();
        }
      })();
    });
  });
  await new Promise<void>((r) => server.listen(0, "127.0.0.1", () => r()));
  const { port } = server.address() as AddressInfo;
  return {
    url: `http://127.0.0.1:${port}`,
    setUpstream: (u) => (target = u),
    setFaults: (p) => (plan = p),
    injected: () => ({ ...counts }),
    swallowed: () => [...lost],
    async stop() {
      server.closeAllConnections();
      await new Promise<void>((r) => server.close(() => r()));
    },
  };
}
