/**
 * A hand-built HTTP target on loopback for the cases no honest merchant produces: malicious or broken
 * 402 answers, and merchants that take the signature and then misbehave. Never used where a real
 * merchant (@x402/express, x402-express) can play the part.
 */
import { type IncomingMessage, type ServerResponse, createServer } from "node:http";

export type Reply = { status: number; headers?: Record<string, string>; body?: string };

export type TargetRequest = { method: string; path: string; headers: IncomingMessage["headers"]; body: string; paymentHeader: string | undefined };

export type HandBuiltTarget = {
  url: string;
  /** Every request seen, in order. */
  requests: TargetRequest[];
  /** Requests that carried a payment header (X-PAYMENT or PAYMENT-SIGNATURE). */
  paidRequests(): TargetRequest[];
  close(): Promise<void>;
};

/** `handle` answers each request; it may delay, or return undefined to drop the connection. */
export async function startHandBuiltTarget(handle: (req: TargetRequest, res: ServerResponse) => Promise<Reply | undefined> | Reply | undefined): Promise<HandBuiltTarget> {
  const requests: TargetRequest[] = [];
  const server = createServer((req, res) => {
    const chunks: Buffer[] = [];
    req.on("data", (c: Buffer) => chunks.push(c));
    req.on("end", async () => {
      const paymentHeader = (req.headers["payment-signature"] ?? req.headers["x-payment"]) as string | undefined;
      const seen: TargetRequest = { method: req.method ?? "", path: req.url ?? "", headers: req.headers, body: Buffer.concat(chunks).toString("utf8"), paymentHeader };
      requests.push(seen);
      try {
        const reply = await handle(seen, res);
        if (res.headersSent || res.writableEnded) return;
        if (!reply) return void res.destroy();
        res.writeHead(reply.status, reply.headers ?? {});
        res.end(reply.body ?? "");
      } catch (err) {
        if (!res.headersSent) res.writeHead(599);
        res.end(String(err));
      }
    });
  });
  await new Promise<void>((r) => server.listen(0, "127.0.0.1", r));
  const port = (server.address() as { port: number }).port;
  return {
    url: `http://127.0.0.1:${port}`,
    requests,
    paidRequests: () => requests.filter((r) => r.paymentHeader !== undefined),
    close: () =>
      new Promise<void>((r) => {
        server.closeAllConnections();
        server.close(() => r());
      }),
  };
}

/** A v2 402 answer: the requirements in the base64 JSON PAYMENT-REQUIRED header, body `{}`. */
export function v2PaymentRequired(accepts: unknown[], resourceUrl = "http://merchant.test/paid"): Reply {
  const required = { x402Version: 2, error: "Payment required", resource: { url: resourceUrl, description: "test", mimeType: "application/json" }, accepts };
  return { status: 402, headers: { "content-type": "application/json", "payment-required": Buffer.from(JSON.stringify(required)).toString("base64") }, body: "{}" };
}

/** A v1 402 answer: the requirements in the JSON body. */
export function v1PaymentRequired(accepts: unknown[]): Reply {
  return { status: 402, headers: { "content-type": "application/json" }, body: JSON.stringify({ x402Version: 1, error: "X-PAYMENT header is required", accepts }) };
}

/** The decoded payment header of a paid request (x402's own encoding: base64 JSON). */
export function decodePaymentHeader(value: string): Record<string, unknown> {
  return JSON.parse(Buffer.from(value, "base64").toString("utf8")) as Record<string, unknown>;
}
