import { mkdtempSync, rmSync } from "node:fs";
import { createServer, type Server } from "node:net";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { startDevChain, type DevChain } from "@agentwallet/devchain";
import { afterAll, beforeAll, describe, expect, test } from "vitest";
import { freePort, liveEnv, spawnServer } from "./support/spawnServer.ts";

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
