// A loaded configuration is frozen to its leaves: every process and every part of one holds the same object,
// so a change after load would reach some parts and not others. Start-up used to fill in webhook secrets,
// Bridge settings and the x402 allow-list after the context was frozen (the x402 rail saw the allow-list
// only because it held the same array); now an assignment anywhere throws, and the sandbox builds its own
// configuration whole before the server starts (sandbox/startSandbox.ts).
import { expect, test } from "vitest";
import { loadConfig } from "../src/config.ts";
import { sandboxConfig } from "../src/sandbox/startSandbox.ts";

const loaded = () => loadConfig({ AGENTWALLET_DATA_DIR: "/tmp/aw-config-unused" });

test("error: assigning to a nested field of a loaded configuration throws a TypeError", () => {
  const config = loaded();
  expect(() => {
    // @ts-expect-error -- the type refuses it too
    config.webhooks.depositSecret = "whsec_late";
  }).toThrow(TypeError);
  expect(() => {
    // @ts-expect-error -- the type refuses it too
    config.fiat.returnWatch.intervalMs = 1;
  }).toThrow(TypeError);
  expect(config.webhooks.depositSecret).toBeUndefined();
  expect(config.fiat.returnWatch.intervalMs).toBe(60_000);
});

test("error: pushing to a list of a loaded configuration throws a TypeError", () => {
  const config = loaded();
  // @ts-expect-error -- the type refuses it too
  expect(() => config.x402.allowedTargets.push("127.0.0.1:4021")).toThrow(TypeError);
  expect(config.x402.allowedTargets).toEqual([]);
});

test("error: a top-level field cannot be replaced either", () => {
  const config = loaded();
  expect(() => {
    // @ts-expect-error -- the type refuses it too
    config.port = 1;
  }).toThrow(TypeError);
});

const parts = {
  webhookSecrets: { deposit: "whsec_deposit", fiat: "whsec_fiat" },
  bridge: undefined,
  x402Targets: ["http://127.0.0.1:4021", "http://127.0.0.1:4022/"],
  x402HttpUnset: true,
};

test("behavior: the sandbox's configuration is a new frozen one, with its demo's targets and its secrets; the loaded one is untouched", () => {
  const config = loaded();
  const sandbox = sandboxConfig(config, parts);
  expect(sandbox.x402.allowedTargets).toEqual(["127.0.0.1:4021", "127.0.0.1:4022"]);
  expect(sandbox.x402.allowHttp).toBe(true);
  expect(sandbox.webhooks).toEqual({ depositSecret: "whsec_deposit", fiatSecret: "whsec_fiat" });
  expect(Object.isFrozen(sandbox.x402.allowedTargets) && Object.isFrozen(sandbox.webhooks) && Object.isFrozen(sandbox)).toBe(true);
  expect(config.x402.allowedTargets).toEqual([]);
  expect(config.x402.allowHttp).toBe(false);
});

test("behavior: secrets and X402_ALLOW_HTTP set in the environment win over the sandbox's own", () => {
  const config = loadConfig({ AGENTWALLET_DATA_DIR: "/tmp/aw-config-unused", DEPOSIT_WEBHOOK_SECRET: "whsec_mine", X402_ALLOW_HTTP: "0" });
  const sandbox = sandboxConfig(config, { ...parts, x402HttpUnset: false });
  expect(sandbox.webhooks).toEqual({ depositSecret: "whsec_mine", fiatSecret: "whsec_fiat" });
  expect(sandbox.x402.allowHttp).toBe(false);
});
