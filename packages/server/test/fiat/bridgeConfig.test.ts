/** Which off-ramp a deployment gets from its settings. */
import { describe, expect, test } from "vitest";
import { ConfigError, loadConfig } from "../../src/config.ts";

const live = {
  BASE_RPC_URL: "http://127.0.0.1:1",
  AGENTWALLET_MASTER_MNEMONIC: "legal winner thank year wave sausage worth useful legal winner thank yellow",
  RELAYER_PRIVATE_KEY: `0x${"11".repeat(32)}`,
  TREASURY_ADDRESS: "0x90F79bf6EB2c4f870365E785982E1f101E93b906",
};

describe("fiat provider settings", () => {
  test("default: the sandbox has its built-in off-ramp and needs no Bridge settings", () => {
    expect(loadConfig({}).fiat).toMatchObject({ provider: "sandbox", bridge: undefined });
  });
  test("behavior: FIAT_PROVIDER=bridge in the sandbox selects the stand-in", () => {
    expect(loadConfig({ FIAT_PROVIDER: "bridge" }).fiat.provider).toBe("bridge");
  });
  test("behavior: live without Bridge settings has no fiat provider (the rail answers 503)", () => {
    expect(loadConfig(live).fiat).toMatchObject({ provider: "none", bridge: undefined });
  });
  test("behavior: live with Bridge settings uses Bridge's production address by default", () => {
    const c = loadConfig({ ...live, BRIDGE_API_KEY: "sk-live-x", BRIDGE_CUSTOMER_ID: "cust1", BRIDGE_WEBHOOK_PUBLIC_KEY: "-----BEGIN PUBLIC KEY-----\\nAAA\\n-----END PUBLIC KEY-----" });
    expect(c.fiat.provider).toBe("bridge");
    expect(c.fiat.bridge).toMatchObject({ baseUrl: "https://api.bridge.xyz", customerId: "cust1", checkingOrSavings: "checking" });
    expect(c.fiat.bridge!.webhookPublicKey).toBe("-----BEGIN PUBLIC KEY-----\nAAA\n-----END PUBLIC KEY-----");
  });
  test("error: half the Bridge settings are refused, naming the missing one", () => {
    expect(() => loadConfig({ ...live, BRIDGE_API_KEY: "sk-live-x" })).toThrow(/BRIDGE_CUSTOMER_ID is missing/);
    expect(() => loadConfig({ ...live, BRIDGE_CUSTOMER_ID: "c" })).toThrow(ConfigError);
  });
  test("error: Bridge credentials in the sandbox, or the sandbox off-ramp live, are refused", () => {
    expect(() => loadConfig({ BRIDGE_API_KEY: "k", BRIDGE_CUSTOMER_ID: "c" })).toThrow(/live settings/);
    expect(() => loadConfig({ ...live, FIAT_PROVIDER: "sandbox" })).toThrow(/sandbox only/);
  });
});
