/**
 * One read of the operator's Bridge customer (`GET /v0/customers/{id}`): whether the API key is accepted
 * and names that customer. For `agentwallet doctor`; never logs the key.
 */
import type { BridgeSettings } from "../../config.ts";

export type BridgeCustomerRead = { ok: true; status: string | undefined } | { ok: false; httpStatus: number | undefined; detail: string };

export async function readBridgeCustomer(s: Pick<BridgeSettings, "apiKey" | "customerId" | "baseUrl" | "timeoutMs">): Promise<BridgeCustomerRead> {
  const url = `${s.baseUrl.replace(/\/+$/, "")}/v0/customers/${encodeURIComponent(s.customerId)}`;
  let res: Response;
  try {
    res = await fetch(url, { headers: { "api-key": s.apiKey, accept: "application/json" }, redirect: "manual", signal: AbortSignal.timeout(s.timeoutMs) });
  } catch (err) {
    return { ok: false, httpStatus: undefined, detail: (err as Error).name === "TimeoutError" ? `no answer within ${s.timeoutMs} ms` : `connection failed (${(err as Error).message})` };
  }
  const body = (await res.json().catch(() => undefined)) as { status?: unknown; message?: unknown } | undefined;
  if (res.ok) return { ok: true, status: typeof body?.status === "string" ? body.status : undefined };
  return { ok: false, httpStatus: res.status, detail: typeof body?.message === "string" ? body.message.slice(0, 200) : `HTTP ${res.status}` };
}
