// A paid target's reply that echoes one of our tokens (one it learned elsewhere) is returned and stored with the
// token cut out: the paid retry's answer, as the free one (badInput.e2e.test.ts), never keeps a token.
import { afterAll, beforeAll, expect, test } from "vitest";
import { type HandBuiltTarget, startHandBuiltTarget, v2PaymentRequired } from "./support/handBuiltTarget.ts";
import { type X402World, randomAddress, startX402World } from "./support/x402World.ts";
import { paymentRows } from "../../src/ledger/testing.ts";

let w: X402World;
let target: HandBuiltTarget;
let leaked = "";

beforeAll(async () => {
  w = await startX402World({ fundMicros: 5_000_000n });
  leaked = await w.server.createToken(["read"]);
  const usdc = w.usdc;
  target = await startHandBuiltTarget((req) =>
    req.paymentHeader
      ? { status: 200, headers: { "content-type": "application/json", "x-echo": `key=${leaked}` }, body: JSON.stringify({ data: "paid content", echo: leaked }) }
      : v2PaymentRequired([{ scheme: "exact", network: "eip155:8453", amount: "10000", asset: usdc, payTo: randomAddress(), maxTimeoutSeconds: 60, extra: { name: "USD Coin", version: "2" } }]),
  );
});
afterAll(async () => {
  await target?.close();
  await w?.stop();
});

test("behavior: the paid reply is returned and stored without the token it echoed", async () => {
  const answer = await w.post("/v1/pay", { recipient: `${target.url}/paid`, max_amount_usdc: 10_000 });
  expect(answer.status).toBe(200);
  const text = JSON.stringify(answer.body);
  expect(text).toContain("paid content");
  expect(text).toContain("[redacted token]");
  expect(text).not.toContain(leaked.slice(8));
  const rows = JSON.stringify((await paymentRows(w.ctx.ledger)).map((p) => ({ response_json: p.response_json })));
  expect(rows).toContain("paid content");
  expect(rows).not.toContain(leaked.slice(8));
  expect(rows).not.toMatch(/aw_(test|live)_/);
});
