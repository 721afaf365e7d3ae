import { mkdtempSync, rmSync } from "node:fs";
import { createServer, type Server } from "node:net";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { startDevChain, type DevChain } from "@agentwallet/devchain";
import { english, generateMnemonic } from "viem/accounts";
import { afterAll, beforeAll, describe, expect, test } from "vitest";
import { createHdCustody } from "../src/chain/custody.ts";
import { dialects } from "./support/db.ts";
import { TEST_MNEMONIC, checksumBroken } from "./support/mnemonic.ts";
import { freePort, liveEnv, openLiveDeployment, spawnServer } from "./support/spawnServer.ts";

describe("agentwallet serve: a start-up that fails ends the process", () => {
  let dev: DevChain;
  let dir: string;
  let taken: Server;
  let port: number;
  beforeAll(async () => {
    dev = await startDevChain();
    dir = mkdtempSync(join(tmpdir(), "aw-serve-fail-"));
    port = await freePort();
    // Taken by a listener that hangs up at once (so the readiness probe gets no answer from it).
    taken = createServer((socket) => socket.destroy());
    await new Promise<void>((r) => taken.listen(port, "127.0.0.1", r));
  });
  afterAll(async () => {
    await new Promise((r) => taken?.close(r));
    await dev?.stop();
    rmSync(dir, { recursive: true, force: true });
  });

  test("error: the port is taken → the process says so and exits, instead of running without listening", async () => {
    // Before the fix the settlement thread and the loops kept the process alive after `listen` failed: it
    // printed the error and ran on, serving nothing, until something killed it.
    const start = spawnServer(liveEnv(dev, { dataDir: dir }), port, 60_000);
    await expect(start).rejects.toThrow(/exited during start-up[\s\S]*EADDRINUSE/);
  }, 90_000);
});

describe.each(dialects)("agentwallet serve on %s: a master mnemonic that is not the deployment's", (dialect) => {
  let dev: DevChain;
  beforeAll(async () => {
    dev = await startDevChain();
  });
  afterAll(async () => {
    await dev?.stop();
  });

  test("error: the words do not derive the recorded wallets → the process names what does not match and exits, never showing the words", async () => {
    const deployment = await openLiveDeployment(dev, dialect, "aw-serve-key-");
    try {
      // A project whose deposit address was derived from the deployment's own words, as GET /v1/stablecoin/address records it.
      const project = await deployment.ledger.projects.create({ name: "p", plan: "free" });
      const wallet = await deployment.ledger.projects.setWalletAddress(project.id, createHdCustody(TEST_MNEMONIC).addressOf(project.wallet_index));
      // Valid words of the wrong backup: before the check the server started and could sign for no existing wallet.
      const wrong = generateMnemonic(english, 128);
      const derived = createHdCustody(wrong).addressOf(project.wallet_index);
      const start = spawnServer({ ...deployment.env, AGENTWALLET_MASTER_MNEMONIC: wrong }, undefined, 60_000);
      // A server that starts anyway is stopped at once (then the assertions below say what went wrong).
      const err = (await start.then(async (started) => void (await started.stop()), (e: unknown) => e)) as Error | undefined;
      expect(err?.message).toMatch(/exited during start-up \(exit code [1-9]\d*\)/);
      expect(err!.message).toContain(`the master mnemonic read from AGENTWALLET_MASTER_MNEMONIC derives ${derived} for project ${project.id} (wallet index ${project.wallet_index}), whose wallet is ${wallet}: not this deployment's key`);
      expect(err!.message).toMatch(/restore the words this deployment was set up with/i);
      // Any two of the words in their order would leak part of the phrase; a single word may be plain English ("code").
      const words = wrong.split(" ");
      for (let i = 0; i + 1 < words.length; i++) expect(err!.message).not.toMatch(new RegExp(`\\b${words[i]}\\W+${words[i + 1]}\\b`));
      expect(err!.message).not.toContain(TEST_MNEMONIC);
      // The deployment's own words still start it.
      const right = await spawnServer(deployment.env, undefined, 90_000);
      await right.stop();
    } finally {
      await deployment.close();
    }
  }, 180_000);
  test("words that are not a BIP-39 phrase: refused while no wallet is recorded; once one derived from them is, they are the deployment's key", async () => {
    const deployment = await openLiveDeployment(dev, dialect, "aw-serve-bip39-");
    try {
      const typo = checksumBroken(generateMnemonic(english, 256).split(" ")).join(" ");
      const env = { ...deployment.env, AGENTWALLET_MASTER_MNEMONIC: typo };
      const err = (await spawnServer(env, undefined, 60_000).then(async (started) => void (await started.stop()), (e: unknown) => e)) as Error | undefined;
      expect(err?.message).toMatch(/exited during start-up \(exit code [1-9]\d*\)/);
      expect(err!.message).toContain("the master mnemonic read from AGENTWALLET_MASTER_MNEMONIC is not a BIP-39 phrase");
      expect(err!.message).toMatch(/check each word against the backup/);
      expect(err!.message).not.toContain(typo.split(" ").slice(0, 2).join(" "));
      // A deployment that has run on such words (recorded before the check existed) still starts, and says so.
      const project = await deployment.ledger.projects.create({ name: "p", plan: "free" });
      await deployment.ledger.projects.setWalletAddress(project.id, createHdCustody(typo).addressOf(project.wallet_index));
      const started = await spawnServer(env, undefined, 90_000);
      try {
        // Once, by the process that answers requests (its settlement thread opens the same dependencies).
        const warned = started.output().split("\n").filter((l) => l.includes("BIP-39"));
        expect(warned, started.output().slice(0, 3_000)).toHaveLength(1);
        expect(warned[0]).toMatch(/not a BIP-39 phrase: .*; they derive this deployment.s wallets, so they are its key/);
      } finally {
        await started.stop();
      }
    } finally {
      await deployment.close();
    }
  }, 180_000);
});
