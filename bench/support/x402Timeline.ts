/**
 * Where a paid call's time goes, seen from the servers of the x402 bench (diagnostic): Node's HTTP server
 * diagnostics channels report when the merchant (and the service) received each request and finished each answer,
 * on the servers' thread, without touching either; the callers' thread reports when each call started and ended
 * (absolute times, so the two threads' clocks compare). A direct payment and a payment through the service then
 * split into the same steps, and the difference of their means per step sums to the difference of their mean times:
 *   to the target     from the caller's first byte to the merchant receiving the unpaid request (the service: the
 *                     caller's hop to it, then its work before asking: authentication, parsing, the key's claim)
 *   the 402           the merchant's unpaid answer
 *   402 → paid retry  the payer's work between the 402 and the paid retry reaching the merchant: reading the 402,
 *                     judging, signing (the service also holds the money, durably, before the retry leaves)
 *   the paid request  the merchant's paid answer (its facilitator's verify and settle)
 *   back              from the merchant's paid answer to the caller's last byte (the service: its work after the
 *                     reply, then the hop back to the caller)
 */
import diagnostics from "node:diagnostics_channel";
import type { IncomingMessage, Server } from "node:http";
import { percentile } from "../lib.ts";

/** A call as the callers' thread timed it: absolute milliseconds (`performance.timeOrigin + performance.now()`). */
export type CallSpan = { startedAt: number; endedAt: number };

type Seen = { port: number; paid: boolean; at: number; end: "start" | "finish" };

const STEPS = ["to the target", "the 402", "402 → paid retry", "the paid request", "back"] as const;
/** The service's steps beside them: the caller's hop out and back, its work before asking and after the reply. */
const SERVICE_STEPS = ["hop to the service", "service before asking", "service after the reply", "hop back to the caller"] as const;
type Step = (typeof STEPS)[number] | (typeof SERVICE_STEPS)[number];

const now = () => performance.timeOrigin + performance.now();

/** A request that carries a payment: x402's header (v2 or v1) or MPP's credential. */
function isPaid(req: IncomingMessage): boolean {
  const h = req.headers;
  return h["payment-signature"] !== undefined || h["x-payment"] !== undefined || /^payment /i.test(String(h.authorization ?? ""));
}

/**
 * Records the merchant's and the service's requests while a call runs (`during`) and splits each call into the steps
 * above; `table` gives each step's mean and p50 per side. Calls whose requests do not line up (none expected) are
 * left out and counted.
 */
export function createTimeline(o: { merchantPort: number; servicePort: number }) {
  let seen: Seen[] | undefined;
  const onStart = (m: unknown) => record(m, "start");
  const onFinish = (m: unknown) => record(m, "finish");
  function record(message: unknown, end: Seen["end"]): void {
    if (!seen) return;
    const { request, server } = message as { request: IncomingMessage; server: Server };
    const address = server.address();
    const port = typeof address === "object" && address ? address.port : 0;
    if (port !== o.merchantPort && port !== o.servicePort) return;
    seen.push({ port, paid: isPaid(request), at: now(), end });
  }
  diagnostics.subscribe("http.server.request.start", onStart);
  diagnostics.subscribe("http.server.response.finish", onFinish);
  const steps = { direct: new Map<Step, number[]>(), service: new Map<Step, number[]>() };
  let unmatched = 0;

  function split(side: "direct" | "service", call: CallSpan, events: Seen[]): void {
    const at = (port: number, paid: boolean, end: Seen["end"]) => events.find((e) => e.port === port && e.paid === paid && e.end === end)?.at;
    const unpaid = [at(o.merchantPort, false, "start"), at(o.merchantPort, false, "finish")];
    const paid = [at(o.merchantPort, true, "start"), at(o.merchantPort, true, "finish")];
    const service = [at(o.servicePort, false, "start"), at(o.servicePort, false, "finish")];
    const times = [...unpaid, ...paid, ...(side === "service" ? service : [])];
    if (times.some((t) => t === undefined)) return void unmatched++;
    const [u0, u1, p0, p1] = times as number[];
    const add = (step: Step, ms: number) => (steps[side].get(step) ?? steps[side].set(step, []).get(step)!).push(ms);
    add("to the target", u0! - call.startedAt);
    add("the 402", u1! - u0!);
    add("402 → paid retry", p0! - u1!);
    add("the paid request", p1! - p0!);
    add("back", call.endedAt - p1!);
    if (side === "service") {
      const [s0, s1] = service as number[];
      add("hop to the service", s0! - call.startedAt);
      add("service before asking", u0! - s0!);
      add("service after the reply", s1! - p1!);
      add("hop back to the caller", call.endedAt - s1!);
    }
  }

  return {
    /** Runs one call of `side`, recording its requests; the call answers its span. */
    async during<T extends CallSpan>(side: "direct" | "service", call: () => Promise<T>): Promise<T> {
      seen = [];
      try {
        const span = await call();
        split(side, span, seen);
        return span;
      } finally {
        seen = undefined;
      }
    },
    /** Forgets what the warm-up recorded. */
    reset(): void {
      steps.direct.clear();
      steps.service.clear();
      unmatched = 0;
    },
    /** Each step's mean and p50 per side, in ms, in the order above; the service's own steps after. */
    table(): { step: Step; direct?: { mean: number; p50: number }; service: { mean: number; p50: number } }[] {
      const stat = (v: number[] | undefined) => {
        if (!v || v.length === 0) return undefined;
        const sorted = [...v].sort((a, b) => a - b);
        return { mean: v.reduce((s, x) => s + x, 0) / v.length, p50: percentile(sorted, 0.5) };
      };
      return [...STEPS, ...SERVICE_STEPS].flatMap((step) => {
        const service = stat(steps.service.get(step));
        return service ? [{ step, direct: stat(steps.direct.get(step)), service }] : [];
      });
    },
    get unmatched() {
      return unmatched;
    },
    close(): void {
      diagnostics.unsubscribe("http.server.request.start", onStart);
      diagnostics.unsubscribe("http.server.response.finish", onFinish);
    },
  };
}
