/**
 * A live project under concurrent payments, for the files that send hundreds of `POST /v1/pay` at once through
 * real `agentwallet serve` processes on a real chain: `processes` servers sharing one migrated database, a project
 * whose wallet the chain funded with `fundMicros` (credited before the tests start), and a live token (`read` and
 * `pay` unless `token` says otherwise, with its name and spending controls when given). Opened before the tests of
 * the file (or of its `describe` block) and closed after them.
 */
import type { Permission } from "@agentwallet/api";
import { startDevChain, type DevChain } from "@agentwallet/devchain";
import type { Address } from "viem";
import { createHdCustody } from "../../src/chain/custody.ts";
import { newId, systemClock } from "../../src/ids.ts";
import type { Ledger } from "../../src/ledger/store.ts";
import { controlsColumn, parseControlsInput } from "../../src/services/spendingControls.ts";
import { createToken } from "../../src/services/tokens.ts";
import { TEST_MNEMONIC } from "./context.ts";
import type { TestDialect } from "./db.ts";
import { poll } from "./poll.ts";
import { perFile } from "./perFile.ts";
import { openLiveDeployment, spawnServer, type ServerProcess } from "./spawnServer.ts";

export type ConcurrentPayments = {
  readonly dev: DevChain;
  /** A Ledger on the servers' database, for setting up and checking. */
  readonly ledger: Ledger;
  readonly projectId: string;
  readonly wallet: Address;
  readonly token: string;
  readonly tokenId: string;
  /** The servers' base URLs, in the order requests are spread over them. */
  readonly baseUrls: string[];
  /**
   * `n` requests `POST /v1/pay` with `body` at once, spread over the servers in turn, the i-th with the token
   * `tokenOf(i)` (the fixture's by default): each answer's status and body, in order.
   */
  payAll<B>(n: number, body: object, tokenOf?: (i: number) => string): Promise<{ status: number; body: B }[]>;
  /** What the servers printed, for a failure's message. */
  output(): string;
};

export type ConcurrentPaymentsOptions = { fundMicros: bigint; token?: { permissions?: Permission[]; name?: string; controls?: object } };

export function useConcurrentPayments(dialect: TestDialect, processes: number, o: ConcurrentPaymentsOptions): ConcurrentPayments {
  return perFile(async () => ({ payments: await startConcurrentPayments(dialect, processes, o) }), ({ payments }) => payments.close()).payments;
}

async function startConcurrentPayments(dialect: TestDialect, processes: number, o: ConcurrentPaymentsOptions): Promise<ConcurrentPayments & { close(): Promise<void> }> {
  const dev = await startDevChain();
  let servers: ServerProcess[] = [];
  let deployment: Awaited<ReturnType<typeof openLiveDeployment>> | undefined;
  const close = async () => {
    await Promise.all(servers.map((s) => s.stop()));
    await dev.stop();
    await deployment?.close();
  };
  try {
    deployment = await openLiveDeployment(dev, dialect, "aw-conc-");
    const { ledger, env } = deployment;
    const project = await ledger.projects.create({ name: "hot", plan: "free" });
    const projectId = project.id;
    const wallet = createHdCustody(TEST_MNEMONIC).addressOf(project.wallet_index);
    await ledger.projects.setWalletAddress(project.id, wallet);
    const { token, id: tokenId } = await createToken({ ledger, clock: systemClock, newId }, { projectId, permissions: o.token?.permissions ?? ["read", "pay"], mode: "live", name: o.token?.name });
    if (o.token?.controls) await ledger.tokens.setSpendingControls("token", tokenId, controlsColumn(parseControlsInput(o.token.controls, new Uint8Array(32))));
    servers = await Promise.all(Array.from({ length: processes }, () => spawnServer(env)));
    await dev.mint(wallet, o.fundMicros);
    await poll("deposit credited", async () => ((await ledger.balances.get(projectId))!.available_micros === Number(o.fundMicros) ? true : undefined), 30_000);
    const payAll = <B>(n: number, body: object, tokenOf = (_i: number) => token) =>
      Promise.all(
        Array.from({ length: n }, async (_, i) => {
          const res = await fetch(`${servers[i % servers.length]!.baseUrl}/v1/pay`, {
            method: "POST",
            headers: { authorization: `Bearer ${tokenOf(i)}`, "content-type": "application/json" },
            body: JSON.stringify(body),
          });
          return { status: res.status, body: (await res.json()) as B };
        }),
      );
    const baseUrls = servers.map((s) => s.baseUrl);
    return { dev, ledger, projectId, wallet, token, tokenId, baseUrls, payAll, output: () => servers.map((s) => s.output()).join("\n"), close };
  } catch (err) {
    await close();
    throw err;
  }
}
